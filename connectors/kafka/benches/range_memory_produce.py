#!/usr/bin/env python3
"""Produces the records of range_memory.sh: N JSON records of about 1 KiB into a new topic.

usage: range_memory_produce.py BOOTSTRAP TOPIC RECORDS PARTITIONS
Needs confluent-kafka (pip install confluent-kafka).
"""
import sys

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

bootstrap, topic, records, partitions = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
admin = AdminClient({"bootstrap.servers": bootstrap})
for f in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
    f.result()
p = Producer({
    "bootstrap.servers": bootstrap,
    "linger.ms": 50,
    "batch.size": 1_000_000,
    "queue.buffering.max.kbytes": 262144,
    "acks": "1",
})
pad = "x" * 960
for i in range(records):
    value = '{"id": %d, "name": "n%d", "pad": "%s"}' % (i, i, pad)
    while True:
        try:
            p.produce(topic, value=value.encode(), partition=i % partitions)
            break
        except BufferError:
            p.poll(0.1)
    if i % 10000 == 0:
        p.poll(0)
left = p.flush(300)
if left:
    sys.exit(f"{left} records not delivered")
print(f"produced {records} records into {topic}")
