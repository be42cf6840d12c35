'use strict';
// Navigation -> connected in Debian's Chromium, for the Lifeline demo page and a page that
// uses socket.io-client, alternating, each load in a fresh browser context (empty cache).
// Prints one JSON object: {"lifeline": [ms…], "sio": [ms…]}, times from navigation start
// (performance.now() in the page) to the page's own "connected".
//   node pageload.js --lifeline http://127.0.0.1:P/ --sio http://127.0.0.1:Q/page.html --n 20
const { chromium } = require('playwright-core');

const a = { n: '20' };
const argv = process.argv.slice(2);
for (let i = 0; i + 1 < argv.length; i += 2) a[argv[i].replace(/^--?/, '')] = argv[i + 1];

// Lifeline's page dispatches lifeline:state on window; settings.js turns it into the indicator.
const lifelineProbe = `
  window.addEventListener('lifeline:state', (e) => {
    if (e.detail && e.detail.state === 'connected' && !window.__connectedAt) {
      window.__connectedAt = performance.now();
    }
  });`;

async function load(browser, url, probe) {
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    if (probe) await page.addInitScript(probe);
    await page.goto(url, { waitUntil: 'commit', timeout: 30000 });
    await page.waitForFunction(() => window.__connectedAt, null, { timeout: 30000, polling: 20 });
    return await page.evaluate(() => window.__connectedAt);
  } finally {
    await context.close();
  }
}

(async () => {
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const out = { lifeline: [], sio: [], errors: [] };
  try {
    // One load of each first, not counted: the browser's own start-up is not the page's.
    await load(browser, a.lifeline, lifelineProbe).catch((e) => out.errors.push('warm-up lifeline: ' + e.message));
    await load(browser, a.sio).catch((e) => out.errors.push('warm-up sio: ' + e.message));
    for (let i = 0; i < Number(a.n); i++) {
      try { out.lifeline.push(await load(browser, a.lifeline, lifelineProbe)); } catch (e) { out.errors.push('lifeline: ' + e.message); }
      try { out.sio.push(await load(browser, a.sio)); } catch (e) { out.errors.push('sio: ' + e.message); }
    }
  } finally {
    await browser.close();
  }
  console.log(JSON.stringify(out));
})().catch((e) => { console.error(e); process.exit(1); });
