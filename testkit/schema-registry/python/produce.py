"""Encodes records with confluent-kafka's Schema Registry serializers (an independent encoder of the
Confluent wire format) against a registry URL, and prints one JSON line per record:
{"kind": "avro"|"other"|"event", "hex": "<framed bytes>"}.

Usage: produce.py <registry url> <user> <password>
"""
import json
import sys

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, timestamp_pb2  # noqa: F401
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

AVRO = json.dumps({
    "type": "record", "name": "Order", "namespace": "com.example",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "name", "type": "string"},
        {"name": "price", "type": {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "note", "type": ["null", "string"], "default": None},
    ],
})


def proto_classes():
    F = descriptor_pb2.FieldDescriptorProto
    fdp = descriptor_pb2.FileDescriptorProto(
        name="events.proto", package="com.example", syntax="proto3",
        dependency=["google/protobuf/timestamp.proto"])
    other = fdp.message_type.add(name="Other")
    other.field.add(name="z", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    event = fdp.message_type.add(name="Event")
    event.field.add(name="name", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    event.field.add(name="n", number=2, type=F.TYPE_UINT64, label=F.LABEL_OPTIONAL)
    event.field.add(name="at", number=3, type=F.TYPE_MESSAGE, label=F.LABEL_OPTIONAL,
                    type_name=".google.protobuf.Timestamp")
    event.field.add(name="tags", number=4, type=F.TYPE_STRING, label=F.LABEL_REPEATED)
    pool = descriptor_pool.Default()
    pool.Add(fdp)
    get = message_factory.GetMessageClass
    return get(pool.FindMessageTypeByName("com.example.Other")), get(pool.FindMessageTypeByName("com.example.Event"))


def main():
    url, user, password = sys.argv[1:4]
    client = SchemaRegistryClient({"url": url, "basic.auth.user.info": f"{user}:{password}"})
    from datetime import datetime, timezone
    from decimal import Decimal

    avro = AvroSerializer(client, AVRO)
    ctx = SerializationContext("orders", MessageField.VALUE)
    for i in range(3):
        rec = {"id": i, "name": f"n{i}", "price": Decimal(f"{i}.25"), "tags": ["a", f"t{i}"],
               "ts": datetime(2024, 1, 1, 0, 0, i, tzinfo=timezone.utc), "note": None if i == 0 else f"x{i}"}
        print(json.dumps({"kind": "avro", "hex": avro(rec, ctx).hex()}))

    Other, Event = proto_classes()
    ev_ser = ProtobufSerializer(Event, client, {"use.deprecated.format": False})
    other_ser = ProtobufSerializer(Other, client, {"use.deprecated.format": False})
    e = Event(name="e1", n=2**64 - 1, tags=["p", "q"])
    e.at.seconds = 1_700_000_000
    e.at.nanos = 5_000
    print(json.dumps({"kind": "event", "hex": ev_ser(e, SerializationContext("events", MessageField.VALUE)).hex()}))
    o = Other(z="zz")
    print(json.dumps({"kind": "other", "hex": other_ser(o, SerializationContext("others", MessageField.VALUE)).hex()}))


if __name__ == "__main__":
    main()
