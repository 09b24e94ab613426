#!/usr/bin/env bash
# Runs the quickstart pipeline (examples/quickstart.toml): the JSON files in examples/data are
# ingested exactly once, printed as tables and written to examples/out/parquet. No services needed.
# Run it again: nothing new is read. Add a file to examples/data and run again: only it is read.
#
# The binary is built with only what this pipeline uses (the files source, the console and
# Parquet sinks): no librdkafka C build, no decoders. `cargo build -p tributary-runtime` without
# feature flags builds every connector.
set -euo pipefail
cd "$(dirname "$0")/.."
features=(--no-default-features --features files,sinks)
cargo build -p tributary-runtime --bin tributary "${features[@]}"
bin=target/debug/tributary
"$bin" run examples/quickstart.toml "$@"
echo
"$bin" state examples/out/checkpoint
