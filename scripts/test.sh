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
  # lib.sh is the scripts' shared library, not a service.
  [ "$(basename "$svc")" = lib.sh ] && continue
  log "starting $(basename "$svc" .sh)"
  services+=("$svc")
  bash "$svc" start
done
for env in "$TRIBUTARY_SERVICES_DIR"/*.env; do
  [ -e "$env" ] || continue
  # shellcheck disable=SC1090
  source "$env"
done

# Skipped tests and conformance cases append {"test","reason"} lines here (tributary-skip-log);
# the summary below counts and names them, so a skip is never only in captured output.
export TRIBUTARY_SKIP_LOG="$TRIBUTARY_SERVICES_DIR/skipped.jsonl"
: > "$TRIBUTARY_SKIP_LOG"
test_log="$TRIBUTARY_SERVICES_DIR/cargo-test.log"

log "cargo test --workspace --no-fail-fast $*"
set +e
cargo test --workspace --no-fail-fast "$@" 2>&1 | tee "$test_log"
status=${PIPESTATUS[0]}
# The example plugin (a third-party style crate outside the workspace) has unit tests of its
# own; it builds into target/plugins, where the runtime's plugin tests already built it.
if [ $# -eq 0 ]; then
  log "cargo test --manifest-path examples/plugin-generator/Cargo.toml"
  cargo test --manifest-path examples/plugin-generator/Cargo.toml --target-dir target/plugins 2>&1 | tee -a "$test_log"
  plugin_status=${PIPESTATUS[0]}
  [ "$status" -ne 0 ] || status=$plugin_status
fi
set -e

# The summary: cargo's counts over every test binary and doc-test run, minus the tests that
# returned early because they could not run (they counted as passed), plus the skips.
python3 - "$test_log" "$TRIBUTARY_SKIP_LOG" "$status" <<'PY'
import json, re, sys
log, skip_log, status = sys.argv[1], sys.argv[2], int(sys.argv[3])
passed = failed = ignored = 0
for line in open(log, errors="replace"):
    m = re.match(r"test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored", line)
    if m:
        passed += int(m.group(1)); failed += int(m.group(2)); ignored += int(m.group(3))
skips = []
for line in open(skip_log, errors="replace"):
    line = line.strip()
    if line:
        try:
            skips.append(json.loads(line))
        except ValueError:
            skips.append({"test": "?", "reason": line})
early = sum(1 for s in skips if s.get("kind", "test") == "test")
print()
print("==== test summary ====")
if skips:
    print(f"skipped ({len(skips)}):")
    for s in skips:
        print(f"  - {s.get('test')}: {s.get('reason')}")
if ignored:
    print(f"ignored by #[ignore]: {ignored} (benchmark-sized or manual tests)")
if status != 0 and failed == 0:
    print(f"cargo test exited with status {status} (a build error or a crashed test binary)")
    failed = max(failed, 1)
print(f"summary: {passed - early} passed, {failed} failed, {len(skips)} skipped")
PY
exit "$status"
