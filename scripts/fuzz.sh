#!/usr/bin/env bash
# Fuzzes the readers Tributary runs on untrusted bytes (fuzz/, cargo-fuzz on libFuzzer):
#   decode_json, decode_avro, decode_protobuf   the payload decoders (PERMISSIVE never fails a
#                                              batch, no row is lost or added; FAILFAST may refuse)
#   pipeline_file                               the pipeline-file parser
#   checkpoint_logs                             checkpoint verification and recovery
#   plugin_file, plugin_manifest                a plugin file before it is mapped; its manifest
#
#   scripts/fuzz.sh                  # every target, 10,000,000 executions each
#   RUNS=100000 scripts/fuzz.sh decode_json pipeline_file
#   MAX_TOTAL_TIME=600 scripts/fuzz.sh decode_avro   # stops at RUNS or after 600 s, if sooner
#   DEBUG_ASSERTIONS=1 scripts/fuzz.sh decode_json  # overflow checks and debug assertions on
#
# Needs the nightly toolchain (rustup's; cargo-fuzz instruments with -Zsanitizer flags) and
# installs cargo-fuzz when it is missing. Built without AddressSanitizer (`-s none`): the code
# is safe Rust but for the manifest reader's C pointers, and ASan would cost about half the
# executions. Corpora live in fuzz/corpus/<target> (kept in the repository: what the fuzzer
# learned is the next run's start); a crash is written to fuzz/artifacts/<target>/ and fails
# this script. Prints one line per target: executions (and per second), corpus size, time.
#
# The targets are built once, then each binary is run directly (the arguments `cargo fuzz run`
# would pass): `cargo fuzz run` rebuilds before every target, so a source edited during a long
# run would change the code between targets and its build time would count as fuzzing time.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
RUNS=${RUNS:-10000000}
MAX_TOTAL_TIME=${MAX_TOTAL_TIME:-0}
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(decode_json decode_avro decode_protobuf pipeline_file checkpoint_logs plugin_file plugin_manifest)
fi
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
triple=$(rustc +nightly -vV | sed -n 's/^host: //p')
# With DEBUG_ASSERTIONS=1 (`-a`) integer overflow panics instead of wrapping unseen.
assertions=()
[ "${DEBUG_ASSERTIONS:-0}" = 1 ] && assertions=(-a)
cargo +nightly fuzz build -s none --release "${assertions[@]}" --target "$triple"
# The bytes of a directory's files in KiB (what a commit holds), from their metadata.
kib() {
  { find "$1" -type f -printf '%s\n' 2>/dev/null ||
    find "$1" -type f -exec wc -c {} + | awk '$2 != "total" { print $1 }'; } |
    awk '{ s += $1 } END { print int(s / 1024) }'
}
status=0
for t in "${targets[@]}"; do
  bin="target/$triple/release/$t"
  [ -x "$bin" ] || { echo "$t: no such fuzz target ($bin)"; status=1; continue; }
  mkdir -p "corpus/$t" "artifacts/$t"
  log=$(mktemp)
  start=$(date +%s%N)
  if "$bin" -artifact_prefix="artifacts/$t/" -runs="$RUNS" -max_total_time="$MAX_TOTAL_TIME" \
      -max_len=65536 -rss_limit_mb=4096 -timeout=30 -print_final_stats=1 "corpus/$t" >"$log" 2>&1; then
    result=ok
  else
    result=CRASH; status=1
  fi
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')
  rate='?'
  [ "$execs" = '?' ] || rate=$(( execs * 1000 / (ms > 0 ? ms : 1) ))
  echo "$t${assertions:+ (debug assertions)}: $result, $execs executions ($rate/s), $(find "corpus/$t" -type f | wc -l) corpus files" \
    "($(kib "corpus/$t") KiB), $(( ms / 1000 )) s"
  [ "$result" = ok ] || tail -40 "$log"
  rm -f "$log"
done
exit $status
