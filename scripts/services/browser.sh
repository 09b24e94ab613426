#!/usr/bin/env bash
# Installs (once) what the live page's browser test drives: Debian's headless `chromium` and the
# `playwright-core` npm package (the driver only; it downloads no browser and is pointed at
# Debian's). Nothing runs in the background: the test starts the browser itself, on loopback.
#
#   scripts/services/browser.sh start   # writes $TRIBUTARY_SERVICES_DIR/browser.env
#   scripts/services/browser.sh stop
#
# Exports TRIBUTARY_CHROMIUM (the browser) and TRIBUTARY_PLAYWRIGHT_DIR (a folder whose
# node_modules holds playwright-core).
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
svc_init browser
PLAYWRIGHT_VERSION=1.65.1
PW_DIR="$TOOLS/playwright"

start() {
  SVC_MISSING=()
  need_cmd "chromium chromium-browser" chromium
  need_cmd node nodejs
  need_cmd npm npm
  install_missing
  if ! [ -f "$PW_DIR/node_modules/playwright-core/package.json" ] \
    || ! grep -q "\"version\": \"$PLAYWRIGHT_VERSION\"" "$PW_DIR/node_modules/playwright-core/package.json"; then
    npm_into "$PW_DIR" "playwright-core@$PLAYWRIGHT_VERSION"
  fi
  local chromium
  chromium=$(command -v chromium || command -v chromium-browser)
  write_env <<ENV
export TRIBUTARY_CHROMIUM=$chromium
export TRIBUTARY_PLAYWRIGHT_DIR=$PW_DIR
ENV
}

svc_main "${1:-start}" start
