#!/usr/bin/env bash
# make lint: the checks that run no test but one: gofmt, go mod tidy, vet and staticcheck
# (natively and for the browser, GOOS=js GOARCH=wasm; as an embedder builds and with fault
# injection built in, -tags lifeline_faults), the import rules of ARCHITECTURE.md and
# govulncheck, over the one module.
set -euo pipefail
cd "$(dirname "$0")/.."
all=./...
# Fault injection is built in only with this tag (cmd/host's demo, the fault tests): what an
# embedder builds is checked without it, and the packages it changes with it too.
faults=lifeline_faults

echo "== gofmt -l"
unformatted=$(git ls-files -z '*.go' | xargs -0 gofmt -l)
if [ -n "$unformatted" ]; then
  echo "lint: not gofmt'd (gofmt -w them):" >&2
  echo "$unformatted" >&2
  exit 1
fi

echo "== go mod tidy -diff"
if ! go mod tidy -diff; then
  echo "lint: go.mod or go.sum not tidy (the diff above; run go mod tidy)" >&2
  exit 1
fi

for platform in native js/wasm; do
  env=()
  [ "$platform" = native ] || env=(GOOS=js GOARCH=wasm)
  echo "== go vet ($platform)"
  env "${env[@]}" go vet "$all"
  tagged=$(env "${env[@]}" ./scripts/tagged.sh "$faults")
  if [ -n "$tagged" ]; then
    echo "== go vet ($platform, -tags $faults):" $tagged
    env "${env[@]}" go vet -tags "$faults" $tagged
  fi
done

# One run over the four builds, so that code only one of them uses (a hook only the fault files
# call, a helper only the js files call) is unused only if it is in every one (U1000). 'go tool'
# would build staticcheck itself for wasm: the native binary is run.
echo "== staticcheck (native and js/wasm, without and with -tags $faults)"
"$(go tool -n staticcheck)" -matrix "$all" <<EOF
native: -tags=
faults: -tags=$faults
js: GOOS=js GOARCH=wasm -tags=
jsfaults: GOOS=js GOARCH=wasm -tags=$faults
EOF

# go list -deps per platform, checked against a table (internal/test/imports_test.go). -count=1:
# a cached pass would not see a change in what the go command lists.
echo "== the import rules"
go test -count=1 -run '^TestImportRules$' ./internal/test/

# govulncheck, offline. vuln.go.dev is out of reach here; the Go module proxy is not, and it
# serves golang.org/x/vulndb, whose data/osv holds every report as OSV JSON. vulndb's own
# cmd/indexdb turns that folder into the v1 database -db file:// reads, once per vulndb
# version (kept in the user's cache; a cold build downloads vulndb, ~70 MB, and indexdb's
# dependencies). Raise vulndb_version (a newer pseudo-version of the module) to see newer
# reports. scripts/vulnfilter.go fails on a vulnerable function of a required module that the
# code calls; the standard library's are listed only (the Go that builds a Host is the
# builder's; the fix is a newer Go there).
echo "== govulncheck (offline, over golang.org/x/vulndb's OSV files)"
govulncheck_version=v1.9.0
vulndb_version=v0.0.0-20261105234957-e22db6528018
vulndb="${XDG_CACHE_HOME:-$HOME/.cache}/lifeline/vulndb-$vulndb_version"
if [ ! -f "$vulndb/index/db.json" ]; then
  osv=$(cd "$(mktemp -d)" && GOFLAGS=-mod=mod go mod download -json "golang.org/x/vulndb@$vulndb_version" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')/data/osv
  rm -rf "$vulndb.tmp"
  go run "golang.org/x/vulndb/cmd/indexdb@$vulndb_version" -vulns "$osv" -out "$vulndb.tmp"
  mv "$vulndb.tmp" "$vulndb"
fi
go run "golang.org/x/vuln/cmd/govulncheck@$govulncheck_version" -db "file://$vulndb" -format json "$all" |
  go run ./scripts/vulnfilter.go
