#!/usr/bin/env bash
# Peak memory of one large Kafka micro-batch: RECORDS (default 1 000 000) JSON records of about
# 1 KiB, read in ONE batch (maxOffsetsPerTrigger = RECORDS), decoded with a JSON schema and
# written to Parquet by `tributary run`, under /usr/bin/time -v ("Maximum resident set size").
#
#   source target/services/kafka.env   # scripts/services/kafka.sh start
#   connectors/kafka/benches/range_memory.sh [TRIBUTARY_BINARY ...]
#
# Each binary given (default: target/debug/tributary) runs the same pipeline on the same topic
# with its own checkpoint and output, so two builds compare on identical data. The topic is
# produced once per invocation by range_memory_produce.py (pip install confluent-kafka).
# Environment: RECORDS, PARTITIONS (default 4), WORK (default a new temp dir).
set -euo pipefail
: "${TRIBUTARY_KAFKA_BOOTSTRAP:?source the kafka.env of scripts/services/kafka.sh first}"
HERE=$(cd "$(dirname "$0")" && pwd)
RECORDS=${RECORDS:-1000000}
PARTITIONS=${PARTITIONS:-4}
WORK=${WORK:-$(mktemp -d)}
TOPIC=${TOPIC:-range-memory-$$-$RANDOM}
BINARIES=("$@")
[ ${#BINARIES[@]} -gt 0 ] || BINARIES=("${CARGO_TARGET_DIR:-target}/debug/tributary")

if [ -z "${SKIP_PRODUCE:-}" ]; then
  python3 "$HERE/range_memory_produce.py" "$TRIBUTARY_KAFKA_BOOTSTRAP" "$TOPIC" "$RECORDS" "$PARTITIONS"
fi
i=0
for bin in "${BINARIES[@]}"; do
  i=$((i + 1))
  dir="$WORK/run$i"
  mkdir -p "$dir"
  cat > "$dir/pipeline.toml" <<TOML
name = "range-memory"
checkpoint = "$dir/checkpoint"
[source]
connector = "kafka"
options = { "kafka.bootstrap.servers" = "$TRIBUTARY_KAFKA_BOOTSTRAP", subscribe = "$TOPIC", startingOffsets = "earliest", maxOffsetsPerTrigger = "$RECORDS" }
decode = { json_schema = '{"type":"object","properties":{"id":{"type":"integer"},"name":{"type":"string"},"pad":{"type":"string"}}}' }
[[sink]]
connector = "parquet"
options = { path = "$dir/out" }
[trigger]
kind = "availableNow"
TOML
  /usr/bin/time -v "$bin" run "$dir/pipeline.toml" > "$dir/stdout" 2> "$dir/stderr"
  rss=$(grep "Maximum resident set size" "$dir/stderr" | awk '{print $NF}')
  wall=$(grep "Elapsed (wall clock)" "$dir/stderr" | awk '{print $NF}')
  summary=$(cat "$dir/stdout" "$dir/stderr" | grep -m1 "rows in .* batches" || true)
  echo "$bin: peak RSS $((rss / 1024)) MiB, wall $wall, $summary"
done
