#!/usr/bin/env bash
# Installs what the browser tests need when it is missing: Debian's Chromium (Playwright cannot
# download a browser here) with a CJK font (scripts/setup.sh browser), and the pinned npm
# packages of e2e/.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/setup.sh browser

if [ ! -d e2e/node_modules/@playwright/test ] || [ e2e/package-lock.json -nt e2e/node_modules/.package-lock.json ]; then
  echo "== npm ci in e2e/"
  (cd e2e && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error)
fi
