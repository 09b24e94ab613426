"""Spark 4.3 as the oracle for Tributary's session windows (issue #21).

Reads a directory of JSON-lines files (`ts` timestamp, `k` string, `v` long) as a file stream,
one file per micro-batch, groups by `session_window("ts", GAP)` and `k` with count/sum/min/max in
complete mode (every session held, no watermark), and prints the last batch's rows, which is every
session of the whole stream, as JSON lines sorted by key and start:
`{"k": ..., "start": <epoch s>, "end": <epoch s>, "n": ..., "total": ..., "lo": ..., "hi": ...}`.

    python3 session_oracle.py INPUT_DIR [GAP]

Complete mode, not append: Spark 4.3.0's append mode (`withWatermark`, `local[2]`) emitted three
of the four sessions one no-data batch evicted (a different one missing each run), so its append
output is not an oracle; its complete mode holds every session.
"""

import json
import sys
from datetime import timezone

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

inp = sys.argv[1]
gap = sys.argv[2] if len(sys.argv) > 2 else "10 seconds"

spark = (
    SparkSession.builder.master("local[2]")
    .config("spark.sql.session.timeZone", "UTC")
    .config("spark.sql.shuffle.partitions", "2")
    .config("spark.ui.enabled", "false")
    .getOrCreate()
)
spark.sparkContext.setLogLevel("ERROR")
stream = (
    spark.readStream.schema("ts TIMESTAMP, k STRING, v BIGINT")
    .option("maxFilesPerTrigger", 1)
    .json(inp)
)
agg = stream.groupBy(F.session_window("ts", gap), "k").agg(
    F.count("*").alias("n"),
    F.sum("v").alias("total"),
    F.min("v").alias("lo"),
    F.max("v").alias("hi"),
)
last = {}


def keep(df, batch_id):
    last["rows"] = df.collect()


q = agg.writeStream.outputMode("complete").foreachBatch(keep).trigger(availableNow=True).start()
q.awaitTermination()


def epoch(t):
    return int(t.replace(tzinfo=timezone.utc).timestamp())


out = sorted(
    (
        {
            "k": r["k"],
            "start": epoch(r["session_window"]["start"]),
            "end": epoch(r["session_window"]["end"]),
            "n": r["n"],
            "total": r["total"],
            "lo": r["lo"],
            "hi": r["hi"],
        }
        for r in last.get("rows", [])
    ),
    key=lambda d: (d["k"] or "", d["start"]),
)
for d in out:
    print(json.dumps(d, sort_keys=True))
