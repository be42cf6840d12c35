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

// Chromium's run is the longest (every scenario and the Chromium-only specs), so scripts/e2e.sh
// runs it in two parts side by side, of about equal time: LIFELINE_E2E_PART=a is the
// engine-neutral scenarios but the faults, b the faults and the Chromium-only specs (tests/).
// Unset, the project is the whole run.
const chromiumParts = {
  '': { testMatch: ['scenarios/**/*.spec.js', 'tests/**/*.spec.js'], testIgnore: ['scenarios/chromium-only.spec.js'] },
  a: { testMatch: ['scenarios/**/*.spec.js'], testIgnore: ['scenarios/chromium-only.spec.js', 'scenarios/faults.spec.js'] },
  b: { testMatch: ['scenarios/faults.spec.js', 'tests/**/*.spec.js'], testIgnore: ['scenarios/chromium-only.spec.js'] },
};
const part = process.env.LIFELINE_E2E_PART || '';
if (!(part in chromiumParts)) throw new Error(`LIFELINE_E2E_PART=${part}: want a, b or nothing`);

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
    { name: 'chromium', ...chromiumParts[part], use: { engineName: 'chromium' } },
    { name: 'firefox', testMatch: ['scenarios/**/*.spec.js'], use: { engineName: 'firefox' } },
    { name: 'webkit', testMatch: ['scenarios/**/*.spec.js'], use: { engineName: 'webkit' } },
  ],
});
