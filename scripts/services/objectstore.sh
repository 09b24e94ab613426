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
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
svc_init objectstore
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

install_moto() {
  if [ -x "$MOTO_VENV/bin/moto_server" ]; then return 0; fi
  log "installing moto[server]==$MOTO_VERSION into $MOTO_VENV"
  pip_venv "$MOTO_VENV" "moto[server]==$MOTO_VERSION"
}

install_azurite() {
  if [ -x "$AZURITE_DIR/node_modules/.bin/azurite" ]; then return 0; fi
  log "installing azurite@$AZURITE_VERSION into $AZURITE_DIR"
  npm_into "$AZURITE_DIR" "azurite@$AZURITE_VERSION"
}

running() { # name port
  pid_alive "$1" && port_open "$2"
}

start_moto() {
  if running moto "$P_MOTO"; then return 0; fi
  spawn moto "$MOTO_VENV/bin/moto_server" -H 127.0.0.1 -p "$P_MOTO"
  wait_port "$P_MOTO" 60 "moto"
}

start_azurite() {
  if running azurite "$P_BLOB"; then return 0; fi
  # In memory (no --location: Azurite refuses both); the working directory takes its debug files.
  mkdir -p "$DIR/azurite"
  cd "$DIR/azurite"
  spawn azurite "$AZURITE_DIR/node_modules/.bin/azurite" --silent --inMemoryPersistence --skipApiVersionCheck \
    --blobHost 127.0.0.1 --blobPort "$P_BLOB" \
    --queueHost 127.0.0.1 --queuePort "$P_QUEUE" \
    --tableHost 127.0.0.1 --tablePort "$P_TABLE"
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
  write_env <<EOF
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
}

svc_main "$cmd" start_all
