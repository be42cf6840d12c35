// The engines scenario's stopwatch: the first script of the demo page's head in the copy of
// web/ that the harness serves for it (bench/harness/engines.go inlines this file there), so
// that it runs before any script of the page in every engine alike, WebKitGTK's WebDriver
// included, which has no "script before the page's own" command.
//
// The query sets what an init script would: ?mode=in-page runs the hub in the page
// (globalThis.lifelineOptions.mode; shared, the default, without it); ?hub=N gives the page a
// config of its own (a slow warning N ms later), so that its shared hub has a name of its own
// and a repeat visit finds none running and starts one from the caches.
//
// It wraps every WebAssembly entry point the page may use (stamped before and after, and the
// Instance kept for its memory's size) and stamps lifeline:state events; window.__eng() returns
// what it saw, as bench/browser/engines.js reads it. Every time is performance.now(): ms from
// navigation start.
(() => {
  'use strict';
  const q = new URLSearchParams(location.search);
  const o = {};
  if (q.get('mode')) o.mode = q.get('mode');
  if (q.get('hub')) o.recovery = { slowAfterMs: 3000 + Number(q.get('hub')) };
  if (Object.keys(o).length) globalThis.lifelineOptions = o;

  const W = globalThis.WebAssembly;
  const rec = { calls: [], states: [], fetches: [] };
  let instance = null;
  const isModule = (r) => r instanceof W.Module || (r && r.module instanceof W.Module);
  const instanceOf = (r) => (r instanceof W.Instance ? r : (r && r.instance instanceof W.Instance ? r.instance : null));
  for (const fn of ['instantiateStreaming', 'compileStreaming', 'instantiate', 'compile']) {
    const orig = W && W[fn];
    if (typeof orig !== 'function') continue;
    W[fn] = function (...args) {
      const c = { fn, t0: performance.now() };
      rec.calls.push(c);
      const p = orig.apply(this, args);
      // Registered before the page's own then(): it stamps before the page runs the instance.
      p.then((r) => {
        c.t1 = performance.now();
        if (isModule(r) && rec.compiled === undefined) rec.compiled = c.t1;
        const i = instanceOf(r);
        if (i && rec.instantiated === undefined) {
          rec.instantiated = c.t1;
          instance = i;
        }
      }, (e) => { c.t1 = performance.now(); c.error = String(e); });
      return p;
    };
  }
  // Which fetches of the page's own scripts ask for the wasm (the boot's, the runner's).
  const origFetch = globalThis.fetch;
  if (typeof origFetch === 'function') {
    globalThis.fetch = function (input, init) {
      const url = typeof input === 'string' ? input : (input && input.url) || String(input);
      if (/\.wasm(\?|$)/.test(url)) rec.fetches.push({ url, t: performance.now() });
      return origFetch.call(this, input, init);
    };
  }
  addEventListener('lifeline:state', (e) => {
    const t = performance.now();
    const d = e.detail || {};
    if (rec.states.length < 20) rec.states.push({ t, state: d.state });
    if (rec.goReady === undefined && rec.instantiated !== undefined) rec.goReady = t;
    if (d.state === 'connected' && rec.connected === undefined) {
      rec.connected = t;
      rec.carrier = d.carrier;
    }
  });
  addEventListener('lifeline:ready', () => { if (rec.ready === undefined) rec.ready = performance.now(); });

  const r1 = (x) => (typeof x === 'number' ? Math.round(x * 10) / 10 : null);
  globalThis.__eng = () => {
    const mark = performance.getEntriesByName('lifeline:go-ready', 'mark')[0];
    const mem = instance && instance.exports && instance.exports.mem;
    return {
      connected: r1(rec.connected),
      carrier: rec.carrier || null,
      calls: rec.calls.map((c) => ({ fn: c.fn, t0: r1(c.t0), t1: r1(c.t1), error: c.error })),
      fetches: rec.fetches.map((f) => ({ url: f.url, t: r1(f.t) })),
      compiled: r1(rec.compiled),
      instantiated: r1(rec.instantiated),
      goReady: r1(mark ? mark.startTime : rec.goReady),
      ready: r1(rec.ready),
      states: rec.states.map((s) => ({ t: r1(s.t), state: s.state })),
      wasmMemory: mem && mem.buffer ? mem.buffer.byteLength : null,
      mode: globalThis.__lifelineBoot ? globalThis.__lifelineBoot().mode : null,
    };
  };
})();
