#!/usr/bin/env bash
# Starts (or stops) the real Kafka peers the tributary-kafka integration tests use.
#
#   scripts/services/kafka.sh start   # install what is missing, start, write kafka.env
#   scripts/services/kafka.sh stop    # stop everything `start` started (pid files)
#
# What runs, all bound to 127.0.0.1 (ports overridable with TRIBUTARY_KAFKA_PORT_BASE, default 19092):
#   base+0  plain      tansu on sqlite (the faithful engine)              TRIBUTARY_KAFKA_BOOTSTRAP
#   base+1  scram      tansu on sqlite with --authentication, SCRAM users  TRIBUTARY_KAFKA_SCRAM_BOOTSTRAP
#   base+2  tls        stunnel (server cert from a test CA) -> tansu       TRIBUTARY_KAFKA_TLS_BOOTSTRAP
#   base+3  mtls       stunnel requiring a client cert -> tansu            TRIBUTARY_KAFKA_MTLS_BOOTSTRAP
#   base+4  scratch    tansu on sqlite for topic deletion tests only       TRIBUTARY_KAFKA_SCRATCH_BOOTSTRAP
#   base+102/103       the tansu instances behind the two stunnels (each advertises its stunnel port)
# and writes ${TRIBUTARY_SERVICES_DIR:-target/services}/kafka.env with `export VAR=value` lines.
#
# tansu 0.6.0 facts this relies on (verified on these machines, see shared TESTING.md):
# - the memory engine answers ListOffsets(latest) wrongly after a multi-record batch, so every
#   instance here uses sqlite (`sqlite://data/tansu.db?maintenance_interval=1s`, path relative to
#   the working directory; an absolute path fails). maintenance_interval makes retention run:
#   a topic with cleanup.policy=delete and a small retention.ms loses its old records (the tests'
#   way to move the earliest offset past a checkpoint).
# - no DeleteRecords (it panics the broker), no CreatePartitions, no native TLS, no PLAIN SASL.
# - DeleteTopics on sqlite deletes EVERY topic of the cluster (topic_delete_by.sql matches on the
#   cluster only), so tests that delete a topic get a broker of their own (scratch).
# - ListOffsets by timestamp after the last record answers offset 0 instead of -1.
# - a consumer below the earliest offset is not told OFFSET_OUT_OF_RANGE; it gets the next record.
# - SCRAM users are created against a broker started without --authentication, which is then
#   restarted with --authentication on the same database.
# - a consumer-group join takes about half of session.timeout.ms: tests use
#   session.timeout.ms=6000 and heartbeat.interval.ms=500.
set -euo pipefail

cmd=${1:-start}
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
svc_init kafka
TANSU=$TOOLS/tansu/bin/tansu
BASE=${TRIBUTARY_KAFKA_PORT_BASE:-19092}
P_PLAIN=$BASE
P_SCRAM=$((BASE + 1))
P_TLS=$((BASE + 2))
P_MTLS=$((BASE + 3))
P_SCRATCH=$((BASE + 4))
P_TLS_INNER=$((BASE + 102))
P_MTLS_INNER=$((BASE + 103))
SCRAM256_USER=tributary256
SCRAM256_PASSWORD=scram-256-secret
SCRAM512_USER=tributary512
SCRAM512_PASSWORD=scram-512-secret
# The conformance suite's secrets case resolves every {{secrets/conformance/...}} reference to
# this value (tributary-conformance's marker), so the SCRAM user the Kafka fixture logs in as has
# it for a password: the source reads only if it resolved the reference.
CONFORMANCE_USER=conformance
CONFORMANCE_PASSWORD=c0nf0rmance-s3cret-V4lue
P12_PASSWORD=changeit
# Java key stores (keytool): store password, and a different password for the key in the JKS
# key store, as Spark users configure them (kafka.ssl.keystore.password / kafka.ssl.key.password).
JKS_PASSWORD=jks-store-secret
JKS_KEY_PASSWORD=jks-key-secret

install_packages() {
  need_cmd cmake cmake
  need_cmd "stunnel4 stunnel" stunnel4
  need_cmd openssl openssl
  need_deb libcurl4-openssl-dev
  need_deb libssl-dev
  # keytool writes the JKS and PKCS12 stores the Spark-option tests read (Debian 12: Java 17).
  need_cmd keytool openjdk-17-jre-headless
  install_missing
}

install_tansu() {
  if [ -x "$TANSU" ]; then return 0; fi
  log "building tansu 0.6.0 into $TOOLS/tansu (about 16 minutes, once)"
  mkdir -p "$TOOLS"
  cargo install tansu --version 0.6.0 --locked --features dynostore,libsql --root "$TOOLS/tansu"
}

start_tansu() { # name listen_port advertised_port [extra args...]
  local name=$1 port=$2 adv=$3
  shift 3
  mkdir -p "$DIR/$name/data"
  (
    cd "$DIR/$name"
    spawn "$name" env -u LISTENER_URL -u ADVERTISED_LISTENER_URL -u STORAGE_ENGINE -u CLUSTER_ID \
      -u OTEL_EXPORTER_OTLP_ENDPOINT -u SCHEMA_REGISTRY -u DATA_LAKE \
      "$TANSU" broker \
      --listener-url "tcp://127.0.0.1:$port" \
      --advertised-listener-url "tcp://127.0.0.1:$adv" \
      --storage-engine 'sqlite://data/tansu.db?maintenance_interval=1s' \
      "$@"
  )
  wait_port "$port" 60 "tansu $name"
}

start_stunnel() { # name accept connect verify(yes/no)
  local name=$1 accept=$2 connect=$3 verify=$4
  local conf=$DIR/stunnel-$name.conf
  {
    echo "foreground = yes"
    echo "debug = notice"
    echo "[kafka-$name]"
    echo "accept = 127.0.0.1:$accept"
    echo "connect = 127.0.0.1:$connect"
    echo "cert = $DIR/tls/server.pem"
    echo "key = $DIR/tls/server.key"
    if [ "$verify" = yes ]; then
      echo "CAfile = $DIR/tls/ca.pem"
      echo "verifyChain = yes"
      echo "requireCert = yes"
    fi
  } >"$conf"
  local bin
  bin=$(command -v stunnel4 || command -v stunnel)
  spawn "stunnel-$name" "$bin" "$conf"
  wait_port "$accept" 20 "stunnel $name"
}

make_certs() {
  local t=$DIR/tls
  make_test_ca "$t" "Tributary Test CA"
  cd "$t"
  openssl req -newkey rsa:2048 -nodes -keyout client.key -out client.csr \
    -subj "/CN=tributary-client" 2>/dev/null
  printf 'extendedKeyUsage=clientAuth\n' >client.ext
  openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out client.pem \
    -days 3650 -extfile client.ext 2>/dev/null
  # The same client identity as a password-protected PKCS#12 keystore, the CA as a PKCS#12
  # truststore, and an encrypted PEM key.
  openssl pkcs12 -export -in client.pem -inkey client.key -certfile ca.pem -out client.p12 \
    -passout "pass:$P12_PASSWORD" 2>/dev/null
  openssl pkcs12 -export -nokeys -in ca.pem -out ca.p12 -passout "pass:$P12_PASSWORD" 2>/dev/null
  openssl pkcs8 -topk8 -in client.key -out client-encrypted.key -passout "pass:$P12_PASSWORD" 2>/dev/null
  # The same material as Java's keytool writes it: a JKS and a PKCS12 trust store with the CA,
  # and JKS / PKCS12 key stores with the client certificate, its chain and key.
  keytool -importcert -noprompt -alias ca -file ca.pem -keystore ca.jks -storetype JKS \
    -storepass "$JKS_PASSWORD" >/dev/null 2>&1
  keytool -importcert -noprompt -alias ca -file ca.pem -keystore ca-keytool.p12 -storetype PKCS12 \
    -storepass "$JKS_PASSWORD" >/dev/null 2>&1
  keytool -importkeystore -noprompt -srckeystore client.p12 -srcstoretype PKCS12 \
    -srcstorepass "$P12_PASSWORD" -destkeystore client-keytool.p12 -deststoretype PKCS12 \
    -deststorepass "$JKS_PASSWORD" >/dev/null 2>&1
  keytool -importkeystore -noprompt -srckeystore client.p12 -srcstoretype PKCS12 \
    -srcstorepass "$P12_PASSWORD" -destkeystore client.jks -deststoretype JKS \
    -deststorepass "$JKS_PASSWORD" -destkeypass "$JKS_KEY_PASSWORD" -srcalias 1 -destalias client \
    >/dev/null 2>&1
  chmod 600 ./*.key ./*.p12 ./*.jks
  cd - >/dev/null
}

start_all() {
  install_packages
  install_tansu
  stop_all
  rm -rf "$DIR"
  mkdir -p "$DIR"
  make_certs

  start_tansu plain "$P_PLAIN" "$P_PLAIN"
  start_tansu scratch "$P_SCRATCH" "$P_SCRATCH"

  # SCRAM: create the users without authentication, then restart with it on the same database.
  start_tansu scram "$P_SCRAM" "$P_SCRAM"
  "$TANSU" user create --broker "tcp://127.0.0.1:$P_SCRAM" "$SCRAM256_USER" "$SCRAM256_PASSWORD" \
    --mechanism scram256 >"$DIR/scram-users.log" 2>&1
  "$TANSU" user create --broker "tcp://127.0.0.1:$P_SCRAM" "$SCRAM512_USER" "$SCRAM512_PASSWORD" \
    --mechanism scram512 >>"$DIR/scram-users.log" 2>&1
  "$TANSU" user create --broker "tcp://127.0.0.1:$P_SCRAM" "$CONFORMANCE_USER" "$CONFORMANCE_PASSWORD" \
    --mechanism scram512 >>"$DIR/scram-users.log" 2>&1
  stop_pidfile "$DIR/scram.pid"
  start_tansu scram "$P_SCRAM" "$P_SCRAM" --authentication

  start_tansu tls "$P_TLS_INNER" "$P_TLS"
  start_stunnel tls "$P_TLS" "$P_TLS_INNER" no
  start_tansu mtls "$P_MTLS_INNER" "$P_MTLS"
  start_stunnel mtls "$P_MTLS" "$P_MTLS_INNER" yes

  local t=$DIR/tls
  write_env <<EOF
export TRIBUTARY_KAFKA_BOOTSTRAP=127.0.0.1:$P_PLAIN
export TRIBUTARY_KAFKA_SCRATCH_BOOTSTRAP=127.0.0.1:$P_SCRATCH
export TRIBUTARY_TANSU_BIN=$TANSU
export TRIBUTARY_KAFKA_SCRAM_BOOTSTRAP=127.0.0.1:$P_SCRAM
export TRIBUTARY_KAFKA_SCRAM256_USER=$SCRAM256_USER
export TRIBUTARY_KAFKA_SCRAM256_PASSWORD=$SCRAM256_PASSWORD
export TRIBUTARY_KAFKA_SCRAM512_USER=$SCRAM512_USER
export TRIBUTARY_KAFKA_SCRAM512_PASSWORD=$SCRAM512_PASSWORD
export TRIBUTARY_KAFKA_TLS_BOOTSTRAP=127.0.0.1:$P_TLS
export TRIBUTARY_KAFKA_MTLS_BOOTSTRAP=127.0.0.1:$P_MTLS
export TRIBUTARY_KAFKA_CA=$t/ca.pem
export TRIBUTARY_KAFKA_WRONG_CA=$t/wrong-ca.pem
export TRIBUTARY_KAFKA_CA_P12=$t/ca.p12
export TRIBUTARY_KAFKA_CLIENT_CERT=$t/client.pem
export TRIBUTARY_KAFKA_CLIENT_KEY=$t/client.key
export TRIBUTARY_KAFKA_CLIENT_KEY_ENCRYPTED=$t/client-encrypted.key
export TRIBUTARY_KAFKA_CLIENT_P12=$t/client.p12
export TRIBUTARY_KAFKA_P12_PASSWORD=$P12_PASSWORD
export TRIBUTARY_KAFKA_CONFORMANCE_USER=$CONFORMANCE_USER
export TRIBUTARY_KAFKA_CONFORMANCE_PASSWORD=$CONFORMANCE_PASSWORD
export TRIBUTARY_KAFKA_CA_JKS=$t/ca.jks
export TRIBUTARY_KAFKA_CA_KEYTOOL_P12=$t/ca-keytool.p12
export TRIBUTARY_KAFKA_CLIENT_JKS=$t/client.jks
export TRIBUTARY_KAFKA_CLIENT_KEYTOOL_P12=$t/client-keytool.p12
export TRIBUTARY_KAFKA_JKS_PASSWORD=$JKS_PASSWORD
export TRIBUTARY_KAFKA_JKS_KEY_PASSWORD=$JKS_KEY_PASSWORD
EOF
}

svc_main "$cmd" start_all
