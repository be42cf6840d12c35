#!/usr/bin/env bash
# scripts/tagged.sh TAG: the packages of the module whose files differ with -tags TAG (for this
# GOOS and GOARCH), one a line: what lint and test check with the tag as well as without it.
# A tag that only adds files (lifeline_faults) costs a second pass over these packages alone.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 1 ] || { echo "usage: scripts/tagged.sh TAG" >&2; exit 2; }
files() {
  go list -tags "$1" -f '{{.ImportPath}} {{.GoFiles}} {{.CgoFiles}} {{.TestGoFiles}} {{.XTestGoFiles}}' \
    ./... | sort
}
comm -3 <(files "") <(files "$1") | awk '{ print $1 }' | sort -u
