"""Spark 4.3 as the oracle for Tributary's deduplication (issue #21).

Reads a directory of JSON-lines files (`id` string, `ts` timestamp, `v` long) as a file
stream, one file per micro-batch in name order (`maxFilesPerTrigger=1`, modification times in
name order), deduplicates it one of four ways, writes Parquet in append mode, and prints every
row written as a JSON line sorted by id, ts and v, then one line of totals over the query's
progress events (`{"batches": ..., "droppedByWatermark": ..., "droppedDuplicates": ...}`).

    python3 dedup_oracle.py INPUT_DIR WORK_DIR QUERY

QUERY is one of
  forever   dropDuplicates(["id"]), no watermark
  eventtime withWatermark("ts", "30 seconds").dropDuplicates(["id", "ts"])
  within    withWatermark("ts", "30 seconds").dropDuplicatesWithinWatermark(["id"])
  count     within, then groupBy(window("ts", "1 minute")).agg(count, sum(v)) (append mode);
            rows are {"start": <epoch s>, "n": ..., "total": ...}

The checked-in expectations in `runtime/tests/data/spark_dedup/` are this script's output.
"""

import datetime
import json
import sys
import time

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

inp, work, query = sys.argv[1], sys.argv[2], sys.argv[3]

spark = (
    SparkSession.builder.master("local[2]")
    .config("spark.sql.session.timeZone", "UTC")
    .config("spark.sql.shuffle.partitions", "2")
    .config("spark.ui.enabled", "false")
    .getOrCreate()
)
spark.sparkContext.setLogLevel("ERROR")
t0 = time.time()
stream = (
    spark.readStream.schema("id STRING, ts TIMESTAMP, v BIGINT")
    .option("maxFilesPerTrigger", 1)
    .json(inp)
)
if query == "forever":
    out = stream.dropDuplicates(["id"])
elif query == "eventtime":
    out = stream.withWatermark("ts", "30 seconds").dropDuplicates(["id", "ts"])
elif query in ("within", "count"):
    out = stream.withWatermark("ts", "30 seconds").dropDuplicatesWithinWatermark(["id"])
    if query == "count":
        out = out.groupBy(F.window("ts", "1 minute")).agg(
            F.count("*").alias("n"), F.sum("v").alias("total")
        )
else:
    raise SystemExit(f"unknown query {query}")
q = (
    out.writeStream.outputMode("append")
    .format("parquet")
    .option("path", f"{work}/out")
    .option("checkpointLocation", f"{work}/ck")
    .trigger(availableNow=True)
    .start()
)
q.awaitTermination()
elapsed = time.time() - t0
rows = spark.read.parquet(f"{work}/out").collect()
utc = datetime.timezone.utc
if query == "count":
    lines = sorted(
        (
            {
                "start": int(r["window"]["start"].replace(tzinfo=utc).timestamp()),
                "n": r["n"],
                "total": r["total"],
            }
            for r in rows
        ),
        key=lambda d: d["start"],
    )
else:
    lines = sorted(
        (
            {
                "id": r["id"],
                "ts": int(r["ts"].replace(tzinfo=utc).timestamp()),
                "v": r["v"],
            }
            for r in rows
        ),
        key=lambda d: (d["id"], d["ts"], d["v"]),
    )
for d in lines:
    print(json.dumps(d, sort_keys=True))
progress = q.recentProgress
dedup = [
    op
    for p in progress
    for op in p.stateOperators
    if op.operatorName.startswith("dedupe")
]
print(
    json.dumps(
        {
            "batches": len(progress),
            "droppedByWatermark": sum(op.numRowsDroppedByWatermark for op in dedup),
            "droppedDuplicates": sum(
                op.customMetrics.get("numDroppedDuplicateRows", 0) for op in dedup
            ),
        },
        sort_keys=True,
    )
)
print(f"spark seconds {elapsed:.2f}", file=sys.stderr)
