#!/usr/bin/env bash
# The end-to-end suite in three engines, each in both of the page's modes: shared (one hub per
# origin in a SharedWorker, the default) and in-page (one socket per tab, where SharedWorker is
# missing). Chromium (Playwright) runs every scenario and its own specs; firefox-esr (puppeteer-
# core over WebDriver BiDi) and WebKitGTK (WebKitWebDriver, MiniBrowser under Xvfb) run the
# engine-neutral scenarios (e2e/scenarios/). See e2e/playwright.config.js.
#
# The runs wait on outages, ladders and freezes more than they compute (four side by side kept
# a 2-core AMD EPYC machine's cores 32% busy), so several go side by side: at most E2E_LANES
# (5) at a time, longest first. Not all at once: on a machine 35-60% slower, eight runs at
# once kept both cores 100% busy, with a run queue of 27-33, and bounds failed in every engine
# (WebKit's first connect stuck at "connecting" for 10 s, a 2 s Reconnect now in Firefox): a
# bound the product promises is measured on a machine that has the CPU to keep it. Each
# engine's run in each mode is two lanes of about equal time (playwright.config.js's
# LIFELINE_E2E_PART), so that the lanes pack evenly. Each lane has its own results folder
# (e2e/test-results/<engine>-<mode>-<part>) and its own range of ports, below the kernel's
# ephemeral ones (e2e/tests/host.js), so that no run can be handed a port another picked a
# moment ago. Each line of a run's output is prefixed with [engine mode part]; each run's wall
# time is printed at its end.
#
#   scripts/e2e.sh                     every engine and mode
#   E2E_ENGINES="firefox webkit" scripts/e2e.sh   some engines only
#   E2E_LANES=12 scripts/e2e.sh        every lane at once (a machine with the cores for it)
# Assumes scripts/build.sh has run (bin/host, bin/faultproxy, bin/embed) and the set-up
# (scripts/setup-e2e.sh).
set -uo pipefail
cd "$(dirname "$0")/../e2e"

engines=${E2E_ENGINES:-chromium firefox webkit}
max_lanes=${E2E_LANES:-5}
case $max_lanes in '' | *[!0-9]* | 0) echo "e2e: E2E_LANES must be a whole number of lanes, at least 1; got \"$max_lanes\"" >&2; exit 2 ;; esac
declare -A ports=(
  [chromium-shared-a]=20000-20999 [chromium-shared-b]=21000-21999
  [chromium-in-page-a]=22000-22999 [chromium-in-page-b]=23000-23999
  [firefox-shared-a]=24000-24999 [firefox-shared-b]=25000-25999
  [firefox-in-page-a]=26000-26999 [firefox-in-page-b]=27000-27999
  [webkit-shared-a]=28000-28999 [webkit-shared-b]=29000-29999
  [webkit-in-page-a]=30000-30999 [webkit-in-page-b]=31000-31999
)

run() { # engine mode [part]: one run, its lines prefixed, its wall time at its end
  local t0=$SECONDS rc lane=$1-$2${3:+-$3} name="$1 $2${3:+ $3}"
  LIFELINE_MODE=$2 LIFELINE_E2E_PART=${3:-} LIFELINE_E2E_PORTS=${ports[$lane]} npx playwright test --project="$1" --output "test-results/$lane" 2>&1 |
    sed -u "s/^/[$name] /" | tee "test-results/$lane.log"
  rc=${PIPESTATUS[0]}
  echo "[$name] ended with $rc after $((SECONDS - t0)) s"
  return "$rc"
}

rm -rf test-results
mkdir -p test-results
# Every lane, longest first (as measured: Chromium's b parts run the faults and tests/, the
# shared a parts the networks and the shared hub), so that the last lanes to start are short.
order=()
for n in "chromium in-page b" "chromium shared b" "chromium shared a" "firefox shared a" "webkit shared a" \
  "chromium in-page a" "firefox in-page a" "webkit in-page a" "webkit shared b" "firefox shared b" \
  "webkit in-page b" "firefox in-page b"; do
  case " $engines " in *" ${n%% *} "*) order+=("$n") ;; esac
done
for e in $engines; do
  case $e in chromium | firefox | webkit) ;; *) echo "e2e: no engine $e (chromium, firefox, webkit)" >&2; exit 2 ;; esac
done
t0=$SECONDS
running=0
for n in "${order[@]}"; do
  while [ "$running" -ge "$max_lanes" ]; do
    wait -n
    running=$((running - 1))
  done
  # shellcheck disable=SC2086 # n is "engine mode [part]"
  { run $n; echo $? >"test-results/${n// /-}.rc"; } &
  running=$((running + 1))
done
wait
failed=()
for n in "${order[@]}"; do
  [ "$(cat "test-results/${n// /-}.rc" 2>/dev/null)" = 0 ] || failed+=("$n")
done
echo "end to end: $((SECONDS - t0)) s for ${engines// /, }"
if [ ${#failed[@]} -gt 0 ]; then
  # What failed, again at the very end: the lanes' output is interleaved, and a reader (or CI,
  # which keeps only the tail of a run) should not have to dig for it.
  for n in "${failed[@]}"; do
    lane=${n// /-}
    echo "end to end: $n: what failed (all of it in e2e/test-results/$lane.log)" >&2
    # Playwright's list reporter ends with the numbered errors ("  1) [engine] › file:line ›
    # title", then the error and its attachments), then a summary ("1 failed", each test under
    # it): both, without the attachments and blank lines.
    awk '/^\[[^]]*\]   [0-9]+\) /{show=1} /^\[[^]]*\]   [0-9]+ (failed|flaky|passed|skipped)/{show=0} show' \
      "test-results/$lane.log" | grep -vE 'attachment #|test-results/|───|Error Context|^\[[^]]*\] *$' | head -50 >&2
    grep -E '^\[[^]]*\]   [0-9]+ (failed|flaky|did not run|interrupted)' -A 6 "test-results/$lane.log" | head -30 >&2
  done
  echo "end to end: failed in: ${failed[*]} (results in e2e/test-results/<engine>-<mode>-<part>)" >&2
  exit 1
fi
