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
//   events(mode)            the URL the hub dials first: the events endpoint (lifelineOptions'
//                           or the bootstrap's, resolved against the page) as ws: or wss:, with
//                           the page's mode ('' if it cannot say)
//
// The Host's socket opens here too, while the wasm loads (openEarly): the hub's first dial
// takes it (gateway/carrier_js.go, takeEarly), so that on a first visit over a slow link the
// handshake's round trips overlap the download instead of following it. In-page the boot opens
// it; a shared hub's worker opens its own at the start (web/worker.js, the same openEarly).
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

    // gateway/gateway.go's normalise and dialURL make the same of it; where they do not, the
    // hub leaves the early socket and opens its own.
    b.events = (mode) => {
      try {
        let endpoint = o && typeof o === 'object' && typeof o.endpoint === 'string' ? o.endpoint : '';
        if (!endpoint) endpoint = JSON.parse(b.bootstrap).endpoint || '/_lifeline/events';
        const u = new URL(endpoint, location.href);
        if (u.protocol === 'http:' || u.protocol === 'ws:') u.protocol = 'ws:';
        else if (u.protocol === 'https:' || u.protocol === 'wss:') u.protocol = 'wss:';
        else return '';
        u.hash = '';
        return u.href + (u.search ? '&' : '?') + 'lifeline-mode=' + encodeURIComponent(mode);
      } catch (_) { return ''; } // the hub says what is wrong with the config
    };
    // One hub per config and per events URL: a relative endpoint names another Host from
    // another page, and the worker's URL carries it.
    b.hubName = (generation) => {
      let h = 0x811c9dc5;
      for (const c of b.bootstrap + '\u0000' + b.options + '\u0000' + b.events('shared')) h = Math.imul(h ^ c.codePointAt(0), 0x01000193) >>> 0;
      return 'lifeline:' + h.toString(16) + (generation ? ':' + generation : '');
    };
    b.newWorker = (generation) => {
      const url = new URL(b.worker, location.href);
      url.searchParams.set('run', new URL(b.run, location.href).href);
      url.searchParams.set('wasm', new URL(b.wasm, location.href).href);
      url.searchParams.set('events', b.events('shared'));
      // extendedLifetime keeps the hub, and its socket, through a reload of the only tab. An
      // engine reads the options it knows (WebIDL reads each member of the dictionary), so the
      // getter runs only where the engine has it; b.lingers tells the tab script (Firefox and
      // WebKit end a hub with its last tab: a reload there opens a new connection).
      let lingers = false;
      const w = new SharedWorker(url.href, { name: b.hubName(generation), get extendedLifetime() { lingers = true; return true; } });
      b.lingers = lingers;
      return w;
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
        openEarly(b.events('in-page'));
        started = { module: b.compile(), runner: b.loadRunner() };
        started.runner.catch(() => {}); // the tab script reports it
      }
    }
    // The worker fetches the wasm at its first line, but its script must come first: on a first
    // visit the page starts the bytes moving now, and the worker's fetch joins this one in the
    // HTTP cache; the page's copy is dropped as it comes. Not once a hub has run here with this
    // wasm (the tab script notes it, seen): it is cached, and a tab of a running hub needs none.
    // Not in Apple's WebKit (Safari, every browser on iOS, WebKitGTK): its HTTP cache joins no
    // request to one in flight, so the worker would fetch the wasm a second time beside this
    // copy, the two sharing the link (bench/RESULTS.md, engines: WebKit's shared first visit
    // over 4G).
    function warm() {
      let seen = null;
      try { seen = localStorage.getItem(SEEN); } catch (_) { /* no storage: warm */ }
      if (seen === b.wasm || navigator.vendor === 'Apple Computer, Inc.') return;
      if (typeof fetch !== 'function' || typeof WritableStream !== 'function') return;
      fetch(b.wasm).then((r) => r.body && r.body.pipeTo(new WritableStream()).catch(() => {}), () => {});
    }
    // openEarly BEGIN: web/boot.js and web/worker.js have this same function (hostplugin/internal/client's
    // tests hold them alike)
    // openEarly opens the Host's socket at url and keeps every event of it, in order, for the
    // hub's first dial, which takes it with globalThis.__lifelineEarly.take() once it has
    // checked that url is the one it dials (or leaves it with drop()). A socket not taken in
    // EARLY_MS (a config the hub refuses, a page that never starts it) is closed: the Host
    // keeps no session nobody reads. The socket carries a random dialer id
    // (lifeline-dialer), which the hub adopts for its own dials (gateway's earlyDialer): a
    // later dial of the hub ends this socket's handshake at the Host even where the browser
    // cannot (Firefox leaves a connecting socket's upgrade pending when it is closed).
    function openEarly(url) {
      const EARLY_MS = 30000;
      if (!url || typeof WebSocket !== 'function' || (typeof navigator === 'object' && navigator.onLine === false)) return;
      let ws;
      try {
        const id = Array.from(crypto.getRandomValues(new Uint8Array(16)), (x) => x.toString(16).padStart(2, '0')).join('');
        url += (url.includes('?') ? '&' : '?') + 'lifeline-dialer=' + id;
      } catch (_) { /* no crypto: the hub's dials have their own id */ }
      try {
        ws = new WebSocket(url, 'lifeline.v1');
      } catch (_) { return; } // the hub's own dial says why
      ws.binaryType = 'arraybuffer';
      const events = [];
      const keep = (e) => events.push(e);
      const types = ['open', 'message', 'error', 'close'];
      for (const t of types) ws.addEventListener(t, keep);
      const release = () => {
        clearTimeout(timer);
        for (const t of types) ws.removeEventListener(t, keep);
        if (globalThis.__lifelineEarly === early) delete globalThis.__lifelineEarly;
      };
      const drop = () => {
        release();
        try { ws.close(1000, 'not taken'); } catch (_) { /* closed already */ }
      };
      const timer = setTimeout(drop, EARLY_MS);
      const early = {
        url,
        ws,
        take() {
          release();
          if (globalThis.__lifelineSockets) globalThis.__lifelineSockets.add(ws); // web/runner.js
          return { ws, events };
        },
        drop,
      };
      globalThis.__lifelineEarly = early;
    }
    // openEarly END

    b.seen = () => { try { localStorage.setItem(SEEN, b.wasm); } catch (_) { /* no storage: warm again */ } };
    b.take = () => {
      const s = started;
      started = null;
      return s;
    };
    return b;
  }
})();
