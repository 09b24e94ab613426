#!/usr/bin/env bash
# Creates (once) a Python venv with the independent implementations the tests compare against:
# confluent-kafka's Schema Registry serializers (the decode tests' encoder of the Confluent wire
# format) and the `deltalake` package with pyarrow (the Delta sink tests' reader of Delta tables).
#
#   scripts/services/registry-python.sh start   # writes $TRIBUTARY_SERVICES_DIR/registry-python.env
#   scripts/services/registry-python.sh stop    # nothing to stop (the venv is a cached tool)
#   eval "$(bash scripts/services/registry-python.sh)"   # prints the export lines
#
# Exports TRIBUTARY_REGISTRY_PYTHON (the venv's python) and TRIBUTARY_DELTA_PYTHON (the same
# python, set only once `import deltalake, pyarrow` works there).
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
SVC_NAME=registry-python
VENV="${TRIBUTARY_REGISTRY_VENV:-${TRIBUTARY_TOOLS_DIR:-$HOME/.cache/tributary}/registry-venv}"
REGISTRY_PACKAGES=("confluent-kafka[avro,protobuf,schemaregistry]==2.12.*")
DELTA_PACKAGES=("deltalake==1.*" "pyarrow>=18")
ensure_venv() {
  if ! [ -x "$VENV/bin/python" ] \
    || ! "$VENV/bin/python" -c "import confluent_kafka.schema_registry.avro, confluent_kafka.schema_registry.protobuf" 2>/dev/null; then
    pip_venv "$VENV" "${REGISTRY_PACKAGES[@]}"
  fi
  if ! "$VENV/bin/python" -c "import deltalake, pyarrow" 2>/dev/null; then
    # The Delta reader is optional for the decode tests: a failed install leaves the variable unset.
    pip_venv "$VENV" "${DELTA_PACKAGES[@]}" || log "deltalake/pyarrow not installed"
  fi
}
exports() {
  echo "export TRIBUTARY_REGISTRY_PYTHON=$VENV/bin/python"
  if "$VENV/bin/python" -c "import deltalake, pyarrow" 2>/dev/null; then
    echo "export TRIBUTARY_DELTA_PYTHON=$VENV/bin/python"
  fi
}
case "${1:-print}" in
  start)
    ensure_venv
    dir="${TRIBUTARY_SERVICES_DIR:-target/services}"
    mkdir -p "$dir"
    exports > "$dir/registry-python.env"
    ;;
  stop) ;;
  print)
    ensure_venv
    exports
    ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
