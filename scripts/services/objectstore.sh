#!/usr/bin/env bash
# Starts (or stops) the object-store emulators the tributary-files integration tests use.
#
#   scripts/services/objectstore.sh start   # install what is missing, start, write objectstore.env
#   scripts/services/objectstore.sh stop    # stop everything `start` started (pid files)
#
# What runs, all bound to 127.0.0.1 (ports overridable with TRIBUTARY_OBJECTSTORE_PORT_BASE,
# default 19400):
#   base+0  moto's server mode (PyPI moto[server] 5.2.5): S3 and SQS on one port   TRIBUTARY_S3_ENDPOINT
#   base+1  Azurite (npm azurite 3.37.0) Blob service, in memory                   TRIBUTARY_AZURITE_BLOB_ENDPOINT
#   base+2  Azurite Queue service                                                   TRIBUTARY_AZURITE_QUEUE_ENDPOINT
#   base+3  Azurite Table service (started with the others, unused)
# TRIBUTARY_MOTO_PYTHON is the venv's Python, with boto3 (a moto dependency): tests use it to set
# up SQS queues and bucket notifications as an independent client.
# and writes ${TRIBUTARY_SERVICES_DIR:-target/services}/objectstore.env with `export VAR=value`
# lines, including the Azurite development account, its key and a connection string.
#
# Facts this relies on (shared TESTING.md): moto accepts any access key with an explicit
# endpoint, wants valid bucket names (`landing-bucket`, not `b`), and delivers S3 event
# notifications to SQS (an `s3:TestEvent` first, then one record per upload, keys URL-encoded).
# Azurite serves path-style URLs (`http://127.0.0.1:P/devstoreaccount1/container/blob`) with the
# well-known development account; `--skipApiVersionCheck` lets newer client API versions in.
set -euo pipefail

cmd=${1:-start}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
TOOLS=${TRIBUTARY_TOOLS_DIR:-$HOME/.cache/tributary}
SERVICES=${TRIBUTARY_SERVICES_DIR:-$ROOT/target/services}
mkdir -p "$SERVICES"
SERVICES=$(cd "$SERVICES" && pwd)
DIR=$SERVICES/objectstore
ENV_FILE=$SERVICES/objectstore.env
BASE=${TRIBUTARY_OBJECTSTORE_PORT_BASE:-19400}
P_MOTO=$BASE
P_BLOB=$((BASE + 1))
P_QUEUE=$((BASE + 2))
P_TABLE=$((BASE + 3))
MOTO_VERSION=5.2.5
AZURITE_VERSION=3.37.0
MOTO_VENV=$TOOLS/moto/$MOTO_VERSION
AZURITE_DIR=$TOOLS/azurite/$AZURITE_VERSION
# The Azurite development account (public, documented by Microsoft; not a secret).
AZ_ACCOUNT=devstoreaccount1
AZ_KEY='Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=='

log() { echo "objectstore.sh: $*" >&2; }

stop_all() {
  [ -d "$DIR" ] || return 0
  for pidfile in "$DIR"/*.pid; do
    [ -e "$pidfile" ] || continue
    pid=$(cat "$pidfile" 2>/dev/null || true)
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$pidfile"
  done
}

install_moto() {
  if [ -x "$MOTO_VENV/bin/moto_server" ]; then return 0; fi
  log "installing moto[server]==$MOTO_VERSION into $MOTO_VENV"
  mkdir -p "$(dirname "$MOTO_VENV")"
  python3 -m venv "$MOTO_VENV"
  "$MOTO_VENV/bin/pip" install -q --disable-pip-version-check "moto[server]==$MOTO_VERSION"
}

install_azurite() {
  if [ -x "$AZURITE_DIR/node_modules/.bin/azurite" ]; then return 0; fi
  log "installing azurite@$AZURITE_VERSION into $AZURITE_DIR"
  mkdir -p "$AZURITE_DIR"
  (cd "$AZURITE_DIR" && npm install --no-audit --no-fund --silent "azurite@$AZURITE_VERSION" >/dev/null)
}

wait_port() { # port seconds name
  local port=$1 secs=$2 name=$3
  for _ in $(seq 1 $((secs * 10))); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  log "$name did not listen on 127.0.0.1:$port within ${secs}s"
  for f in "$DIR"/*.log; do echo "--- $f" >&2; tail -20 "$f" >&2 || true; done
  return 1
}

running() { # name port
  local pidfile=$DIR/$1.pid
  [ -e "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null &&
    (exec 3<>"/dev/tcp/127.0.0.1/$2") 2>/dev/null
}

start_moto() {
  if running moto "$P_MOTO"; then return 0; fi
  nohup "$MOTO_VENV/bin/moto_server" -H 127.0.0.1 -p "$P_MOTO" >"$DIR/moto.log" 2>&1 &
  echo $! >"$DIR/moto.pid"
  wait_port "$P_MOTO" 60 "moto"
}

start_azurite() {
  if running azurite "$P_BLOB"; then return 0; fi
  # In memory (no --location: Azurite refuses both); the working directory takes its debug files.
  mkdir -p "$DIR/azurite"
  cd "$DIR/azurite"
  nohup "$AZURITE_DIR/node_modules/.bin/azurite" --silent --inMemoryPersistence --skipApiVersionCheck \
    --blobHost 127.0.0.1 --blobPort "$P_BLOB" \
    --queueHost 127.0.0.1 --queuePort "$P_QUEUE" \
    --tableHost 127.0.0.1 --tablePort "$P_TABLE" >"$DIR/azurite.log" 2>&1 &
  echo $! >"$DIR/azurite.pid"
  wait_port "$P_BLOB" 60 "azurite blob"
  cd - >/dev/null
  wait_port "$P_QUEUE" 30 "azurite queue"
}

start_all() {
  mkdir -p "$DIR"
  install_moto
  install_azurite
  start_moto
  start_azurite
  local blob=http://127.0.0.1:$P_BLOB/$AZ_ACCOUNT
  local queue=http://127.0.0.1:$P_QUEUE/$AZ_ACCOUNT
  cat >"$ENV_FILE" <<EOF
export TRIBUTARY_S3_ENDPOINT=http://127.0.0.1:$P_MOTO
export TRIBUTARY_SQS_ENDPOINT=http://127.0.0.1:$P_MOTO
export TRIBUTARY_S3_ACCESS_KEY=testing
export TRIBUTARY_S3_SECRET_KEY=testing
export TRIBUTARY_S3_REGION=us-east-1
export TRIBUTARY_MOTO_PYTHON=$MOTO_VENV/bin/python
export TRIBUTARY_AZURITE_BLOB_ENDPOINT=$blob
export TRIBUTARY_AZURITE_QUEUE_ENDPOINT=$queue
export TRIBUTARY_AZURITE_ACCOUNT=$AZ_ACCOUNT
export TRIBUTARY_AZURITE_KEY='$AZ_KEY'
export TRIBUTARY_AZURITE_CONNECTION_STRING='DefaultEndpointsProtocol=http;AccountName=$AZ_ACCOUNT;AccountKey=$AZ_KEY;BlobEndpoint=$blob;QueueEndpoint=$queue;'
EOF
  log "ready; environment in $ENV_FILE"
}

case "$cmd" in
  start) start_all ;;
  stop) stop_all; rm -f "$ENV_FILE"; log "stopped" ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
