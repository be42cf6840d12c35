'use strict';
// Behind a proxy that will not carry a WebSocket (Debian's squid with its stock configuration:
// CONNECT to any port but 443 refused), in Debian's Chromium: navigation → connected for the
// Lifeline demo page, shared (the default) and in-page, and for a page of socket.io-client with
// its default transports (it starts on long polling, which the proxy passes, and its upgrade
// to a WebSocket fails there), side by side:
//   - first visit: each load in a fresh browser context (nothing cached, nothing remembered);
//   - repeat visit: loads in one persistent profile (a returning user's browser: its caches and
//     what the page remembered of the network), after one unmeasured load of each.
// Every time is performance.now() in the page: ms from navigation start to the first
// lifeline:state connected (and the carrier it came on), or socket.io's connect (and its
// transport then).
//
//   node networks.js --lifeline http://H/ --sio http://S/page.html --proxy http://127.0.0.1:P --n 10
// Prints one JSON object: {"first": {"shared": [load…], "inpage": […], "sio": […]},
//   "repeat": {…}, "errors": […]}; a load is {"connected": ms, "carrier": "stream", "wasm": ms} (wasm: when the page instantiated the
// wasm, in-page only; 0 otherwise).
const fs = require('fs');
const os = require('os');
const path = require('path');
const { chromium } = require('playwright-core');

const a = { n: '10' };
const argv = process.argv.slice(2);
for (let i = 0; i + 1 < argv.length; i += 2) a[argv[i].replace(/^--?/, '')] = argv[i + 1];
const n = Number(a.n);
if (!a.lifeline || !a.sio || !a.proxy || !(n > 0)) {
  console.error('usage: node networks.js --lifeline URL --sio URL --proxy URL --n N');
  process.exit(2);
}

const args = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const proxy = { server: a.proxy, bypass: '<-loopback>' }; // without the rule, loopback skips the proxy

// The stopwatch, before any script of the page. A shared hub is named after the page's config:
// a repeat visit given upgradeAfterMs of its own finds no hub left by the one before and starts
// one from the caches (and what the page remembered of the network), as a visit after the hub's
// idle close does.
function stopwatch([mode, upgradeAfterMs]) {
  globalThis.lifelineOptions = {};
  if (mode) globalThis.lifelineOptions.mode = mode;
  if (upgradeAfterMs) globalThis.lifelineOptions.upgradeAfterMs = upgradeAfterMs;
  // In-page, the wasm is instantiated in the page: the moment it is, Go starts, and what
  // follows is the connection's own time (in shared mode that happens in the worker, unseen).
  for (const f of ['instantiate', 'instantiateStreaming']) {
    const orig = WebAssembly[f];
    WebAssembly[f] = function (...xs) {
      return orig.apply(this, xs).then((r) => {
        if (!window.__wasmAt) window.__wasmAt = performance.now();
        return r;
      });
    };
  }
  window.addEventListener('lifeline:state', (e) => {
    if (e.detail.state === 'connected' && !window.__connected) {
      window.__connected = { at: performance.now(), carrier: e.detail.carrier, wasm: window.__wasmAt || 0 };
    }
  });
}

let loads = 0;

async function lifeline(context, mode) {
  const page = await context.newPage();
  try {
    await page.addInitScript(stopwatch, [mode, 15000 + loads++]);
    await page.goto(a.lifeline);
    await page.waitForFunction(() => window.__connected, null, { timeout: 60_000, polling: 20 });
    const c = await page.evaluate(() => window.__connected);
    return { connected: c.at, carrier: c.carrier, wasm: c.wasm };
  } finally {
    await page.close();
  }
}

async function sio(context) {
  const page = await context.newPage();
  try {
    await page.goto(a.sio);
    await page.waitForFunction(() => window.__connectedAt, null, { timeout: 60_000, polling: 20 });
    return page.evaluate(() => ({ connected: window.__connectedAt, carrier: socket.io.engine.transport.name }));
  } finally {
    await page.close();
  }
}

(async () => {
  const out = { first: { shared: [], inpage: [], sio: [] }, repeat: { shared: [], inpage: [], sio: [] }, errors: [] };
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args });
  const once = async (list, f) => {
    try {
      list.push(await f());
    } catch (e) {
      out.errors.push(String(e && e.message ? e.message : e).split('\n')[0]);
    }
  };
  try {
    for (let i = 0; i < n; i++) {
      for (const [key, f] of [['shared', (c) => lifeline(c, '')], ['inpage', (c) => lifeline(c, 'in-page')], ['sio', sio]]) {
        const context = await browser.newContext({ proxy });
        await once(out.first[key], () => f(context));
        await context.close();
      }
    }
  } finally {
    await browser.close();
  }
  // Repeat visits: one persistent profile per page kind, its first load unmeasured.
  for (const [key, f] of [['shared', (c) => lifeline(c, '')], ['inpage', (c) => lifeline(c, 'in-page')], ['sio', sio]]) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lifeline-networks-'));
    const context = await chromium.launchPersistentContext(dir, { executablePath: '/usr/bin/chromium', args, proxy });
    try {
      await once([], () => f(context));
      for (let i = 0; i < n; i++) await once(out.repeat[key], () => f(context));
    } finally {
      await context.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }
  process.stdout.write(JSON.stringify(out) + '\n');
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
