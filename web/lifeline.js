// Lifeline in the page: the JS API (globalThis.lifeline), the lifeline:ready and lifeline:state
// events, and the start of the hub that keeps the connection (the Go program, lifeline.wasm:
// see wasm/main.go), to which it talks over a MessagePort.
//
//   lifeline.state()               the current status: {state, slow, attempt, failures,
//                                  nextAttempt, error, kind, retryAfter, at}
//   lifeline.onState(fn)           fn(status) now and on every change; returns a remover
//   lifeline.reconnectNow()        attempt at once, from the first cap
//   lifeline.stop(), .start()      end everything / begin a fresh sequence
//   lifeline.subscribe(stream, fn) fn(delivery) for each event or baseline of stream, and a last
//                                  fn({stream, error, denied}) if the subscription ends; returns
//                                  a remover
//
// The API exists as soon as this script has run: calls made before the hub is up are queued.
// Embedder code can never break the page: a listener or handler that throws is logged and the
// page carries on; a wrong call is reported on the console with the call and the value; a
// remover called twice does nothing. If the hub's program ever ends, the state becomes
// `failed`, never a connection that is gone.
//
// globalThis.lifelineOptions = {recovery, endpoint}, set before this script runs, overrides
// the bootstrap; the hub resolves it the same way.
//
// Two modes, the same API and behaviour. Shared (the default where the browser has
// SharedWorker): one hub per origin in a SharedWorker serves every tab over one socket; this
// script then loads no wasm at all. In-page (where SharedWorker is missing, or with
// lifelineOptions.mode = "in-page"): the hub runs in this page. A shared hub is named after
// the page's bootstrap and options, so a tab of another config (a Host whose config changed)
// gets a hub of its own; if the hub's program ends, every tab moves to a fresh one, and after
// repeated failures this page falls back to in-page.
//
// Data attributes of this script's tag: data-wasm (the wasm URL, default /lifeline.wasm),
// data-run (the runner with wasm_exec.js, loaded when the page has no Go yet), data-worker
// (the shared hub's worker script; without it, in-page mode).
(function () {
  'use strict';

  if (globalThis.lifeline && globalThis.lifeline.__client) return; // loaded twice

  const me = document.currentScript;
  const attr = (name, def) => (me && me.dataset[name]) || def;
  const wasmURL = attr('wasm', '/lifeline.wasm');
  const runURL = attr('run', '');
  const workerURL = attr('worker', '');
  const MAX_STREAM = 256; // bytes of UTF-8 (gateway/wire.MaxStreamName)

  let status = { state: 'connecting', slow: false, attempt: 0, failures: 0, nextAttempt: 0, error: '', kind: '', retryAfter: 0, at: Date.now() };
  let port = null;
  let dead = false;
  const outbox = []; // messages for the hub before its port exists
  const listeners = new Set();
  const subs = new Map(); // id → {stream, fn}
  let nextID = 1;
  const encoder = new TextEncoder();

  // ---- containing embedder code and reporting misuse

  function report(what, e) {
    console.error('lifeline: ' + what + ' threw; Lifeline carries on:', e);
  }

  function misuse(call, value) {
    console.error('lifeline: ' + call, value);
  }

  // once makes a remover: the first call acts, later ones do nothing.
  function once(f) {
    let done = false;
    return function remove() {
      if (done) return;
      done = true;
      f();
    };
  }
  const noop = () => {};

  function short(s) {
    const b = encoder.encode(s);
    if (b.length <= 32) return s;
    let n = 32;
    while (n > 0 && (b[n] & 0xc0) === 0x80) n--;
    return new TextDecoder().decode(b.subarray(0, n)) + '…';
  }

  // ---- talking to the hub

  function send(m) {
    if (dead) return;
    if (port) port.postMessage(m);
    else outbox.push(m);
  }

  function setStatus(s) {
    status = s;
    for (const fn of Array.from(listeners)) {
      try { fn(s); } catch (e) { report('an onState listener', e); }
    }
    // dispatchEvent reports a throwing listener to the window's error handler and returns.
    window.dispatchEvent(new CustomEvent('lifeline:state', { detail: s }));
  }

  function onHubMessage(e) {
    const m = e.data;
    if (!m || typeof m !== 'object') return;
    switch (m.t) {
      case 'status': {
        const s = {
          state: m.state, slow: !!m.slow, attempt: m.attempt, failures: m.failures,
          nextAttempt: m.nextAttempt, error: m.error || '', kind: m.kind || '', retryAfter: m.retryAfter || 0,
          at: m.at || Date.now(),
        };
        if (s.state === 'misconfigured') console.error('lifeline: connection settings are invalid: ' + s.error);
        else if (mode === 'shared' && s.error && s.error !== status.error) {
          // The shared hub logs to its worker's console, which the page's developer does not
          // see: each new failure is logged here too.
          console.warn('lifeline: the shared connection failed: attempt=' + s.attempt + ' failures=' + s.failures + ' err=' + s.error);
        }
        setStatus(s);
        break;
      }
      case 'delivery': {
        const sub = subs.get(m.id);
        if (!sub) return; // unsubscribed meanwhile
        const d = { stream: m.stream, seq: m.seq, reset: !!m.reset };
        try {
          if (m.reset) {
            d.epoch = m.epoch;
            if (m.baseline !== undefined) d.baseline = JSON.parse(m.baseline);
          } else {
            d.data = JSON.parse(m.data);
          }
        } catch (err) {
          console.error('lifeline: a delivery of "' + m.stream + '" is not JSON; dropped:', err);
          return;
        }
        try { sub.fn(d); } catch (err) { report('the lifeline.subscribe("' + short(sub.stream) + '") handler', err); }
        break;
      }
      case 'exited': // shared mode: the hub's program ended; every tab moves to a fresh hub
        hubFailed(m.error, m.next);
        break;
      case 'dropped': // shared mode: the hub took this tab for gone (it was silent too long)
        disconnect();
        startShared();
        break;
      case 'ended': {
        const sub = subs.get(m.id);
        if (!sub) return;
        subs.delete(m.id);
        try { sub.fn({ stream: sub.stream, error: m.error, denied: !!m.denied }); } catch (err) {
          report('the lifeline.subscribe("' + short(sub.stream) + '") handler', err);
        }
        break;
      }
    }
  }

  // connect makes p the port to the hub: the hello goes first, then every subscription still
  // wanted (a hub that replaced another gives each a fresh baseline), then what waited.
  function connect(p) {
    port = p;
    port.onmessage = onHubMessage;
    if (helloMsg) port.postMessage(helloMsg);
    for (const [id, sub] of subs) port.postMessage({ t: 'subscribe', id, stream: sub.stream });
    for (const m of outbox.splice(0)) port.postMessage(m);
  }

  function disconnect() {
    if (!port) return;
    port.onmessage = null;
    port = null;
  }

  // ---- the API

  const api = {
    __client: true,
    state() { return status; },
    onState(fn) {
      if (typeof fn !== 'function') {
        misuse('lifeline.onState(fn): fn must be a function, got', fn);
        return noop;
      }
      const entry = (s) => fn(s);
      listeners.add(entry);
      try { fn(status); } catch (e) { report('an onState listener', e); }
      return once(() => listeners.delete(entry));
    },
    reconnectNow() { send({ t: 'command', command: 'reconnect' }); },
    stop() { send({ t: 'command', command: 'stop' }); },
    start() { send({ t: 'command', command: 'start' }); },
    subscribe(stream, fn) {
      if (typeof stream !== 'string') {
        misuse('lifeline.subscribe(stream, fn): stream must be a string, got', stream);
        return noop;
      }
      const bytes = encoder.encode(stream).length;
      if (bytes < 1 || bytes > MAX_STREAM) {
        misuse('lifeline.subscribe(' + JSON.stringify(short(stream)) + ', fn): the protocol cannot carry this stream name (1..' +
          MAX_STREAM + ' bytes of UTF-8, got ' + bytes + '):', stream);
        return noop;
      }
      if (typeof fn !== 'function') {
        misuse('lifeline.subscribe(' + JSON.stringify(short(stream)) + ', fn): fn must be a function, got', fn);
        return noop;
      }
      if (dead) return noop;
      const id = nextID++;
      subs.set(id, { stream, fn });
      if (port) port.postMessage({ t: 'subscribe', id, stream }); // else connect sends it
      return once(() => {
        if (subs.delete(id)) send({ t: 'unsubscribe', id });
      });
    },
  };
  globalThis.lifeline = api;

  // ---- when the program ends

  function failed(why) {
    if (dead) return;
    dead = true;
    const error = 'the Lifeline program stopped: ' + why + '; reload the page to reconnect';
    console.error('lifeline: ' + error);
    const gone = () => console.error('lifeline: the Lifeline program has stopped; reload the page');
    api.reconnectNow = gone;
    api.stop = gone;
    api.start = gone;
    setStatus({ state: 'failed', slow: false, attempt: status.attempt, failures: status.failures, nextAttempt: 0, error, kind: 'failed', retryAfter: 0, at: Date.now() });
  }

  // ---- the browser's events

  // The network and the page's lifecycle. Whenever the world may have changed while the page
  // was not looking (shown again, resumed after a freeze, a new network, a machine that
  // slept), the hub probes its link: a dead one is found in seconds, not at the watchdog.
  const life = (event) => send({ t: 'life', event });
  window.addEventListener('online', () => send({ t: 'online', online: true }));
  window.addEventListener('offline', () => send({ t: 'online', online: false }));
  // On hide the page lets go, so it can enter the back-forward cache: in-page it stops its
  // connection; shared, it leaves the hub (the other tabs keep it). Shown again, it starts a
  // fresh sequence, or rejoins the hub (fresh baselines for its streams).
  window.addEventListener('pagehide', () => {
    if (mode === 'shared') {
      send({ t: 'bye' });
      disconnect();
    } else {
      send({ t: 'command', command: 'stop' });
    }
  });
  window.addEventListener('pageshow', (e) => {
    if (!e.persisted) life('pageshow');
    else if (mode === 'shared') startShared();
    else send({ t: 'command', command: 'start' });
  });
  document.addEventListener('visibilitychange', () => life(document.visibilityState === 'visible' ? 'visible' : 'hidden'));
  document.addEventListener('freeze', () => life('freeze'));
  document.addEventListener('resume', () => life('resume'));
  if (navigator.connection && navigator.connection.addEventListener) {
    navigator.connection.addEventListener('change', () => life('network'));
  }
  // A timer that fires far later than due means the machine slept (or the page was frozen).
  // Only while visible: a hidden tab's timers are throttled on purpose, and it adds no dials.
  const TICK = 5000, LATE = 10000;
  let lastTick = Date.now();
  setInterval(() => {
    const now = Date.now();
    if (now - lastTick > TICK + LATE && document.visibilityState === 'visible') life('late');
    lastTick = now;
  }, TICK);
  // Shared mode: a tab that closes without a word (a crash) is dropped by the hub once it
  // has been silent long enough (wasm/scope.go); a live one says so every 10 s.
  setInterval(() => { if (mode === 'shared' && port) port.postMessage({ t: 'ping' }); }, 10000);

  // ---- start

  let helloMsg = null;
  let mode = 'in-page';

  function hello() {
    const el = document.getElementById('lifeline-bootstrap');
    if (!el) {
      dead = true;
      const error = 'lifeline: no #lifeline-bootstrap element in the page (is the Host plugin installed?)';
      console.error(error);
      setStatus({ state: 'misconfigured', slow: false, attempt: 0, failures: 0, nextAttempt: 0, error, kind: 'misconfigured', retryAfter: 0, at: Date.now() });
      return false;
    }
    let options = '';
    if (globalThis.lifelineOptions !== undefined) {
      try { options = JSON.stringify(globalThis.lifelineOptions); } catch (e) {
        misuse('lifelineOptions cannot be read as JSON; ignored:', e);
      }
    }
    helloMsg = { t: 'hello', bootstrap: el.textContent, options, href: location.href, online: navigator.onLine };
    return true;
  }

  function pickMode() {
    const o = globalThis.lifelineOptions;
    const want = o && typeof o === 'object' ? o.mode : undefined;
    if (want === 'in-page' || !workerURL || typeof SharedWorker !== 'function') return 'in-page';
    return 'shared'; // the hub checks the option's value and names a bad one
  }

  // compile starts the wasm's streaming compilation, or returns undefined where the browser
  // cannot stream (the runner then instantiates from the URL). A failure is the runner's to
  // report, when it awaits the module; until then it is not an unhandled rejection.
  function compile(url) {
    if (typeof WebAssembly !== 'object' || typeof WebAssembly.compileStreaming !== 'function') return undefined;
    const m = WebAssembly.compileStreaming(fetch(url));
    m.catch(() => {});
    return m;
  }

  function startInPage() {
    mode = 'in-page';
    const channel = new MessageChannel();
    connect(channel.port1);
    // Compile while the runner loads: the bytes stream into the compiler as they arrive, not
    // after run.js has come and gone.
    const module = compile(wasmURL);
    const run = () => globalThis.__lifelineRun({ module, wasm: wasmURL, onExit: failed });
    const go = () => {
      globalThis.__lifelineConnect(channel.port2);
      run();
    };
    if (globalThis.__lifelineRun) {
      go();
    } else if (runURL) {
      const s = document.createElement('script');
      s.src = runURL;
      s.onload = go;
      s.onerror = () => failed('its runner ' + runURL + ' could not be loaded');
      document.head.appendChild(s);
    } else {
      failed('no runner in the page (load runner.js, or set data-run)');
    }
  }

  // The shared hub's name: one hub per config (FNV-1a of the bootstrap and the options),
  // and a generation, which a hub that ended names for the fresh one.
  let generation = '';
  const failures = []; // when shared hubs ended, for the fallback to in-page

  function hubName() {
    let h = 0x811c9dc5;
    for (const c of helloMsg.bootstrap + '\u0000' + helloMsg.options) {
      h = Math.imul(h ^ c.codePointAt(0), 0x01000193) >>> 0;
    }
    return 'lifeline:' + h.toString(16) + (generation ? ':' + generation : '');
  }

  function startShared() {
    mode = 'shared';
    let worker;
    try {
      const url = new URL(workerURL, location.href);
      url.searchParams.set('run', new URL(runURL, location.href).href);
      url.searchParams.set('wasm', new URL(wasmURL, location.href).href);
      // extendedLifetime keeps the hub, and its socket, through a reload of the only tab.
      worker = new SharedWorker(url.href, { name: hubName(), extendedLifetime: true });
    } catch (e) {
      console.warn('lifeline: no shared hub (' + e + '); this page keeps its own connection');
      startInPage();
      return;
    }
    worker.onerror = (e) => {
      if (port !== worker.port) return;
      disconnect();
      hubFailed('the shared worker failed to start: ' + (e.message || 'error'), '');
    };
    connect(worker.port);
  }

  // hubFailed moves this tab to a fresh shared hub (the one the ended hub named, so that
  // every tab meets in it), or to in-page at the third failure within a minute.
  function hubFailed(why, next) {
    console.error('lifeline: the shared hub stopped: ' + why);
    disconnect();
    const now = Date.now();
    failures.push(now);
    while (failures.length && failures[0] < now - 60000) failures.shift();
    if (failures.length > 2) {
      console.warn('lifeline: the shared hub keeps failing; this page keeps its own connection');
      startInPage();
      return;
    }
    generation = next || Math.random().toString(36).slice(2, 10);
    startShared();
  }

  function start() {
    if (pickMode() === 'shared') startShared();
    else startInPage();
  }

  // lifeline:ready fires once the document has parsed, so that every page script has had
  // the chance to listen for it; globalThis.lifeline is usable before.
  function ready() {
    const fire = () => window.dispatchEvent(new CustomEvent('lifeline:ready'));
    if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', fire, { once: true });
    else queueMicrotask(fire);
  }

  function boot() {
    if (hello()) start();
    ready();
  }

  // The bootstrap sits in the head, before this script when the Host injects both; a page
  // that loads this script earlier than its bootstrap is read once it has parsed.
  if (document.getElementById('lifeline-bootstrap') || document.readyState !== 'loading') boot();
  else document.addEventListener('DOMContentLoaded', boot, { once: true });
})();
