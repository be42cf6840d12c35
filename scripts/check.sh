#!/usr/bin/env bash
# make check: the inner loop, to run after every change (make test before a merge). gofmt, go vet
# (native and js/wasm) and every package's unit tests, natively, with -short: no browser, no
# Node, no -race, no installs, no network. Under 60 s on 2 cores with warm caches; go test's
# cache skips the packages a change did not touch.
#
# -short skips only the few tests that wait out real time (the HTTP carrier's upgrade schedule,
# a NATS reconnect, the jetstream quiet check, a NATS cluster crash: grep testing.Short); each
# says why and how long, and make test runs every one of them, with -race.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
step() { echo "== $* (at $((SECONDS - start)) s)"; }

step "gofmt -l"
unformatted=$(git ls-files -z '*.go' | xargs -0 gofmt -l)
if [ -n "$unformatted" ]; then
  echo "check: not gofmt'd (gofmt -w them):" >&2
  echo "$unformatted" >&2
  exit 1
fi

step "go vet (native)"
go vet ./...
step "go vet (js/wasm)"
GOOS=js GOARCH=wasm go vet ./...

step "go test -short (native)"
go test -short ./...

echo "== make check passed in $((SECONDS - start)) s"
