// Known product defects, one place: a scenario that holds a promise an engine does not keep yet
// is marked here, and Playwright runs it as an expected failure (test.fail): it still runs and
// asserts the promise, a failure is reported as expected, and once the fix lands the test
// passes, which Playwright reports as a failure until its line here is removed.
//
// Each entry: the engines and modes it holds for ('*' for all), the scenario's title (a
// substring), and the defect in one line.
const defects = [
  {
    engines: ['*'], modes: ['*'],
    title: 'without SharedWorker the page falls back to in-page by itself',
    defect: 'the page falls back to in-page silently when SharedWorker is missing: nothing on the console (web/boot.js picks in-page; web/lifeline.js warns only when new SharedWorker throws)',
  },
  {
    engines: ['firefox'], modes: ['*'],
    title: 'after an outage the page is back within the ladder',
    defect: 'Firefox delays a new WebSocket after recent failures (network.websocket.delay-failed-reconnects): back long after the Host, and "slow" while the Host answers 503 at once',
  },
  {
    engines: ['firefox'], modes: ['in-page'],
    title: 'a reload and a navigation away log no console error',
    defect: 'Firefox in-page: leaving the page logs a false console.error "connection failed … the host closed it with 1001"',
  },
  {
    engines: ['webkit'], modes: ['in-page'],
    title: 'a reload and a navigation away log no console error',
    defect: 'WebKitGTK in-page: a reload logs a false console.error "lifeline: connection failed attempt=1 failures=1 err=gateway: session closed: gateway: the connection was lost (no close frame: 1006)"',
  },
  {
    engines: ['firefox'], modes: ['*'],
    title: 'a stalled handshake (stall-open)',
    defect: 'Firefox: a socket the page gives up on while the Host holds its upgrade (Reconnect now, the deadline) stays open at the Host, and they pile up (1 → 5 open in 15 s; Chromium closes each at once)',
  },
  {
    engines: ['firefox', 'webkit'], modes: ['*'],
    title: 'the hub keeps its socket through a reload of the only tab',
    defect: 'Firefox, WebKitGTK: the shared hub dies with its only tab, so a reload costs a new socket and a cold start (web/boot.js relies on SharedWorker extendedLifetime, which only Chromium has)',
  },
  {
    engines: ['webkit'], modes: ['*'],
    title: 'five tabs share one session; tabs closing in any order',
    defect: 'WebKitGTK: closing one window of several (the 2nd of 5 closed here) ends the shared hub without a word: the Host session closes, the other tabs stay "connected" with no ticks, forever (no error event, no exited message; web/lifeline.js never checks that its hub answers)',
  },
];

// knownDefect returns the defect that the scenario titled title is marked with in engine and
// mode ('' for the page's own choice), or null.
function knownDefect(engine, mode, title) {
  const has = (list, v) => list.includes('*') || list.includes(v);
  const d = defects.find((x) => has(x.engines, engine) && has(x.modes, mode || 'default') && title.includes(x.title));
  return d ? d.defect : null;
}

module.exports = { defects, knownDefect };
