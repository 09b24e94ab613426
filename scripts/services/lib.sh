# Shared code of the service scripts (kafka.sh, kinesis.sh, objectstore.sh, registry-python.sh).
# Sourced, never run. A script calls `svc_init NAME` first; everything here then works on
#   ROOT      the worktree (two folders above this file)
#   TOOLS     ${TRIBUTARY_TOOLS_DIR:-$HOME/.cache/tributary}: installed servers, kept across runs
#   SERVICES  ${TRIBUTARY_SERVICES_DIR:-$ROOT/target/services} (created, made absolute)
#   DIR       $SERVICES/NAME: pid files (NAME.pid), logs (NAME.log), data of this run
#   ENV_FILE  $SERVICES/NAME.env: the `export VAR=value` lines the tests source
# and `svc_main "$cmd" start_fn` dispatches `start` / `stop`.

SVC_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

svc_init() { # name
  SVC_NAME=$1
  ROOT=$(cd "$SVC_LIB_DIR/../.." && pwd)
  TOOLS=${TRIBUTARY_TOOLS_DIR:-$HOME/.cache/tributary}
  SERVICES=${TRIBUTARY_SERVICES_DIR:-$ROOT/target/services}
  mkdir -p "$SERVICES"
  SERVICES=$(cd "$SERVICES" && pwd)
  DIR=$SERVICES/$SVC_NAME
  ENV_FILE=$SERVICES/$SVC_NAME.env
}

log() { echo "${SVC_NAME}.sh: $*" >&2; }

port_open() { # port: something accepts connections on 127.0.0.1:port
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

wait_port() { # port seconds name; on timeout prints the tail of every log in $DIR
  local port=$1 secs=$2 name=$3
  for _ in $(seq 1 $((secs * 10))); do
    if port_open "$port"; then return 0; fi
    sleep 0.1
  done
  log "$name did not listen on 127.0.0.1:$port within ${secs}s"
  for f in "$DIR"/*.log; do echo "--- $f" >&2; tail -20 "$f" >&2 || true; done
  return 1
}

spawn() { # name command...: runs it in the background, output in $DIR/name.log, pid in $DIR/name.pid
  local name=$1
  shift
  nohup "$@" >"$DIR/$name.log" 2>&1 &
  echo $! >"$DIR/$name.pid"
}

pid_alive() { # name: $DIR/name.pid names a live process
  [ -e "$DIR/$1.pid" ] && kill -0 "$(cat "$DIR/$1.pid")" 2>/dev/null
}

stop_pidfile() { # pidfile: TERM, up to 5 s, then KILL; removes the file
  local pidfile=$1 pid
  pid=$(cat "$pidfile" 2>/dev/null || true)
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$pidfile"
}

stop_all() { # every process `start` recorded in $DIR/*.pid
  [ -d "$DIR" ] || return 0
  for pidfile in "$DIR"/*.pid; do
    [ -e "$pidfile" ] || continue
    stop_pidfile "$pidfile"
  done
}

SVC_MISSING=()
need_cmd() { # "cmd [alternative...]" package: the package is missing when none of the commands exists
  local c
  for c in $1; do command -v "$c" >/dev/null && return 0; done
  SVC_MISSING+=("$2")
}
need_deb() { # package: missing unless dpkg knows it installed
  dpkg -s "$1" >/dev/null 2>&1 || SVC_MISSING+=("$1")
}
need_lib() { # glob package: missing unless a file matches the glob
  compgen -G "$1" >/dev/null || SVC_MISSING+=("$2")
}
install_missing() { # apt-get install what need_* found missing
  if [ ${#SVC_MISSING[@]} -gt 0 ]; then
    log "installing ${SVC_MISSING[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${SVC_MISSING[@]}" >/dev/null
  fi
  SVC_MISSING=()
}

pip_venv() { # venv requirement...: creates the venv if absent and pip-installs the requirements
  local venv=$1
  shift
  [ -x "$venv/bin/python" ] || { mkdir -p "$(dirname "$venv")" && python3 -m venv "$venv" >&2; }
  "$venv/bin/pip" install --quiet --disable-pip-version-check "$@" >&2
}

npm_into() { # dir package...: npm install into dir (a private package.json is made if absent)
  local dir=$1
  shift
  mkdir -p "$dir"
  (cd "$dir" && { [ -f package.json ] || echo '{"name":"tributary-'"$SVC_NAME"'-tools","private":true}' >package.json; } \
    && npm install --no-audit --no-fund --loglevel=error "$@" >/dev/null)
}

make_test_ca() { # dir ca_cn: a test CA (ca.pem/.key), another CA (wrong-ca.*) and a server
  # certificate it signs for localhost and 127.0.0.1 (server.pem/.key), all in dir
  local t=$1 cn=$2
  mkdir -p "$t"
  (
    cd "$t"
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 3650 \
      -subj "/CN=$cn" 2>/dev/null
    openssl req -x509 -newkey rsa:2048 -nodes -keyout wrong-ca.key -out wrong-ca.pem -days 3650 \
      -subj "/CN=Some Other CA" 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr \
      -subj "/CN=localhost" 2>/dev/null
    printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >server.ext
    openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem \
      -days 3650 -extfile server.ext 2>/dev/null
  )
}

write_env() { # stdin -> $ENV_FILE
  cat >"$ENV_FILE"
  log "ready; environment in $ENV_FILE"
}

svc_main() { # cmd start_function
  case "$1" in
    start) "$2" ;;
    stop) stop_all; rm -f "$ENV_FILE"; log "stopped" ;;
    *) echo "usage: $0 start|stop" >&2; exit 2 ;;
  esac
}
