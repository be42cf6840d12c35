// The fixtures of the engine-neutral scenarios: the Host fixtures of the Chromium specs
// (tests/fixtures.js: hosts, proxies), and `browse`, the engine of the project the test runs in
// (playwright.config.js: chromium, firefox, webkit) behind one interface (engines/index.js).
//
//   browse.tab()        a tab in the test's first session, opened in the suite's mode
//   browse.session(opts) another isolated session (its own cookies, storage, SharedWorkers);
//                       opts.proxy: an HTTP proxy for all of it (engines/index.js)
//   browse.engine       the engine: its name and what it can do (engine.can)
//
// After a failure every open tab's screenshot and console are attached to the report. A
// scenario marked in engines/defects.js for this engine and mode runs as an expected failure
// (LIFELINE_E2E_DEFECTS=plain: as an ordinary test, to read its failure).
const base = require('../tests/fixtures');
const { engineFor } = require('../engines');
const { knownDefect } = require('../engines/defects');

const { mode } = base;

function setMode(m) {
  globalThis.lifelineOptions = Object.assign({}, globalThis.lifelineOptions, { mode: m });
}

const test = base.test.extend({
  engineName: ['chromium', { option: true, scope: 'worker' }],
  engine: [async ({ engineName }, use) => {
    const engine = engineFor(engineName);
    await engine.launch();
    try {
      await use(engine);
    } finally {
      await engine.close();
    }
  }, { scope: 'worker' }],

  defect: [async ({ engineName }, use, testInfo) => {
    const d = knownDefect(engineName, mode, testInfo.title);
    // LIFELINE_E2E_DEFECTS=plain runs them as ordinary tests, to read how they fail.
    if (d && process.env.LIFELINE_E2E_DEFECTS !== 'plain') {
      testInfo.annotations.push({ type: 'known defect', description: d });
      testInfo.fail(true, `known defect (engines/defects.js): ${d}`);
    }
    await use(d);
  }, { auto: true }],

  browse: async ({ engine }, use, testInfo) => {
    const sessions = [];
    const tabs = [];
    const open = async (opts) => {
      const s = await engine.newSession(opts);
      sessions.push(s);
      return {
        // newTab opens a tab in the suite's mode; { mode: false } leaves the page to choose.
        async newTab({ mode: withMode = true } = {}) {
          const tab = await s.newTab();
          tabs.push(tab);
          if (mode && withMode) await tab.addInitScript(setMode, mode);
          return tab;
        },
        setOffline: (v) => s.setOffline(v),
        close: () => s.close(),
      };
    };
    let first = null;
    await use({
      engine,
      session: open,
      async tab(opts) {
        if (!first) first = await open();
        return first.newTab(opts);
      },
    });
    if (testInfo.status !== testInfo.expectedStatus || testInfo.status !== 'passed') {
      for (const [i, tab] of tabs.entries()) {
        if (tab.closed) continue;
        try {
          const file = testInfo.outputPath(`tab-${i}.png`);
          await tab.screenshot(file);
          await testInfo.attach(`tab-${i}.png`, { path: file, contentType: 'image/png' });
          // A file, not a body: the list reporter names a file, and CI keeps the output folder.
          const lines = (await tab.console()).map((l) => `${l.type}: ${l.text}`).join('\n');
          const log = testInfo.outputPath(`tab-${i}-console.txt`);
          require('fs').writeFileSync(log, lines + '\n');
          await testInfo.attach(`tab-${i}-console.txt`, { path: log, contentType: 'text/plain' });
        } catch (e) {
          await testInfo.attach(`tab-${i}-unavailable.txt`, { body: String(e), contentType: 'text/plain' });
        }
      }
    }
    for (const s of sessions) await s.close().catch(() => {});
  },
});

const { waitFor, gapsIn } = require('../tests/host');

module.exports = { test, expect: base.expect, mode, setMode, waitFor, gapsIn };
