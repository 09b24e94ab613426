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
#   makes net.Server.prototype.listen bind 127.0.0.1, and makes its clock (performance.timeOrigin
#   + performance.now(), blind to a stepped system clock) follow Date.now(). Its bundled
#   certificate has no SAN, so a test CA signs one for localhost/127.0.0.1
#   (server.json = {"server":{"key":PEM,"cert":PEM}}).
# - kinesis-mock implements no retention trimming; kinesalite does, and under Debian's
#   faketime (FAKETIME_TIMESTAMP_FILE, FAKETIME_NO_CACHE=1) writing `+25h` to the time file
#   expires the data of a 24 h stream, `+400` expires iterators. kinesalite has no EFO and no
#   stream-ARN calls.
# - kinesis-mock counts every shard of a live stream against SHARD_LIMIT (default 50), which a
#   few runs of the suite exceed: start raises it to KINESIS_MOCK_SHARD_LIMIT (default 1000).
set -euo pipefail

cmd=${1:-start}
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
svc_init kinesis
TOOLS=$TOOLS/kinesis
BASE=${TRIBUTARY_KINESIS_PORT_BASE:-14567}
P_TLS=$BASE
P_PLAIN=$((BASE + 1))
P_LITE=$((BASE + 2))
MOCK_VERSION=0.6.2
LITE_VERSION=3.3.3

running() { # every pid file alive and the env file written
  [ -f "$ENV_FILE" ] || return 1
  pid_alive kinesis-mock && pid_alive kinesalite && port_open "$P_TLS" && port_open "$P_LITE"
}

libfaketime() {
  ls /usr/lib/*/faketime/libfaketime.so.1 2>/dev/null | head -1
}

install_packages() {
  need_cmd node nodejs
  need_cmd npm npm
  need_cmd openssl openssl
  need_lib '/usr/lib/*/faketime/libfaketime.so.1' faketime
  install_missing
}

install_npm() {
  local marker=$TOOLS/.installed-$MOCK_VERSION-$LITE_VERSION
  if [ -f "$marker" ] && [ -f "$TOOLS/node_modules/kinesis-local/main.js" ] \
    && [ -f "$TOOLS/node_modules/kinesalite/cli.js" ]; then
    return 0
  fi
  log "installing kinesis-local@$MOCK_VERSION and kinesalite@$LITE_VERSION into $TOOLS"
  npm_into "$TOOLS" "kinesis-local@$MOCK_VERSION" "kinesalite@$LITE_VERSION"
  touch "$marker"
}

make_certs() {
  local t=$DIR/tls
  make_test_ca "$t" "Tributary Kinesis Test CA"
  (
    cd "$t"
    node -e 'const fs=require("fs");fs.writeFileSync("server.json",JSON.stringify({server:{key:fs.readFileSync("server.key","utf8"),cert:fs.readFileSync("server.pem","utf8")}}))'
    chmod 600 ./*.key server.json
  )
}

start_mock() {
  cat >"$DIR/preload.js" <<'EOF'
// Preloaded into kinesis-mock (node -r). 1. It binds 0.0.0.0 with no host option: bind every
// listening socket to 127.0.0.1.
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
// 2. kinesis-mock's clock (cats-effect on Node) is performance.timeOrigin + performance.now(): the
// wall time at its start plus a monotonic clock, which does not follow the system clock when
// that is stepped (a VM resumed, NTP). In CI it fell 21.6 s behind, so AT_TIMESTAMP positions
// taken from this host's clock were "in the future" and records written later were stamped
// before an availableNow cut-off. Its time origin is read on every call: make it follow
// Date.now(), which keeps performance.now() monotonic for timers.
const perf = globalThis.performance;
const monotonic = perf.now.bind(perf);
Object.defineProperty(perf, "timeOrigin", { configurable: true, get: () => Date.now() - monotonic() });
EOF
  (
    cd "$DIR"
    spawn kinesis-mock env KINESIS_MOCK_PLAIN_PORT="$P_PLAIN" KINESIS_MOCK_TLS_PORT="$P_TLS" \
      KINESIS_MOCK_CERT_PATH="$DIR/tls/server.json" LOG_LEVEL=WARN \
      SHARD_LIMIT="${KINESIS_MOCK_SHARD_LIMIT:-1000}" \
      node -r "$DIR/preload.js" "$TOOLS/node_modules/kinesis-local/main.js"
  )
  wait_port "$P_TLS" 60 kinesis-mock
  wait_port "$P_PLAIN" 20 "kinesis-mock plain"
}

start_kinesalite() {
  echo "+0" >"$DIR/faketime"
  mkdir -p "$DIR/kinesalite-data"
  (
    cd "$DIR"
    spawn kinesalite env LD_PRELOAD="$(libfaketime)" FAKETIME_TIMESTAMP_FILE="$DIR/faketime" FAKETIME_NO_CACHE=1 \
      node "$TOOLS/node_modules/kinesalite/cli.js" --port "$P_LITE" \
      --createStreamMs 0 --deleteStreamMs 0 --updateStreamMs 0 --shardLimit 100
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
  write_env <<EOF
export TRIBUTARY_KINESIS_ENDPOINT=https://localhost:$P_TLS
export TRIBUTARY_KINESIS_PLAIN_ENDPOINT=http://127.0.0.1:$P_PLAIN
export TRIBUTARY_KINESIS_CA=$t/ca.pem
export TRIBUTARY_KINESIS_WRONG_CA=$t/wrong-ca.pem
export TRIBUTARY_KINESIS_REGION=us-east-1
export TRIBUTARY_KINESALITE_ENDPOINT=http://127.0.0.1:$P_LITE
export TRIBUTARY_KINESALITE_FAKETIME_FILE=$DIR/faketime
EOF
}

svc_main "$cmd" start_all
