// Known product defects, one place: a scenario that holds a promise an engine does not keep yet
// is marked here, and Playwright runs it as an expected failure (test.fail): it still runs and
// asserts the promise, a failure is reported as expected, and once the fix lands the test
// passes, which Playwright reports as a failure until its line here is removed.
//
// Each entry: the engines and modes it holds for ('*' for all), the scenario's title (a
// substring), and the defect in one line.
const defects = [
];

// knownDefect returns the defect that the scenario titled title is marked with in engine and
// mode ('' for the page's own choice), or null.
function knownDefect(engine, mode, title) {
  const has = (list, v) => list.includes('*') || list.includes(v);
  const d = defects.find((x) => has(x.engines, engine) && has(x.modes, mode || 'default') && title.includes(x.title));
  return d ? d.defect : null;
}

module.exports = { defects, knownDefect };
