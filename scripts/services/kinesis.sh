#!/usr/bin/env bash
# Starts (or stops) the real Kinesis peers the tributary-kinesis integration tests use.
#
#   scripts/services/kinesis.sh start   # install what is missing, start (idempotent), write kinesis.env
#   scripts/services/kinesis.sh stop    # stop everything `start` started (pid files)
#
# What runs, all bound to 127.0.0.1 (ports overridable with TRIBUTARY_KINESIS_PORT_BASE, default 14567):
#   base+0  kinesis-mock (npm kinesis-local@0.6.2), HTTPS + HTTP/2   TRIBUTARY_KINESIS_ENDPOINT
#   base+1  kinesis-mock plain HTTP (h2c for SubscribeToShard)       TRIBUTARY_KINESIS_PLAIN_ENDPOINT
#   base+2  kinesalite 3.3.3 under libfaketime (retention trimming)  TRIBUTARY_KINESALITE_ENDPOINT
# and writes ${TRIBUTARY_SERVICES_DIR:-target/services}/kinesis.env with `export VAR=value` lines.
#
# Facts this relies on (verified on these machines, see shared TESTING.md):
# - kinesis-mock always binds 0.0.0.0 and has no host option: a preloaded script (`node -r`)
#   makes net.Server.prototype.listen bind 127.0.0.1. Its bundled certificate has no SAN, so a
#   test CA signs one for localhost/127.0.0.1 (server.json = {"server":{"key":PEM,"cert":PEM}}).
# - kinesis-mock implements no retention trimming; kinesalite does, and under Debian's
#   faketime (FAKETIME_TIMESTAMP_FILE, FAKETIME_NO_CACHE=1) writing `+25h` to the time file
#   expires the data of a 24 h stream, `+400` expires iterators. kinesalite has no EFO and no
#   stream-ARN calls.
# - kinesis-mock counts every shard of a live stream against SHARD_LIMIT (default 50), which a
#   few runs of the suite exceed: start raises it to KINESIS_MOCK_SHARD_LIMIT (default 1000).
set -euo pipefail

cmd=${1:-start}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
TOOLS=${TRIBUTARY_TOOLS_DIR:-$HOME/.cache/tributary}/kinesis
SERVICES=${TRIBUTARY_SERVICES_DIR:-$ROOT/target/services}
mkdir -p "$SERVICES"
SERVICES=$(cd "$SERVICES" && pwd)
DIR=$SERVICES/kinesis
ENV_FILE=$SERVICES/kinesis.env
BASE=${TRIBUTARY_KINESIS_PORT_BASE:-14567}
P_TLS=$BASE
P_PLAIN=$((BASE + 1))
P_LITE=$((BASE + 2))
MOCK_VERSION=0.6.2
LITE_VERSION=3.3.3

log() { echo "kinesis.sh: $*" >&2; }

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

running() { # every pid file alive and the env file written
  [ -f "$ENV_FILE" ] || return 1
  for name in kinesis-mock kinesalite; do
    [ -f "$DIR/$name.pid" ] || return 1
    kill -0 "$(cat "$DIR/$name.pid")" 2>/dev/null || return 1
  done
  (exec 3<>"/dev/tcp/127.0.0.1/$P_TLS") 2>/dev/null || return 1
  (exec 3<>"/dev/tcp/127.0.0.1/$P_LITE") 2>/dev/null || return 1
}

libfaketime() {
  ls /usr/lib/*/faketime/libfaketime.so.1 2>/dev/null | head -1
}

install_packages() {
  local missing=()
  command -v node >/dev/null || missing+=(nodejs)
  command -v npm >/dev/null || missing+=(npm)
  command -v openssl >/dev/null || missing+=(openssl)
  [ -n "$(libfaketime)" ] || missing+=(faketime)
  if [ ${#missing[@]} -gt 0 ]; then
    log "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
}

install_npm() {
  local marker=$TOOLS/.installed-$MOCK_VERSION-$LITE_VERSION
  if [ -f "$marker" ] && [ -f "$TOOLS/node_modules/kinesis-local/main.js" ] \
    && [ -f "$TOOLS/node_modules/kinesalite/cli.js" ]; then
    return 0
  fi
  log "installing kinesis-local@$MOCK_VERSION and kinesalite@$LITE_VERSION into $TOOLS"
  mkdir -p "$TOOLS"
  (cd "$TOOLS" && { [ -f package.json ] || echo '{"name":"tributary-kinesis-tools","private":true}' >package.json; } \
    && npm install --no-audit --no-fund --loglevel=error \
      "kinesis-local@$MOCK_VERSION" "kinesalite@$LITE_VERSION" >/dev/null)
  touch "$marker"
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

make_certs() {
  local t=$DIR/tls
  mkdir -p "$t"
  (
    cd "$t"
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 3650 \
      -subj "/CN=Tributary Kinesis Test CA" 2>/dev/null
    openssl req -x509 -newkey rsa:2048 -nodes -keyout wrong-ca.key -out wrong-ca.pem -days 3650 \
      -subj "/CN=Some Other CA" 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr \
      -subj "/CN=localhost" 2>/dev/null
    printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >server.ext
    openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem \
      -days 3650 -extfile server.ext 2>/dev/null
    node -e 'const fs=require("fs");fs.writeFileSync("server.json",JSON.stringify({server:{key:fs.readFileSync("server.key","utf8"),cert:fs.readFileSync("server.pem","utf8")}}))'
    chmod 600 ./*.key server.json
  )
}

start_mock() {
  cat >"$DIR/loopback.js" <<'EOF'
// kinesis-mock binds 0.0.0.0 with no host option: bind every listening socket to 127.0.0.1.
const net = require("net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === "number") {
    const port = args[0];
    const rest = args.slice(1).filter((a) => typeof a === "function" || typeof a === "number");
    return listen.call(this, port, "127.0.0.1", ...rest.filter((a) => typeof a === "function"));
  }
  if (args[0] && typeof args[0] === "object" && !Array.isArray(args[0]) && "port" in args[0]) {
    args[0] = Object.assign({}, args[0], { host: "127.0.0.1" });
  }
  return listen.apply(this, args);
};
EOF
  (
    cd "$DIR"
    KINESIS_MOCK_PLAIN_PORT=$P_PLAIN KINESIS_MOCK_TLS_PORT=$P_TLS \
      KINESIS_MOCK_CERT_PATH=$DIR/tls/server.json LOG_LEVEL=WARN \
      SHARD_LIMIT="${KINESIS_MOCK_SHARD_LIMIT:-1000}" \
      nohup node -r "$DIR/loopback.js" "$TOOLS/node_modules/kinesis-local/main.js" \
      >"$DIR/kinesis-mock.log" 2>&1 &
    echo $! >"$DIR/kinesis-mock.pid"
  )
  wait_port "$P_TLS" 60 kinesis-mock
  wait_port "$P_PLAIN" 20 "kinesis-mock plain"
}

start_kinesalite() {
  echo "+0" >"$DIR/faketime"
  mkdir -p "$DIR/kinesalite-data"
  (
    cd "$DIR"
    LD_PRELOAD=$(libfaketime) FAKETIME_TIMESTAMP_FILE=$DIR/faketime FAKETIME_NO_CACHE=1 \
      nohup node "$TOOLS/node_modules/kinesalite/cli.js" --port "$P_LITE" \
      --createStreamMs 0 --deleteStreamMs 0 --updateStreamMs 0 --shardLimit 100 \
      >"$DIR/kinesalite.log" 2>&1 &
    echo $! >"$DIR/kinesalite.pid"
  )
  wait_port "$P_LITE" 30 kinesalite
}

start_all() {
  if running; then
    log "already running; environment in $ENV_FILE"
    return 0
  fi
  install_packages
  install_npm
  stop_all
  rm -rf "$DIR"
  mkdir -p "$DIR"
  make_certs
  start_mock
  start_kinesalite
  local t=$DIR/tls
  cat >"$ENV_FILE" <<EOF
export TRIBUTARY_KINESIS_ENDPOINT=https://localhost:$P_TLS
export TRIBUTARY_KINESIS_PLAIN_ENDPOINT=http://127.0.0.1:$P_PLAIN
export TRIBUTARY_KINESIS_CA=$t/ca.pem
export TRIBUTARY_KINESIS_WRONG_CA=$t/wrong-ca.pem
export TRIBUTARY_KINESIS_REGION=us-east-1
export TRIBUTARY_KINESALITE_ENDPOINT=http://127.0.0.1:$P_LITE
export TRIBUTARY_KINESALITE_FAKETIME_FILE=$DIR/faketime
EOF
  log "ready; environment in $ENV_FILE"
}

case "$cmd" in
  start) start_all ;;
  stop) stop_all; rm -f "$ENV_FILE"; log "stopped" ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
