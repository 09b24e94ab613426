#!/usr/bin/env bash
# Creates (once) a Python venv with confluent-kafka's Schema Registry serializers, used by the
# decode tests as an independent encoder of the Confluent wire format.
#
#   scripts/services/registry-python.sh start   # writes $TRIBUTARY_SERVICES_DIR/registry-python.env
#   scripts/services/registry-python.sh stop    # nothing to stop (the venv is a cached tool)
#   eval "$(bash scripts/services/registry-python.sh)"   # prints the export line
set -euo pipefail
VENV="${TRIBUTARY_REGISTRY_VENV:-${TRIBUTARY_TOOLS_DIR:-$HOME/.cache/tributary}/registry-venv}"
ensure_venv() {
  if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c "import confluent_kafka.schema_registry.avro, confluent_kafka.schema_registry.protobuf" 2>/dev/null; then
    python3 -m venv "$VENV" >&2
    "$VENV/bin/pip" install --quiet --disable-pip-version-check \
      "confluent-kafka[avro,protobuf,schemaregistry]==2.12.*" >&2
  fi
}
case "${1:-print}" in
  start)
    ensure_venv
    dir="${TRIBUTARY_SERVICES_DIR:-target/services}"
    mkdir -p "$dir"
    echo "export TRIBUTARY_REGISTRY_PYTHON=$VENV/bin/python" > "$dir/registry-python.env"
    ;;
  stop) ;;
  print)
    ensure_venv
    echo "export TRIBUTARY_REGISTRY_PYTHON=$VENV/bin/python"
    ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
