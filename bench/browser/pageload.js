'use strict';
// Where a page's load time goes, in Debian's Chromium, for the Lifeline demo page and a page
// that uses socket.io-client, side by side:
//   - first visit: each load in a fresh browser context (empty HTTP cache, no code cache);
//   - repeat visit: every load in one persistent profile (launchPersistentContext), as a
//     returning user's browser is. An off-the-record newContext() never reuses V8's wasm code
//     cache, so it cannot stand for a repeat visit.
// Lifeline runs in both its modes: shared (the default: the hub in a SharedWorker, which the
// stopwatch below cannot see into: tab 1's figures are read from the worker itself, over the
// DevTools protocol once the tab is connected, see workerTimes) and in-page
// (lifelineOptions.mode = "in-page", set before any script of the page). A shared first visit
// is tab 1 in a fresh context, then tabs 2–5 opened one by one beside it ("tabs"); a shared
// repeat visit either finds the hub the previous one left ("lifeline": the loads come one after
// the other, after all the rest, each within the hub's idle close of the one before) or finds
// none and starts one from the caches ("cold": each with a config, and so a hub, of its own).
// Each iteration loads: shared first (and its tabs 2–5), in-page first, socket.io first,
// in-page repeat, socket.io repeat, shared repeat with no hub, so that a change in the
// machine's load falls on all alike.
//
// Every time is performance.now() in the page: ms from navigation start.
//   fetchStart, responseEnd  the client code's Resource Timing entry (the wasm for Lifeline,
//                            socket.io.min.js for socket.io), with its transfer and body sizes,
//                            and how many entries that URL has (2: a preload went unused)
//   calls                    every WebAssembly.instantiateStreaming / compileStreaming /
//                            instantiate / compile call, stamped before and after
//   compiled, instantiated   when the first Module, the first Instance came out of them
//   goReady                  performance.mark('lifeline:go-ready') if the page sets one, else
//                            the first lifeline:state event after the instantiation
//   connected                the first lifeline:state {state: 'connected'}; socket.io's connect
//   worker                   shared mode's tab 1: the worker's own figures, in the page's time
//                            (its wasm's Resource Timing entry, the runner's marks
//                            lifeline:compiled and lifeline:instantiated, Go's lifeline:go-ready,
//                            and lifeline:worker, when the worker's script began)
// Repeat loads stay open --dwell ms after connected before the page closes: V8 offers a module
// to the code cache only once its top-tier compiler has been quiet for --wasm-caching-timeout-ms
// (2 s), so a page closed sooner could never leave one behind.
// At the end --traced (3) more Lifeline loads in the persistent profile run under a trace,
// outside the figures, each counting V8's own code-cache events (v8.wasm.moduleCacheHit: this
// load used a cached module; v8.wasm.compiledModule / cachedModule: V8 offered / Chromium
// stored one) and its lazy and top-tier compilations: whether a repeat visit's compile came from
// the cache is read there, not guessed from timings.
//
//   node pageload.js --lifeline http://127.0.0.1:P/ --sio http://127.0.0.1:Q/page.html --n 20 --dwell 3000
// Prints one JSON object:
//   {"first": {"lifeline": [load…], "inpage": […], "tabs": […], "sio": […]},
//    "repeat": {"lifeline": […], "cold": […], "inpage": […], "sio": […]}, "primer": {"lifeline": load,
//    "inpage": load, "sio": load}, "traces": [{load, counts, …}…], "errors": […], "n": N, "dwell": ms}
// The traced loads are in-page repeat visits (the stopwatch and the trace see the page, not a worker).
// primer is the first load of each page in the persistent profile (its first visit), kept apart.
const fs = require('fs');
const os = require('os');
const path = require('path');
const { chromium } = require('playwright-core');

const a = { n: '20', dwell: '3000', traced: '3' };
const argv = process.argv.slice(2);
for (let i = 0; i + 1 < argv.length; i += 2) a[argv[i].replace(/^--?/, '')] = argv[i + 1];
const n = Number(a.n);
const dwell = Number(a.dwell);

// BENCH_CHROMIUM_ARGS adds flags to both browsers, e.g. to see what a V8 setting a page cannot
// make would give: BENCH_CHROMIUM_ARGS=--js-flags=--wasm-caching-timeout-ms=0.
const extra = (process.env.BENCH_CHROMIUM_ARGS || '').split(/\s+/).filter(Boolean);
const launch = {
  executablePath: '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync', ...extra],
};

// The stopwatch runs before any script of either page. It wraps whichever WebAssembly entry point
// the page uses, and stamps lifeline:state events.
const stopwatch = `(() => {
  const W = globalThis.WebAssembly;
  const rec = window.__pl = { calls: [], states: [], urls: [] };
  const kinds = (r) => ({
    module: r instanceof W.Module ? r : (r && r.module instanceof W.Module ? r.module : null),
    instance: r instanceof W.Instance ? r : (r && r.instance instanceof W.Instance ? r.instance : null),
  });
  for (const fn of ['instantiateStreaming', 'compileStreaming', 'instantiate', 'compile']) {
    const orig = W && W[fn];
    if (typeof orig !== 'function') continue;
    W[fn] = function (...args) {
      const c = { fn, t0: performance.now() };
      rec.calls.push(c);
      if (fn.endsWith('Streaming')) {
        Promise.resolve(args[0]).then((r) => { if (r && typeof r.url === 'string') rec.urls.push(r.url); }, () => {});
      }
      const p = orig.apply(this, args);
      // Registered before the page's own then(), so it stamps before the page runs the instance.
      p.then((r) => {
        c.t1 = performance.now();
        const k = kinds(r);
        if (k.module && rec.compiled === undefined) rec.compiled = c.t1;
        if (k.instance && rec.instantiated === undefined) rec.instantiated = c.t1;
      }, (e) => { c.t1 = performance.now(); c.error = String(e); });
      return p;
    };
  }
  addEventListener('lifeline:state', (e) => {
    const t = performance.now();
    const state = e.detail && e.detail.state;
    if (rec.states.length < 20) rec.states.push({ t, state });
    if (rec.goReady === undefined && rec.instantiated !== undefined) rec.goReady = t;
    if (state === 'connected' && !window.__connectedAt) window.__connectedAt = t;
  });
  addEventListener('lifeline:ready', () => { if (rec.ready === undefined) rec.ready = performance.now(); });
})();`;

// freshHub gives a page a config of its own (a slow warning 1 ms later per i), so that its
// shared hub has a name of its own: a repeat visit that finds no hub running and starts one
// from the caches, as a visit after the hub's idle close does, without waiting for that close.
const freshHub = (i) => `globalThis.lifelineOptions = Object.assign({}, globalThis.lifelineOptions, { recovery: { slowAfterMs: ${3000 + i} } });`;

// inPage makes a page run its hub in the page itself.
const inPage = `globalThis.lifelineOptions = Object.assign({}, globalThis.lifelineOptions, { mode: 'in-page' });`;

// collect runs in the page once it is connected.
function collect() {
  const rec = window.__pl || { calls: [], states: [], urls: [] };
  const res = performance.getEntriesByType('resource');
  const pathOf = (u) => { try { return new URL(u).pathname; } catch (_) { return u; } };
  // The last entry of the URL the page compiled: a preload the fetch could not reuse (other
  // credentials mode, say) leaves an entry of its own before it; count says so.
  let matches = res.filter((x) => rec.urls.includes(x.name));
  if (!matches.length) matches = res.filter((x) => /\.wasm$/.test(pathOf(x.name)));
  if (!matches.length) matches = res.filter((x) => /\/socket\.io(\.min)?\.js$/.test(pathOf(x.name)));
  const e = matches[matches.length - 1];
  const mark = performance.getEntriesByName('lifeline:go-ready', 'mark')[0];
  const nav = performance.getEntriesByType('navigation')[0];
  const r = (x) => (typeof x === 'number' ? Math.round(x * 10) / 10 : null);
  return {
    connected: r(window.__connectedAt),
    resource: e ? {
      name: e.name, count: matches.length, initiatorType: e.initiatorType, fetchStart: r(e.fetchStart), responseStart: r(e.responseStart),
      responseEnd: r(e.responseEnd), transferSize: e.transferSize, encodedBodySize: e.encodedBodySize,
      decodedBodySize: e.decodedBodySize,
    } : null,
    calls: rec.calls.map((c) => ({ fn: c.fn, t0: r(c.t0), t1: r(c.t1), error: c.error })),
    compiled: r(rec.compiled),
    instantiated: r(rec.instantiated),
    goReady: r(mark ? mark.startTime : rec.goReady),
    goReadyFrom: mark ? 'mark' : (rec.goReady !== undefined ? 'state' : null),
    ready: r(rec.ready),
    states: rec.states.map((s) => ({ t: r(s.t), state: s.state })),
    doc: nav ? { responseEnd: r(nav.responseEnd), domContentLoaded: r(nav.domContentLoadedEventEnd), transferSize: nav.transferSize } : null,
    timeOrigin: performance.timeOrigin,
    hubName: globalThis.__lifelineBoot && globalThis.__lifelineBoot().mode === 'shared' ? globalThis.__lifelineBoot().hubName('') : null,
    ahead: res.filter((x) => x.initiatorType === 'link' || (/\.wasm$/.test(pathOf(x.name)) && !rec.urls.includes(x.name))).map((x) => ({ name: pathOf(x.name), fetchStart: r(x.fetchStart), responseStart: r(x.responseStart), responseEnd: r(x.responseEnd), transferSize: x.transferSize })),
    script: (() => { const x = res.find((y) => /\/lifeline\.[0-9a-f]+\.js$/.test(pathOf(y.name))); return x ? { fetchStart: r(x.fetchStart), responseEnd: r(x.responseEnd), transferSize: x.transferSize } : null; })(),
  };
}

// What the shared worker knows of its own start, read in the worker.
const inWorker = `(() => {
  const all = performance.getEntriesByType('resource');
  const last = (re) => all.filter((e) => re.test(new URL(e.name).pathname)).pop();
  const res = last(/\\.wasm$/), run = last(/\\/run\\.[0-9a-f]+\\.js$/);
  const marks = {};
  for (const m of performance.getEntriesByType('mark')) if (!(m.name in marks)) marks[m.name] = m.startTime;
  return { timeOrigin: performance.timeOrigin, marks,
    resource: res ? { name: res.name, fetchStart: res.fetchStart, responseEnd: res.responseEnd, transferSize: res.transferSize,
      encodedBodySize: res.encodedBodySize, decodedBodySize: res.decodedBodySize } : null,
    runner: run ? { fetchStart: run.fetchStart, responseEnd: run.responseEnd, transferSize: run.transferSize } : null };
})()`;

// workerTimes reads the shared worker of a page (m, as collect returned it: its hub's name and
// timeOrigin) over the DevTools protocol, in a session cdp opens, and returns its figures in
// the page's time (ms from the page's navigation start), or null. It attaches only after the
// tab is connected, and detaches at once: DevTools attached to a worker changes its lifetime.
async function workerTimes(cdp, m) {
  const pageOrigin = m.timeOrigin;
  try {
    const { targetInfos } = await cdp.send('Target.getTargets');
    const w = targetInfos.find((t) => t.type === 'shared_worker' && t.title === m.hubName);
    if (!w) return null;
    const { sessionId } = await cdp.send('Target.attachToTarget', { targetId: w.targetId, flatten: false });
    const answer = new Promise((resolve) => {
      cdp.on('Target.receivedMessageFromTarget', (e) => {
        const x = e.sessionId === sessionId ? JSON.parse(e.message) : null;
        if (x && x.id === 1) resolve(x);
      });
    });
    await cdp.send('Target.sendMessageToTarget', { sessionId, message: JSON.stringify({ id: 1, method: 'Runtime.evaluate', params: { expression: inWorker, returnByValue: true } }) });
    const x = await Promise.race([answer, new Promise((resolve) => setTimeout(() => resolve(null), 5000))]);
    await cdp.send('Target.detachFromTarget', { sessionId }).catch(() => {});
    const v = x && x.result && x.result.result && x.result.result.value;
    if (!v) return null;
    const shift = v.timeOrigin - pageOrigin;
    const at = (t) => (typeof t === 'number' ? Math.round((t + shift) * 10) / 10 : null);
    return {
      resource: v.resource ? { ...v.resource, fetchStart: at(v.resource.fetchStart), responseEnd: at(v.resource.responseEnd) } : null,
      runner: v.runner ? { ...v.runner, fetchStart: at(v.runner.fetchStart), responseEnd: at(v.runner.responseEnd) } : null,
      started: at(v.marks['lifeline:worker']), compiled: at(v.marks['lifeline:compiled']),
      instantiated: at(v.marks['lifeline:instantiated']), goReady: at(v.marks['lifeline:go-ready']),
    };
  } finally {
    await cdp.detach().catch(() => {});
  }
}

// load opens url in a new page of context, waits for the page's connected, collects, keeps the
// page open for stay ms and closes it. hooks.before(page) runs before the navigation and
// hooks.after(page) before the page closes (a trace starts and ends there).
async function load(context, url, stay, hooks = {}) {
  const page = await context.newPage();
  try {
    if (hooks.inPage) await page.addInitScript(inPage);
    if (hooks.hub) await page.addInitScript(freshHub(hooks.hub));
    if (hooks.before) await hooks.before(page);
    await page.goto(url, { waitUntil: 'commit', timeout: 30000 });
    await page.waitForFunction(() => window.__connectedAt, null, { timeout: 30000, polling: 20 });
    const m = await page.evaluate(collect);
    if (hooks.hub) m.worker = await workerTimes(await context.newCDPSession(page), m).catch(() => null);
    if (stay > 0) await page.waitForTimeout(stay);
    return m;
  } finally {
    try {
      if (hooks.after) await hooks.after(page);
    } finally {
      await page.close();
    }
  }
}

// fresh loads url in a browser context of its own: nothing cached.
async function fresh(browser, url, hooks = {}) {
  const context = await browser.newContext();
  try {
    await context.addInitScript(stopwatch);
    return await load(context, url, 0, hooks);
  } finally {
    await context.close();
  }
}

// freshTabs loads url as tab 1 of a fresh context, then tabs 2–5 one after another while the
// earlier tabs stay open: shared mode's first visit and the tabs that join its hub.
async function freshTabs(browser, url) {
  const context = await browser.newContext();
  try {
    await context.addInitScript(stopwatch);
    const tab = async () => {
      const page = await context.newPage();
      await page.goto(url, { waitUntil: 'commit', timeout: 30000 });
      await page.waitForFunction(() => window.__connectedAt, null, { timeout: 30000, polling: 20 });
      return page.evaluate(collect);
    };
    const first = await tab();
    first.worker = await workerTimes(await browser.newBrowserCDPSession(), first).catch(() => null);
    const others = [];
    for (let i = 2; i <= 5; i++) others.push(await tab());
    return { first, others };
  } finally {
    await context.close();
  }
}

// The trace events that say what V8 did with its code cache and its compilers.
const traced = {
  'v8.wasm.moduleCacheHit': 'cacheHit',
  'v8.wasm.moduleCacheInvalid': 'cacheInvalid',
  'v8.wasm.moduleCacheInvalidDigest': 'cacheInvalidDigest',
  'v8.wasm.compiledModule': 'offeredToCache',
  'v8.wasm.cachedModule': 'cachedModule',
  'wasm.Deserialize': 'deserialize',
  'wasm.CompileLazy': 'lazyCompiled',
  'wasm.TopTierCompilation': 'topTierJobs',
};

// traceLoad is one more load in context, traced from before its navigation to the end of its
// dwell.
async function traceLoad(context, url, stay) {
  const t = { counts: {}, consumedCacheSize: 0, producedCacheSize: 0 };
  let cdp;
  let done;
  const m = await load(context, url, stay, {
    inPage: true,
    async before(page) {
      cdp = await context.newCDPSession(page);
      cdp.on('Tracing.dataCollected', (d) => {
        for (const e of d.value) {
          const k = traced[e.name];
          if (!k) continue;
          t.counts[k] = (t.counts[k] || 0) + 1;
          const args = (e.args && e.args.data) || e.args || {};
          if (args.consumedCacheSize) t.consumedCacheSize = Math.max(t.consumedCacheSize, args.consumedCacheSize);
          if (args.producedCacheSize) t.producedCacheSize = Math.max(t.producedCacheSize, args.producedCacheSize);
        }
      });
      done = new Promise((resolve) => cdp.once('Tracing.tracingComplete', resolve));
      await cdp.send('Tracing.start', {
        traceConfig: { includedCategories: ['disabled-by-default-devtools.timeline', 'v8.wasm'] },
        transferMode: 'ReportEvents',
      });
    },
    async after() {
      if (!cdp) return;
      await cdp.send('Tracing.end');
      await Promise.race([done, new Promise((resolve) => setTimeout(resolve, 10000))]);
      await cdp.detach().catch(() => {});
    },
  });
  return { load: m, ...t };
}

(async () => {
  const out = { first: { lifeline: [], inpage: [], tabs: [], sio: [] }, repeat: { lifeline: [], cold: [], inpage: [], sio: [] }, primer: {}, traces: [], errors: [], n, dwell };
  const browser = await chromium.launch(launch);
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'lifeline-pageload-'));
  let persistent;
  const attempt = async (what, f) => {
    try { return await f(); } catch (e) { out.errors.push(what + ': ' + e.message.split('\n')[0]); return null; }
  };
  try {
    persistent = await chromium.launchPersistentContext(profile, launch);
    await persistent.addInitScript(stopwatch);
    // One fresh load of each first, not counted: the browser's own start-up is not the page's.
    await attempt('warm-up lifeline', () => fresh(browser, a.lifeline));
    await attempt('warm-up sio', () => fresh(browser, a.sio));
    out.primer.lifeline = await attempt('primer lifeline', () => load(persistent, a.lifeline, dwell));
    out.primer.inpage = await attempt('primer in-page', () => load(persistent, a.lifeline, dwell, { inPage: true }));
    out.primer.sio = await attempt('primer sio', () => load(persistent, a.sio, dwell));
    const push = (list, m) => { if (m) list.push(m); };
    for (let i = 0; i < n; i++) {
      const tabs = await attempt('first lifeline tabs', () => freshTabs(browser, a.lifeline));
      if (tabs) {
        out.first.lifeline.push(tabs.first);
        out.first.tabs.push(...tabs.others);
      }
      push(out.first.inpage, await attempt('first in-page', () => fresh(browser, a.lifeline, { inPage: true })));
      push(out.first.sio, await attempt('first sio', () => fresh(browser, a.sio)));
      push(out.repeat.inpage, await attempt('repeat in-page', () => load(persistent, a.lifeline, dwell, { inPage: true })));
      push(out.repeat.sio, await attempt('repeat sio', () => load(persistent, a.sio, dwell)));
      push(out.repeat.cold, await attempt('repeat lifeline, no hub', () => load(persistent, a.lifeline, dwell, { hub: i + 1 })));
    }
    // The shared repeat visits that find the hub: one after the other, each within the hub's
    // idle close (10 s after its last tab) of the one before, after one that starts it.
    await attempt('repeat lifeline, the hub starting', () => load(persistent, a.lifeline, dwell));
    for (let i = 0; i < n; i++) {
      push(out.repeat.lifeline, await attempt('repeat lifeline', () => load(persistent, a.lifeline, dwell)));
    }
    for (let i = 0; i < Number(a.traced); i++) {
      push(out.traces, await attempt('traced repeat in-page', () => traceLoad(persistent, a.lifeline, dwell)));
    }
  } finally {
    if (persistent) await persistent.close().catch(() => {});
    await browser.close().catch(() => {});
    fs.rmSync(profile, { recursive: true, force: true });
  }
  console.log(JSON.stringify(out));
})().catch((e) => { console.error(e); process.exit(1); });
