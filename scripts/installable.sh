#!/usr/bin/env bash
# Checks that a user outside this repository can install Lifeline the way the README says:
# the README's `go get` line, then a program that imports every public package, tidied, built
# and vetted, in a module of its own outside the tree, with GOWORK=off and a module cache of
# its own (so nothing of this checkout reaches it but what `go get` downloads).
#
# Nothing is published, so `go get` cannot fetch this repository from the internet:
# internal/test/modproxy serves the checkout (the working tree as `git add -A` would commit
# it) from a file:// module proxy, at one pseudo-version, zipped as the go command zips a
# repository's commit. `go get M@latest` then resolves, downloads and verifies the module as it
# would from proxy.golang.org; it honours no replace directive (modproxy refuses to serve a
# module with one), so a requirement that only a replace could satisfy fails here as it would
# for a user. The other modules come from this machine's module download cache, else from
# GOPROXY. The program's go.sum starts with the repository's checksums: what the checksum
# database would answer for them, so that nothing needs the network; Lifeline's own is
# GONOSUMDB, as for any module the database has not seen.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
tmp=$(mktemp -d)
trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT

version=$(go run ./internal/test/modproxy -out "$tmp/proxy")
# The line the README gives a user (the first line of the block after its install marker).
install=$(sed -n '/<!-- install:/,/^```$/p' README.md | grep -m1 '^go get ')
[ -n "$install" ] || { echo "installable: README.md has no go get line after <!-- install: -->" >&2; exit 1; }
# The public packages: every package of the module that is neither a command, nor internal,
# nor the bench's, the end-to-end tests', an example's or a build tool's.
public=$(go list -f '{{if ne .Name "main"}}{{.ImportPath}}{{end}}' ./... |
  grep -v -e '/internal\(/\|$\)' -e '/bench\(/\|$\)' -e '/e2e\(/\|$\)' -e '/examples/' -e '/tools/')
proxy="file://$tmp/proxy,file://$(go env GOMODCACHE)/cache/download,$(go env GOPROXY)"

mkdir "$tmp/user"
cd "$tmp/user"
export GOWORK=off GOFLAGS=-mod=mod GOPATH="$tmp/gopath" GOMODCACHE="$tmp/gopath/pkg/mod" GOPROXY="$proxy"
export GONOSUMDB=github.com/lifeline-go/lifeline
go mod init example.com/user 2>/dev/null
cp "$repo/go.sum" go.sum
echo "== $install (version $version, served from the checkout)"
$install
got=$(go list -m -f '{{.Version}}' github.com/lifeline-go/lifeline)
if [ "$got" != "$version" ]; then
  echo "installable: go get resolved github.com/lifeline-go/lifeline to $got, not the checkout's $version" >&2
  exit 1
fi
{
  echo "package main"
  echo
  echo "import ("
  for p in $public; do echo "	_ \"$p\""; done
  echo ")"
  echo
  echo "func main() {}"
} >main.go
echo "== go mod tidy, go build, go vet of a program importing:" $public
go mod tidy
go build -o /dev/null .
go vet .
echo "installable: a module outside the repository gets $version with go get and builds every public package"
