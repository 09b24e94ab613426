#!/usr/bin/env bash
# Files -> Parquet, Tributary against Spark 4.3's file stream on the same data, side by side in
# one run: wall time and peak RSS of each (of the whole process tree: Spark's is the JVM's
# and its Python driver's), for each size in SIZES (rows; default 2,000,000 and 20,000,000).
#
#   runtime/benches/files_vs_spark.sh
#   SIZES=2000000 runtime/benches/files_vs_spark.sh
#
# The data: JSON lines of orders (~120 B a row, the quickstart's shape), 50,000 rows a file
# (2 M rows: 40 files, 238 MB), generated once into WORK (default
# ${TRIBUTARY_TOOLS_DIR:-~/.cache/tributary}/files-vs-spark) and reused.
# Both read it as a stream with the same settings: an explicit schema, at most 10 files a
# micro-batch (`cloudFiles.maxFilesPerTrigger` / `maxFilesPerTrigger`), the available-now
# trigger, Parquet out (Snappy, each engine's default file layout). Each run starts from an
# empty checkpoint and output; the JVM's start is in Spark's time, as a user running
# spark-submit sees it. After the timing, both outputs are read back with pyarrow and checked:
# the same row count and every order id once (a run that wrote less cannot win).
#
# Needs: cargo (builds `tributary` in release with the files source and sinks only, unless
# TRIBUTARY_BIN names one), Java 17,
# python3. Spark comes from PyPI (pyspark 4.3.0 and pyarrow, in a venv kept with the other
# tools). Spark runs `local[2]`, the machine's two cores; Tributary uses what it finds.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TOOLS=${TRIBUTARY_TOOLS_DIR:-$HOME/.cache/tributary}
WORK=${WORK:-$TOOLS/files-vs-spark}
SIZES=${SIZES:-2000000 20000000}
PER_FILE=50000
VENV=$TOOLS/spark-venv
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}

source "$ROOT/scripts/services/lib.sh"
[ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c 'import pyspark, pyarrow' 2>/dev/null ||
  pip_venv "$VENV" pyspark==4.3.0 pyarrow
PY=$VENV/bin/python
command -v java >/dev/null || { echo "files_vs_spark: java (17) is needed by Spark" >&2; exit 1; }

# TRIBUTARY_BIN: a release binary built already (the build below is skipped).
BIN=${TRIBUTARY_BIN:-}
if [ -z "$BIN" ]; then
  (cd "$ROOT" && cargo build --release -p tributary-runtime --bin tributary \
    --no-default-features --features files,sinks >&2)
  BIN=$TARGET/release/tributary
fi
SCHEMA_SQL="order_id BIGINT, store STRING, item STRING, quantity INT, price DOUBLE, ordered_at TIMESTAMP"

# Generates SIZE rows into $WORK/data-SIZE once (a .done marker says it is complete).
generate() {
  local rows=$1 dir=$WORK/data-$1
  [ -e "$dir/.done" ] && return
  rm -rf "$dir" && mkdir -p "$dir"
  "$PY" - "$dir" "$rows" "$PER_FILE" <<'PY'
import sys
out, rows, per = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
stores = ["porto", "braga", "lisboa", "faro", "coimbra"]
items = ["latte", "espresso", "cappuccino", "mocha", "tea", "scone"]
for f in range(0, rows, per):
    with open(f"{out}/orders-{f // per:05d}.json", "w") as fh:
        lines = []
        for i in range(f, min(f + per, rows)):
            lines.append(
                f'{{"order_id": {i}, "store": "{stores[i % 5]}", "item": "{items[i % 6]}", '
                f'"quantity": {1 + i % 9}, "price": {(i % 700) / 100 + 1:.2f}, '
                f'"ordered_at": "2026-11-{1 + i % 28:02d}T{i % 24:02d}:{i % 60:02d}:00Z"}}'
            )
        fh.write("\n".join(lines) + "\n")
PY
  touch "$dir/.done"
}

# Runs a command; prints "seconds peak_rss_kib". The peak is the process tree's: every 50 ms
# each process of the tree (pyspark's Python and the JVM it starts, which /usr/bin/time would
# not see: the JVM is not its waited-for child) is read from /proc, and the peaks (VmHWM) of
# all processes seen are summed, an upper bound that is exact for a single process.
timed() {
  local t
  t=$(mktemp)
  python3 - "$t" "$@" <<'PY' >/dev/null 2>"$t.err" || {
import os, subprocess, sys, time
out, cmd = sys.argv[1], sys.argv[2:]
start = time.monotonic()
child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
peaks = {}
def tree(root):
    kids = {}
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                kids.setdefault(ppid, []).append(int(pid))
            except (OSError, IndexError, ValueError):
                pass
    found, todo = [], [root]
    while todo:
        p = todo.pop()
        found.append(p)
        todo.extend(kids.get(p, []))
    return found
while child.poll() is None:
    for pid in tree(child.pid):
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        peaks[pid] = max(peaks.get(pid, 0), int(line.split()[1]))
        except OSError:
            pass
    time.sleep(0.05)
if child.returncode != 0:
    sys.exit(f"exit status {child.returncode}")
with open(out, "w") as f:
    f.write(f"{time.monotonic() - start:.2f} {sum(peaks.values())}\n")
PY
    echo "files_vs_spark: failed: $*" >&2; tail -20 "$t.err" >&2; exit 1; }
  cat "$t"
  rm -f "$t" "$t.err"
}

# Reads a Parquet output with pyarrow (Spark's `_spark_metadata` excluded): "rows distinct_ids".
count() {
  "$PY" - "$1" <<'PY'
import sys
import pyarrow.compute as pc
import pyarrow.dataset as ds
t = ds.dataset(sys.argv[1], format="parquet", exclude_invalid_files=True).to_table(columns=["order_id"])
print(t.num_rows, len(pc.unique(t["order_id"])))
PY
}

printf '%-12s %-10s %10s %12s %10s %12s %9s %9s\n' rows files tributary_s tributary_MiB spark_s spark_MiB time_x rss_x
for rows in $SIZES; do
  generate "$rows"
  data=$WORK/data-$rows
  run=$WORK/run-$rows
  rm -rf "$run" && mkdir -p "$run"
  cat >"$run/pipeline.toml" <<TOML
name = "files-vs-spark"
checkpoint = "$run/tributary-checkpoint"
[source]
connector = "files"
options = { path = "$data", "cloudFiles.format" = "json", schema = "$SCHEMA_SQL", "cloudFiles.maxFilesPerTrigger" = 10 }
[[sink]]
connector = "parquet"
options = { path = "$run/tributary-out" }
[trigger]
kind = "availableNow"
TOML
  cat >"$run/spark.py" <<PY
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master("local[2]").appName("files-vs-spark")
         .config("spark.ui.enabled", "false").getOrCreate())
q = (spark.readStream.schema("$SCHEMA_SQL").option("maxFilesPerTrigger", 10).json("$data")
     .writeStream.format("parquet").option("path", "$run/spark-out")
     .option("checkpointLocation", "$run/spark-checkpoint").trigger(availableNow=True).start())
q.awaitTermination()
spark.stop()
PY
  r=$(timed "$BIN" run "$run/pipeline.toml")
  read -r ts trss <<<"$r"
  r=$(timed "$PY" "$run/spark.py")
  read -r ss srss <<<"$r"
  r=$(count "$run/tributary-out")
  read -r tn tdistinct <<<"$r"
  r=$(count "$run/spark-out")
  read -r sn sdistinct <<<"$r"
  [ "$tn" = "$rows" ] && [ "$tdistinct" = "$rows" ] ||
    { echo "files_vs_spark: Tributary wrote $tn rows ($tdistinct distinct ids), not $rows" >&2; exit 1; }
  [ "$sn" = "$rows" ] && [ "$sdistinct" = "$rows" ] ||
    { echo "files_vs_spark: Spark wrote $sn rows ($sdistinct distinct ids), not $rows" >&2; exit 1; }
  files=$(find "$data" -name '*.json' | wc -l)
  awk -v r="$rows" -v f="$files" -v ts="$ts" -v tr="$trss" -v ss="$ss" -v sr="$srss" 'BEGIN {
    printf "%-12s %-10s %10.2f %12.0f %10.2f %12.0f %8.2fx %8.2fx\n", r, f, ts, tr / 1024, ss, sr / 1024, ss / ts, sr / tr }'
done
echo "checked: both outputs hold every order id once; time_x and rss_x are Spark / Tributary"
