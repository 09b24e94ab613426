#!/usr/bin/env bash
# Creates (once) a Python venv with confluent-kafka's Schema Registry serializers, used by the
# decode tests as an independent encoder of the Confluent wire format.
# Prints `export TRIBUTARY_REGISTRY_PYTHON=<venv python>`; use as:
#   eval "$(bash scripts/services/registry-python.sh)"
set -euo pipefail
VENV="${TRIBUTARY_REGISTRY_VENV:-$HOME/.cache/tributary/registry-venv}"
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c "import confluent_kafka.schema_registry.avro, confluent_kafka.schema_registry.protobuf" 2>/dev/null; then
  python3 -m venv "$VENV" >&2
  "$VENV/bin/pip" install --quiet --disable-pip-version-check \
    "confluent-kafka[avro,protobuf,schemaregistry]==2.12.*" >&2
fi
echo "export TRIBUTARY_REGISTRY_PYTHON=$VENV/bin/python"
