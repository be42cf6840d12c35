// Playwright Test is the harness of every engine: it runs the engine-neutral scenarios
// (scenarios/, through engines/: Debian's chromium by Playwright, firefox-esr by puppeteer-core
// over WebDriver BiDi, WebKitGTK's MiniBrowser by WebKitWebDriver under Xvfb), and in Chromium
// the specs that need what only Chromium's driver offers (tests/, through Playwright's own page:
// DevTools, request interception, the accessibility tree), against the real cmd/host, which
// each test starts itself with the config and faults it needs.
//
// One project per engine; scripts/test.sh runs each in both page modes (LIFELINE_MODE).
const { defineConfig } = require('@playwright/test');
const { launchOptions } = require('./engines/chromium');

// scripts/e2e.sh runs each engine's run in two parts side by side, of about equal time
// (LIFELINE_E2E_PART; unset, a project is its whole run). Chromium's run is the longest (every
// scenario and the Chromium-only specs): its part a is the engine-neutral scenarios but the
// faults, b the faults and the Chromium-only specs (tests/). Firefox's and WebKit's part a is
// the scenarios but the faults and the shared hub's, b those two and the list of what only
// Chromium runs (chromium-only.spec.js, which names each with its reason).
const scenarios = 'scenarios/**/*.spec.js';
const parts = {
  chromium: {
    '': { testMatch: [scenarios, 'tests/**/*.spec.js'], testIgnore: ['scenarios/chromium-only.spec.js'] },
    a: { testMatch: [scenarios], testIgnore: ['scenarios/chromium-only.spec.js', 'scenarios/faults.spec.js'] },
    b: { testMatch: ['scenarios/faults.spec.js', 'tests/**/*.spec.js'], testIgnore: ['scenarios/chromium-only.spec.js'] },
  },
  other: {
    '': { testMatch: [scenarios] },
    a: { testMatch: [scenarios], testIgnore: ['scenarios/faults.spec.js', 'scenarios/shared.spec.js', 'scenarios/chromium-only.spec.js'] },
    b: { testMatch: ['scenarios/faults.spec.js', 'scenarios/shared.spec.js', 'scenarios/chromium-only.spec.js'] },
  },
};
const part = process.env.LIFELINE_E2E_PART || '';
if (!(part in parts.chromium)) throw new Error(`LIFELINE_E2E_PART=${part}: want a, b or nothing`);

module.exports = defineConfig({
  testDir: '.',
  // One worker: every test runs its own Host processes and a browser on a 2-core machine.
  workers: 1,
  timeout: 90_000,
  expect: { timeout: 10_000 },
  reporter: [['list']],
  outputDir: 'test-results',
  use: {
    browserName: 'chromium',
    screenshot: 'only-on-failure',
    launchOptions,
  },
  projects: [
    { name: 'chromium', ...parts.chromium[part], use: { engineName: 'chromium' } },
    { name: 'firefox', ...parts.other[part], use: { engineName: 'firefox' } },
    { name: 'webkit', ...parts.other[part], use: { engineName: 'webkit' } },
  ],
});
