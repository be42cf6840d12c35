#!/usr/bin/env bash
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -d cmd/host ]; then
  echo "make run: the demo Host (cmd/host) and page arrive with a later issue; nothing to serve yet."
  exit 0
fi
