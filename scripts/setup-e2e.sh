#!/usr/bin/env bash
# Installs what the browser tests need when it is missing: Debian's Chromium (Playwright cannot
# download a browser here) and the pinned npm packages of e2e/.
set -euo pipefail
cd "$(dirname "$0")/.."

# The Simplified Chinese labels need a CJK font, or screenshots show empty boxes.
need=()
[ -x /usr/bin/chromium ] || need+=(chromium)
[ -e /usr/share/fonts/truetype/wqy/wqy-zenhei.ttc ] || need+=(fonts-wqy-zenhei)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "setup: ${need[*]} missing and installing needs root:" >&2
    echo "  sudo apt-get update && sudo apt-get install -y --no-install-recommends ${need[*]}" >&2
    exit 1
  fi
  echo "== installing ${need[*]} from Debian (about 30 s)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  apt-get clean
fi

if [ ! -d e2e/node_modules/@playwright/test ] || [ e2e/package-lock.json -nt e2e/node_modules/.package-lock.json ]; then
  echo "== npm ci in e2e/"
  (cd e2e && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error)
fi
