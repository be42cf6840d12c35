// Lifeline's boot: it starts loading the hub as early as the page allows. hostplugin injects it
// inline at the end of the head, right after the bootstrap element, so it runs as soon as the
// page is parsed that far, before the tab script (web/lifeline.js) has arrived: in shared mode it
// starts the SharedWorker (web/worker.js, which fetches the wasm at its first line); in-page it
// starts the wasm's streaming compile and the runner's load. Nothing of the page's waits for it.
//
// The tab script begins with this same code and boots from it when the page ran no inline boot
// (a Content-Security-Policy that allows neither inline scripts nor this script's hash, or a page
// that loads the tab script itself): the hub then starts when the tab script runs, as early as
// the tab script alone can start it. Either way globalThis.__lifelineBoot() returns the one boot:
//   bootstrap, options      the bootstrap element's text (null without one) and the page's
//                           lifelineOptions as JSON ('' without; optionsError if it is not JSON)
//   mode                    'shared' or 'in-page'
//   wasm, run, worker       the client's URLs, from the script tag's data-wasm, data-run,
//                           data-worker
//   hubName(generation)     the shared hub's name: one hub per config (FNV-1a of the bootstrap
//                           and the options) and generation, which a hub that ended names for
//                           the fresh one ('' at first)
//   newWorker(generation)   a SharedWorker for that hub (throws where the browser refuses one)
//   compile()               the wasm's streaming compile, or undefined where the browser cannot
//                           stream (the runner then instantiates from the URL)
//   loadRunner()            a Promise that the runner (Go's wasm_exec.js and web/runner.js) is
//                           loaded
//   seen()                  notes that a shared hub ran here with this wasm: it is cached, and
//                           later boots do not fetch it ahead of the worker
//   take()                  what the boot started, once: {worker, failed} (failed: the worker's
//                           error event, if it came) or {error} in shared mode, {module,
//                           runner} in-page; null afterwards, or without a bootstrap
(function () {
  'use strict';

  if (globalThis.__lifelineBoot) return; // the inline boot ran: the tab script keeps its boot
  const SEEN = 'lifeline:wasm'; // localStorage: the wasm a shared hub last ran here (see warm)
  const data = (document.currentScript && document.currentScript.dataset) || {};
  let boot = null;
  globalThis.__lifelineBoot = () => boot || (boot = start());
  // Inline, the bootstrap is in the page already; a tab script that runs before it boots once
  // the page is parsed.
  if (document.getElementById('lifeline-bootstrap')) globalThis.__lifelineBoot();

  function start() {
    const el = document.getElementById('lifeline-bootstrap');
    const b = {
      bootstrap: el ? el.textContent : null, options: '', optionsError: null,
      wasm: data.wasm || '/lifeline.wasm', run: data.run || '', worker: data.worker || '',
    };
    const o = globalThis.lifelineOptions;
    if (o !== undefined) {
      try { b.options = JSON.stringify(o); } catch (e) { b.optionsError = e; }
    }
    const want = o && typeof o === 'object' ? o.mode : undefined;
    // The hub checks the option's value and names a bad one.
    b.mode = want === 'in-page' || !b.worker || typeof SharedWorker !== 'function' ? 'in-page' : 'shared';

    b.hubName = (generation) => {
      let h = 0x811c9dc5;
      for (const c of b.bootstrap + '\u0000' + b.options) h = Math.imul(h ^ c.codePointAt(0), 0x01000193) >>> 0;
      return 'lifeline:' + h.toString(16) + (generation ? ':' + generation : '');
    };
    b.newWorker = (generation) => {
      const url = new URL(b.worker, location.href);
      url.searchParams.set('run', new URL(b.run, location.href).href);
      url.searchParams.set('wasm', new URL(b.wasm, location.href).href);
      // extendedLifetime keeps the hub, and its socket, through a reload of the only tab.
      return new SharedWorker(url.href, { name: b.hubName(generation), extendedLifetime: true });
    };
    // A compile's failure is the runner's to report, when it awaits the module; until then it
    // is not an unhandled rejection.
    b.compile = () => {
      if (typeof WebAssembly !== 'object' || typeof WebAssembly.compileStreaming !== 'function') return undefined;
      const m = WebAssembly.compileStreaming(fetch(b.wasm));
      m.catch(() => {});
      return m;
    };
    let runner = null;
    b.loadRunner = () => runner || (runner = new Promise((resolve, reject) => {
      if (globalThis.__lifelineRun) return resolve();
      if (!b.run) return reject(new Error('no runner in the page (load runner.js, or set data-run)'));
      const s = document.createElement('script');
      s.src = b.run;
      s.onload = () => resolve();
      s.onerror = () => reject(new Error('its runner ' + b.run + ' could not be loaded'));
      document.head.appendChild(s);
    }));

    let started = null;
    if (b.bootstrap !== null) {
      if (b.mode === 'shared') {
        try {
          const w = b.newWorker('');
          started = { worker: w };
          // A worker that fails to start may say so before the tab script has come.
          w.onerror = (e) => { started.failed = e; };
          warm();
        } catch (e) { started = { error: e }; }
      } else {
        started = { module: b.compile(), runner: b.loadRunner() };
        started.runner.catch(() => {}); // the tab script reports it
      }
    }
    // The worker fetches the wasm at its first line, but its script must come first: on a first
    // visit the page starts the bytes moving now, and the worker's fetch joins this one in the
    // HTTP cache; the page's copy is dropped as it comes. Not once a hub has run here with this
    // wasm (the tab script notes it, seen): it is cached, and a tab of a running hub needs none.
    function warm() {
      let seen = null;
      try { seen = localStorage.getItem(SEEN); } catch (_) { /* no storage: warm */ }
      if (seen === b.wasm || typeof fetch !== 'function' || typeof WritableStream !== 'function') return;
      fetch(b.wasm).then((r) => r.body && r.body.pipeTo(new WritableStream()).catch(() => {}), () => {});
    }
    b.seen = () => { try { localStorage.setItem(SEEN, b.wasm); } catch (_) { /* no storage: warm again */ } };
    b.take = () => {
      const s = started;
      started = null;
      return s;
    };
    return b;
  }
})();
