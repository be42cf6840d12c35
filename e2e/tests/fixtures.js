// The test object every spec uses: `hosts.start(config)` starts a real cmd/host (and
// `hosts.startEmbed(config)` the embedding example) that is stopped after the test, whatever
// its outcome.
const base = require('@playwright/test');
const h = require('./host');

const fs = require('fs');

function writeLog(testInfo, i, host) {
  const p = testInfo.outputPath(`host-${i}-${host.port}.log`);
  fs.writeFileSync(p, host.logs.join('\n') + '\n');
  return p;
}

// The page's mode, for every page a test opens: LIFELINE_MODE=in-page or shared (make test
// runs the whole suite in both); unset leaves the page to choose (shared where it can).
const mode = process.env.LIFELINE_MODE || '';

// withMode makes every page of context open in that mode; the fixture's context has it, and
// a test that opens a context of its own calls it.
async function withMode(context) {
  if (mode) {
    await context.addInitScript((m) => {
      globalThis.lifelineOptions = Object.assign({}, globalThis.lifelineOptions, { mode: m });
    }, mode);
  }
  return context;
}

const test = base.test.extend({
  context: async ({ context }, use) => {
    await use(await withMode(context));
  },
  proxies: async ({}, use) => {
    const started = [];
    await use({
      start: async (host) => {
        const p = await h.startProxy(host);
        started.push(p);
        return p;
      },
    });
    await Promise.all(started.map((p) => p.stop()));
  },
  hosts: async ({}, use, testInfo) => {
    const started = [];
    await use({
      start: async (config) => {
        const host = await h.startHost(config);
        started.push(host);
        return host;
      },
      // startEmbed runs the embedding example (bin/embed) instead of the demo Host.
      startEmbed: async (config) => {
        const app = await h.startEmbed(config);
        started.push(app);
        return app;
      },
    });
    await Promise.all(started.map((x) => x.stop()));
    if (testInfo.status !== testInfo.expectedStatus) {
      for (const [i, x] of started.entries()) {
        await testInfo.attach(`host-${i}-${x.port}.log`, { path: writeLog(testInfo, i, x), contentType: 'text/plain' });
      }
    }
  },
});

module.exports = { test, expect: base.expect, mode, withMode, ...h };
