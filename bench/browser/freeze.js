'use strict';
// Scenario 9: a page frozen while its link went half-open. Lifeline's demo page (shared, the
// default, and in-page) and a page that uses socket.io-client with its defaults, each behind
// a fault proxy of its own, side by side in one Debian Chromium:
//   1. each page loads in a fresh browser context and connects (socket.io: until its
//      transport has upgraded to websocket, as its defaults do);
//   2. every page is frozen at once;
//   3. every proxy switches to stall, then up: the open connections are frozen for good (no
//      FIN, no RST, nothing forwarded either way), new ones are forwarded, as a laptop whose
//      lid was closed and opened finds its network;
//   4. after --freeze ms the pages are resumed, one after another, each told so (the page
//      lifecycle's resume event);
//   5. each page is watched until it is connected on a new connection, or --bound ms.
// This headless Chromium cannot freeze a page through the DevTools protocol
// (Page.setWebLifecycleState 'frozen' is accepted and changes nothing: see
// e2e/tests/lifecycle.spec.js), so the page's JavaScript is paused with the debugger: its
// timers and handlers stop, the network goes on; a shared page's SharedWorker is another
// target and is not paused, as a real frozen tab's is not while its worker has other work.
//
//   node freeze.js --pages JSON --freeze 60000 --bound 60000 --n 3
// --pages is [{"name": "lifeline shared", "kind": "lifeline", "mode": "shared", "url": …,
// "control": proxy control URL}…] (kind lifeline or sio). Prints one JSON object:
//   {"samples": [{"name", "kind", "mode", "freezeMs", "frozenAt", "stalledAt", "resumedAt",
//     "before": {…}, "events": […], "error"}…], "errors": […]}
// Every time is Date.now() (ms since the epoch) in this process or in the page: one clock.
// Lifeline's events are its lifeline:state events ({t, at, state, attempt, error}: t when the
// page heard it, at when its hub (a shared page's worker) changed state); socket.io's
// are its connect, disconnect ({reason}), its Manager's reconnect_attempt and reconnect_error
// ({reason}) events, and its Manager's pings. before is what the
// page was at the freeze: Lifeline's state (its attempt), socket.io's first connect and last
// ping (null before its first, 25 s after the connect). Sample i of n freezes
// 1 s + 25 s × i / n after the pages connected.
const { chromium } = require('playwright-core');

const a = { n: '3', freeze: '60000', bound: '60000' };
const argv = process.argv.slice(2);
for (let i = 0; i + 1 < argv.length; i += 2) a[argv[i].replace(/^--?/, '')] = argv[i + 1];
const pages = JSON.parse(a.pages);
const n = Number(a.n);
const freezes = String(a.freeze).split(',').map(Number);
const bound = Number(a.bound);

const launch = {
  executablePath: '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
};

// Before any script of the page: Lifeline's states, as the page is told them, and a beat
// that runs a statement every 50 ms, so that a debugger pause takes effect at once even on a
// page that runs nothing of its own for seconds (socket.io's runs only when a packet comes).
const recorder = `(() => {
  window.__ev = [];
  addEventListener('lifeline:state', (e) => {
    const s = e.detail || {};
    window.__ev.push({ t: Date.now(), at: s.at, state: s.state, attempt: s.attempt, error: s.error || '' });
  });
  setInterval(() => { window.__beat = Date.now(); }, 50);
})();`;
const inPage = `globalThis.lifelineOptions = Object.assign({}, globalThis.lifelineOptions, { mode: 'in-page' });`;

// within rejects after ms with what, unless p settles first.
function within(p, ms, what) {
  let timer;
  return Promise.race([p, new Promise((_, no) => { timer = setTimeout(() => no(new Error(what + ' within ' + ms + ' ms')), ms); })])
    .finally(() => clearTimeout(timer));
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function setMode(control, mode) {
  const res = await within(fetch(control + '/mode?mode=' + mode, { method: 'POST' }), 5000, 'the proxy at ' + control + ' did not answer');
  if (!res.ok) throw new Error('the proxy at ' + control + ' refused mode ' + mode + ': ' + res.status + ' ' + (await res.text()));
}

// open loads one page in a context of its own and waits until it is connected.
async function open(browser, p) {
  const context = await browser.newContext();
  const s = { p, context };
  await context.addInitScript(recorder);
  if (p.mode === 'in-page') await context.addInitScript(inPage);
  s.page = await context.newPage();
  await s.page.goto(p.url, { waitUntil: 'load', timeout: 30000 });
  if (p.kind === 'lifeline') {
    await s.page.waitForFunction(() => globalThis.lifeline && globalThis.lifeline.state().state === 'connected', null, { timeout: 30000, polling: 50 });
  } else {
    // The page's own `socket` (sio-server.js): connected, and upgraded to websocket.
    await s.page.waitForFunction(() => typeof socket !== 'undefined' && socket.connected && socket.io.engine && socket.io.engine.transport.name === 'websocket', null, { timeout: 30000, polling: 50 });
    await s.page.evaluate(() => {
      socket.on('connect', () => window.__ev.push({ t: Date.now(), ev: 'connect' }));
      socket.on('disconnect', (reason) => window.__ev.push({ t: Date.now(), ev: 'disconnect', reason: String(reason) }));
      socket.io.on('ping', () => { window.__lastPing = Date.now(); });
      // The Manager's reconnection: each attempt, and each that failed (its error: "timeout"
      // after its 20 s, "xhr poll error", …).
      socket.io.on('reconnect_attempt', (n) => window.__ev.push({ t: Date.now(), ev: 'reconnect_attempt', attempt: n }));
      socket.io.on('reconnect_error', (err) => window.__ev.push({ t: Date.now(), ev: 'reconnect_error', reason: String(err && err.message) }));
    });
  }
  s.cdp = await context.newCDPSession(s.page);
  await s.cdp.send('Debugger.enable');
  return s;
}

// before is what the page is at the freeze.
async function before(s) {
  if (s.p.kind === 'lifeline') {
    const st = await s.page.evaluate(() => globalThis.lifeline.state());
    return { state: st.state, attempt: st.attempt };
  }
  return s.page.evaluate(() => ({
    connected: socket.connected, transport: socket.io.engine.transport.name, lastPing: window.__lastPing || null,
    // The engine's ping timer is set at its handshake and again at every ping; the handshake
    // is a round trip before connect (sio-server.js stamps it in performance.now() time).
    // Its timers' fields are private, and renamed in socket.io.min.js: read them if there.
    connectedAt: Math.round(Date.now() - (performance.now() - window.__connectedAt)),
    pingInterval: socket.io.engine._pingInterval, pingTimeout: socket.io.engine._pingTimeout,

  }));
}

async function freeze(s) {
  const paused = new Promise((ok) => s.cdp.once('Debugger.paused', ok));
  await s.cdp.send('Debugger.pause');
  await within(paused, 5000, s.p.name + ': the page did not pause');
}

// back waits until the page is connected on a new connection after resumedAt, or bound.
async function back(s, resumedAt, attempt) {
  const cond = s.p.kind === 'lifeline'
    ? ([since, att]) => window.__ev.some((e) => e.t >= since && e.state === 'connected' && e.attempt > att)
    : ([since]) => window.__ev.some((e) => e.t >= since && e.ev === 'connect');
  try {
    await s.page.waitForFunction(cond, [resumedAt, attempt], { timeout: bound, polling: 50 });
  } catch (e) {
    if (!/Timeout/i.test(e.message)) throw e;
  }
}

// sample runs every page through one freeze, settleMs after they connected.
async function sample(browser, freezeMs, settleMs) {
  const opened = [];
  const out = [];
  try {
    for (const p of pages) opened.push(await open(browser, p));
    await sleep(settleMs);
    for (const s of opened) s.rec = { name: s.p.name, kind: s.p.kind, mode: s.p.mode || '', freezeMs, settleMs, before: await before(s) };
    await Promise.all(opened.map(async (s) => { await freeze(s); s.rec.frozenAt = Date.now(); }));
    for (const s of opened) await setMode(s.p.control, 'stall');
    const stalledAt = Date.now();
    for (const s of opened) await setMode(s.p.control, 'up');
    await sleep(freezeMs);
    for (const s of opened) {
      s.rec.stalledAt = stalledAt;
      s.rec.resumedAt = Date.now();
      await s.cdp.send('Debugger.resume');
    }
    // What a browser does for a page it resumes; socket.io-client does not listen for it.
    await Promise.all(opened.map((s) => within(s.page.evaluate(() => document.dispatchEvent(new Event('resume'))), 10000, s.p.name + ': the page did not run the resume event')));
    await Promise.all(opened.map((s) => back(s, s.rec.resumedAt, s.rec.before.attempt || 0)));
    for (const s of opened) {
      s.rec.events = await s.page.evaluate(() => window.__ev);
      out.push(s.rec);
    }
  } finally {
    for (const s of opened) await s.context.close().catch(() => {});
  }
  return out;
}

(async () => {
  const res = { samples: [], errors: [], n, freezes, bound };
  const browser = await chromium.launch(launch);
  try {
    for (const f of freezes) {
      for (let i = 0; i < n; i++) {
        // socket.io's server pings every 25 s and its client gives up 45 s after the last
        // ping: the samples freeze at phases spread over a ping interval, not always just
        // after the connect.
        const settle = 1000 + Math.round(25000 * i / n);
        try {
          res.samples.push(...await sample(browser, f, settle));
        } catch (e) {
          res.errors.push('freeze ' + f + ' ms, sample ' + (i + 1) + ': ' + e.message.split('\n')[0]);
        }
        // Back to up for the next sample, whatever happened.
        for (const p of pages) await setMode(p.control, 'up').catch(() => {});
        console.error('freeze.js: freeze ' + f + ' ms, sample ' + (i + 1) + '/' + n + ' done');
      }
    }
  } finally {
    await browser.close().catch(() => {});
  }
  console.log(JSON.stringify(res));
})().catch((e) => { console.error(e); process.exit(1); });
