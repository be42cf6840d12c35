#!/usr/bin/env bash
# Installs what the browser tests need when it is missing: Debian's Chromium (Playwright cannot
# download a browser here) with a CJK font (scripts/setup.sh browser), firefox-esr, WebKitGTK's
# WebKitWebDriver and MiniBrowser, Xvfb (scripts/setup.sh engines), and the pinned npm packages
# of e2e/ (Playwright, puppeteer-core for Firefox, selenium-webdriver for WebKitGTK).
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/setup.sh browser engines

if [ ! -d e2e/node_modules/@playwright/test ] || [ ! -d e2e/node_modules/puppeteer-core ] || [ ! -d e2e/node_modules/selenium-webdriver ] || [ e2e/package-lock.json -nt e2e/node_modules/.package-lock.json ]; then
  echo "== npm ci in e2e/"
  (cd e2e && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 PUPPETEER_SKIP_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error)
fi
