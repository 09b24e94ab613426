"""Encodes records with confluent-kafka's Schema Registry serializers (an independent encoder of the
Confluent wire format) against a registry URL, and prints one JSON line per record:
{"kind": "avro"|"avro_ref"|"other"|"event", "hex": "<framed bytes>"}.

"avro_ref" records are written with a schema that references a type registered under another
subject (Confluent schema references), resolved by the serializer through the registry.

Usage: produce.py <registry url> <user> <password>
"""
import json
import sys

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, timestamp_pb2  # noqa: F401
from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient
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

ADDRESS = json.dumps({
    "type": "record", "name": "Address", "namespace": "com.shared",
    "fields": [{"name": "city", "type": "string"}, {"name": "zip", "type": ["null", "string"], "default": None}],
})

SHIPMENT = json.dumps({
    "type": "record", "name": "Shipment", "namespace": "com.example",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "to", "type": "com.shared.Address"},
        {"name": "back", "type": ["null", "com.shared.Address"], "default": None},
    ],
})


def avro_with_references(client):
    """Registers Address under its own subject and Shipment referencing it, then serializes
    with the registered (latest) Shipment schema."""
    client.register_schema("com.shared.Address", Schema(ADDRESS, "AVRO"))
    refs = [SchemaReference("com.shared.Address", "com.shared.Address", 1)]
    client.register_schema("shipments-value", Schema(SHIPMENT, "AVRO", refs))
    ser = AvroSerializer(client, Schema(SHIPMENT, "AVRO", refs),
                         conf={"auto.register.schemas": False, "use.latest.version": True})
    ctx = SerializationContext("shipments", MessageField.VALUE)
    recs = [
        {"id": 1, "to": {"city": "Oslo", "zip": "0150"}, "back": None},
        {"id": 2, "to": {"city": "Bergen", "zip": None}, "back": {"city": "Oslo", "zip": None}},
    ]
    for rec in recs:
        print(json.dumps({"kind": "avro_ref", "hex": ser(rec, ctx).hex()}))


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

    avro_with_references(client)

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
