#!/usr/bin/env bash
# The one place Debian packages are installed: scripts/setup.sh GROUP... installs the packages
# of those groups that are missing and leaves the rest alone (it fetches nothing when nothing
# is missing, so a caller runs it every time). Installing needs root; without it, it prints
# the command to run and fails.
#   browser  Debian's Chromium, for Playwright, the soak's pages and the wasm tests in Chromium
#   engines  the e2e suite's other engines: firefox-esr (driven over WebDriver BiDi), WebKitGTK's
#            WebKitWebDriver with its MiniBrowser, Xvfb for MiniBrowser's window; and squid, a
#            proxy that refuses WebSocket tunnels, for the suite's carrier tests
#   fleet    nginx, the fleet's WebSocket load balancer
#   metrics  Prometheus and promtool, which scrape the fleet and check deploy/'s rules
#   networks squid, the stock corporate proxy that refuses WebSockets (e2e scenarios/networks.spec.js, in every engine; bench)
set -euo pipefail

# One line a package: its group, its Debian name, and what shows it is installed (an absolute
# path, or a command on PATH). Text after # is a comment.
packages='
browser  chromium          /usr/bin/chromium
browser  fonts-wqy-zenhei  /usr/share/fonts/truetype/wqy/wqy-zenhei.ttc  # the Simplified Chinese labels, or screenshots show empty boxes
engines  firefox-esr       /usr/bin/firefox-esr
engines  webkit2gtk-driver /usr/bin/WebKitWebDriver
engines  libwebkit2gtk-4.1-0 /usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser  # a dependency of webkit2gtk-driver, which holds MiniBrowser
engines  xvfb              /usr/bin/Xvfb
engines  squid             /usr/sbin/squid
fleet    nginx             nginx
metrics  prometheus        promtool          # the server and promtool (2.42 in Debian 12)
networks squid             /usr/sbin/squid   # the package starts no daemon here: the tests run their own
'

groups=$(sed -e 's/#.*//' <<<"$packages" | awk 'NF { print $1 }' | sort -u | tr '\n' ' ')
if [ $# -eq 0 ]; then
  echo "usage: scripts/setup.sh GROUP... (groups: ${groups% })" >&2
  exit 2
fi

need=()
for want in "$@"; do
  known=0
  while read -r group pkg probe _; do
    [ "$group" = "$want" ] || continue
    known=1
    if [[ $probe == /* ]]; then
      [ -e "$probe" ] && continue
    else
      command -v "$probe" >/dev/null && continue
    fi
    [[ " ${need[*]} " == *" $pkg "* ]] || need+=("$pkg")
  done < <(sed -e 's/#.*//' <<<"$packages")
  if [ "$known" = 0 ]; then
    echo "setup: no group $want (groups: ${groups% })" >&2
    exit 2
  fi
done
[ ${#need[@]} -gt 0 ] || exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "setup: ${need[*]} missing and installing needs root:" >&2
  echo "  sudo apt-get update && sudo apt-get install -y --no-install-recommends ${need[*]}" >&2
  exit 1
fi
echo "== installing ${need[*]} from Debian"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
apt-get clean
