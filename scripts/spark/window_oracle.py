"""Spark 4.3 as the oracle for Tributary's windowed aggregation (issue #21).

Reads a directory of JSON-lines files (`ts` timestamp, `k` string, `v` long) as a file stream,
one file per micro-batch in name order (`maxFilesPerTrigger=1`, files written with increasing
modification times), applies `withWatermark("ts", DELAY)`, groups by
`window("ts", SIZE)` and `k` with count/sum/min/max/avg in append mode, writes Parquet and prints
the result rows as JSON lines sorted by window start and key:
`{"start": <epoch s>, "k": ..., "n": ..., "total": ..., "lo": ..., "hi": ..., "mean": ...}`.

    python3 window_oracle.py INPUT_DIR WORK_DIR [SIZE] [DELAY] [SLIDE]

SLIDE makes the window sliding (`window("ts", SIZE, SLIDE)`); the checked-in expectations in
`runtime/tests/data/spark_windows/` are this script's output with the defaults and with
SLIDE="20 seconds".
"""

import json
import sys
import time

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

inp, work = sys.argv[1], sys.argv[2]
size = sys.argv[3] if len(sys.argv) > 3 else "1 minute"
delay = sys.argv[4] if len(sys.argv) > 4 else "30 seconds"
slide = sys.argv[5] if len(sys.argv) > 5 else None

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
    spark.readStream.schema("ts TIMESTAMP, k STRING, v BIGINT")
    .option("maxFilesPerTrigger", 1)
    .json(inp)
)
agg = (
    stream.withWatermark("ts", delay)
    .groupBy(F.window("ts", size, slide) if slide else F.window("ts", size), "k")
    .agg(
        F.count("*").alias("n"),
        F.sum("v").alias("total"),
        F.min("v").alias("lo"),
        F.max("v").alias("hi"),
        F.avg("v").alias("mean"),
    )
)
q = (
    agg.writeStream.outputMode("append")
    .format("parquet")
    .option("path", f"{work}/out")
    .option("checkpointLocation", f"{work}/ck")
    .trigger(availableNow=True)
    .start()
)
q.awaitTermination()
elapsed = time.time() - t0
rows = spark.read.parquet(f"{work}/out").collect()
out = sorted(
    (
        {
            "start": int(r["window"]["start"].replace(tzinfo=__import__("datetime").timezone.utc).timestamp()),
            "k": r["k"],
            "n": r["n"],
            "total": r["total"],
            "lo": r["lo"],
            "hi": r["hi"],
            "mean": r["mean"],
        }
        for r in rows
    ),
    key=lambda d: (d["start"], d["k"] or ""),
)
for d in out:
    print(json.dumps(d, sort_keys=True))
print(f"spark seconds {elapsed:.2f}", file=sys.stderr)
