#!/usr/bin/env bash
# Runs the quickstart pipeline (examples/quickstart.toml): the JSON files in examples/data are
# ingested exactly once, printed as tables and written to examples/out/parquet. No services needed.
# Run it again: nothing new is read. Add a file to examples/data and run again: only it is read.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v cmake >/dev/null || ! { [ -e /usr/include/x86_64-linux-gnu/curl/curl.h ] || [ -e /usr/include/curl/curl.h ]; }; then
  echo "installing cmake and libcurl4-openssl-dev (needed to build librdkafka)" >&2
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq cmake libcurl4-openssl-dev >/dev/null
fi
cargo run --release -p tributary-runtime --bin tributary -- run examples/quickstart.toml "$@"
echo
cargo run --release -q -p tributary-runtime --bin tributary -- files-state examples/out/checkpoint
