"""Writes the event stream of `runtime/tests/data/spark_dedup/in` (issue #21): 10 JSON-lines
files, one per micro-batch, of `{"id", "ts", "v"}` events. Each file holds 40 new events in its
30 s of event time, exact duplicates of recent events (same id, ts and v), events re-sent with
a new time (same id, ts of the current file, v + 1000) from 1 to 4 files back, and late new
events 100-200 s behind the file's time. Deterministic (seeded).

    python3 dedup_data.py OUT_DIR
"""

import json
import os
import random
import sys
from datetime import datetime, timedelta, timezone

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = random.Random(21)
base = datetime(2026, 1, 1, tzinfo=timezone.utc)
events = []  # (id, second, v) of every new event, by file
n = 0
for f in range(10):
    lo = f * 30
    rows = []
    fresh = []
    for _ in range(40):
        s = lo + rng.randrange(30)
        fresh.append((f"e{n}", s, n))
        n += 1
    rows += fresh
    recent = [e for e in events[-80:]] + fresh
    for _ in range(5):
        rows.append(rng.choice(recent))
    for _ in range(3):
        back = events[-160:-1] if events else fresh
        i, _, v = rng.choice(back)
        rows.append((i, lo + rng.randrange(30), v + 1000))
    for _ in range(2):
        s = max(0, lo - 100 - rng.randrange(100))
        rows.append((f"e{n}", s, n))
        n += 1
    events += fresh
    rng.shuffle(rows)
    with open(os.path.join(out, f"d{f:02}.json"), "w") as fh:
        for i, s, v in rows:
            ts = (base + timedelta(seconds=s)).strftime("%Y-%m-%dT%H:%M:%SZ")
            fh.write(json.dumps({"id": i, "ts": ts, "v": v}) + "\n")
