#!/usr/bin/env bash
# Runs the whole Tributary test suite on a fresh machine: installs the system packages the
# build needs, starts every server the tests talk to (scripts/services/*.sh start), runs
# `cargo test --workspace`, and stops the servers again, whatever happened.
#
#   scripts/test.sh                 # everything
#   scripts/test.sh -p tributary-runtime   # extra arguments go to cargo test
#
# Built tools (the tansu broker, ...) are cached in ${TRIBUTARY_TOOLS_DIR:-~/.cache/tributary}
# and reused. Service endpoints are written to target/services/*.env and exported here.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

export TRIBUTARY_TOOLS_DIR=${TRIBUTARY_TOOLS_DIR:-$HOME/.cache/tributary}
export TRIBUTARY_SERVICES_DIR=${TRIBUTARY_SERVICES_DIR:-$root/target/services}
mkdir -p "$TRIBUTARY_TOOLS_DIR" "$TRIBUTARY_SERVICES_DIR"

log() { printf '[test.sh %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# System packages: cmake and the curl headers build librdkafka (rdkafka's cmake-build with ssl);
# stunnel4 and openssl give the Kafka tests TLS and mutual TLS.
need=()
command -v cmake >/dev/null || need+=(cmake)
command -v stunnel4 >/dev/null || command -v stunnel >/dev/null || need+=(stunnel4)
command -v openssl >/dev/null || need+=(openssl)
[ -e /usr/include/x86_64-linux-gnu/curl/curl.h ] || [ -e /usr/include/curl/curl.h ] || need+=(libcurl4-openssl-dev)
command -v cc >/dev/null || need+=(build-essential)
if [ ${#need[@]} -gt 0 ]; then
  log "installing ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${need[@]}" >/dev/null
fi

services=()
stop_services() {
  for ((i=${#services[@]}-1; i>=0; i--)); do
    bash "${services[$i]}" stop || true
  done
}
trap stop_services EXIT

for svc in scripts/services/*.sh; do
  [ -e "$svc" ] || continue
  log "starting $(basename "$svc" .sh)"
  services+=("$svc")
  bash "$svc" start
done
for env in "$TRIBUTARY_SERVICES_DIR"/*.env; do
  [ -e "$env" ] || continue
  # shellcheck disable=SC1090
  source "$env"
done

log "cargo test --workspace $*"
cargo test --workspace "$@"
