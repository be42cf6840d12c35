// Known product defects, one place: a scenario that holds a promise an engine does not keep yet
// is marked here, and Playwright runs it as an expected failure (test.fail): it still runs and
// asserts the promise, a failure is reported as expected, and once the fix lands the test
// passes, which Playwright reports as a failure until its line here is removed.
//
// Each entry: the engines and modes it holds for ('*' for all), the scenario's title (a
// substring), and the defect in one line.
const defects = [
  {
    engines: ['webkit'], modes: ['*'],
    title: 'five tabs share one session; tabs closing in any order',
    defect: "WebKitGTK: closing one window of several (the 2nd of 5 closed here) can end the shared hub without a word: the Host session closes. The other tabs notice within two 10 s ping rounds and meet in a fresh hub (web/lifeline.js; scenarios/shared.spec.js 'a hub that ends without a word'), but that is an interruption and a second session, which this promise does not allow. Cause (WebKit's, found in its source): the SharedWorker runs in the web process of the page that first made it; closing that window puts the process in WebKit's per-site WebProcessCache with the worker alive (WebProcessProxy::canBeAddedToWebProcessCache checks service workers, not shared workers), and the next close of a same-site window evicts and ends it; WebKit then restarts the worker elsewhere with fresh state (WebSharedWorkerServer::removeContextConnection). https://bugs.webkit.org/show_bug.cgi?id=318873, WebKit PR 71486 (unmerged)",
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
