// Lifeline's hub in a SharedWorker: shared mode, one connection for every tab of an origin
// (web/lifeline.js starts it as new SharedWorker(this URL, {name, extendedLifetime})). It
// loads the runner (Go's wasm_exec.js and web/runner.js), starts the same wasm as in-page
// mode, and hands it each tab's MessagePort as the tab connects; the first connect comes
// before Go runs, so the runner queues the ports until the program takes them over.
//
// If the program ends, every tab is told ({t:"exited", error, next}: next names the fresh
// hub all of them move to) and the worker closes a moment later, its sockets with it.
//
// Query parameters (set by the tab script): run, the runner, and wasm, the module (URLs of
// this origin); events, the URL the hub dials first, whose socket opens at once (openEarly),
// while the wasm loads, for the hub's first dial to take.
(function () {
  'use strict';

  if (typeof performance === 'object' && typeof performance.mark === 'function') performance.mark('lifeline:worker');
  const here = new URL(self.location.href);
  const sameOrigin = (name) => {
    const v = here.searchParams.get(name);
    const u = v ? new URL(v, here) : null;
    if (!u || u.origin !== here.origin) throw new Error('lifeline worker: ?' + name + ' must name a URL of this origin, got ' + v);
    return u.href;
  };
  const ports = new Set();
  let ended = null;
  const EXIT_LINGER = 250; // ms between telling the tabs the program ended and closing

  // A Web Lock held for this worker's life: a tab asks for it and is granted it only once the
  // worker is gone, which is how it learns that the browser ended the worker without a word
  // (WebKit does when one of several windows closes: web/lifeline.js watchHub). Each tab is
  // told its name once the worker holds it, never before (a grant would then mean nothing).
  // instance names this worker among those of its name: WebKitGTK can let go of the lock of a
  // worker that lives on, which a tab tells from a worker that ended by finding the same one.
  let alive = null;
  if (typeof navigator === 'object' && navigator.locks && typeof navigator.locks.request === 'function') {
    const lock = 'lifeline:hub:' + self.name;
    const instance = Math.random().toString(36).slice(2, 12);
    navigator.locks.request(lock, () => {
      alive = { t: 'alive', lock, instance };
      for (const p of ports) {
        try { p.postMessage(alive); } catch (_) { /* a tab that is gone */ }
      }
      return new Promise(() => {}); // held until the worker ends
    }).catch(() => { /* no lock: the tabs' pings still find a hub that went silent */ });
  }

  self.onconnect = (e) => {
    for (const p of e.ports) {
      if (ended) {
        p.postMessage(ended);
        continue;
      }
      ports.add(p);
      if (alive) p.postMessage(alive);
      self.__lifelineConnect(p);
    }
  };

  function exited(why) {
    ended = { t: 'exited', error: why, next: Math.random().toString(36).slice(2, 10) };
    for (const p of ports) {
      try { p.postMessage(ended); } catch (_) { /* a tab that is gone */ }
    }
    // The lock goes with the worker, and a tab granted it before it has read this message
    // would rejoin this name rather than move to next with the others: the worker lingers a
    // moment, so that every tab has read it and let go of its request first.
    setTimeout(() => self.close(), EXIT_LINGER);
  }

  try {
    openEarly(here.searchParams.get('events') || '');
    // Compile first: importScripts blocks this worker until the runner has loaded, and the
    // module's bytes can stream into the compiler meanwhile.
    const wasm = sameOrigin('wasm');
    const module = typeof WebAssembly.compileStreaming === 'function' ? WebAssembly.compileStreaming(fetch(wasm)) : undefined;
    if (module) module.catch(() => {});
    importScripts(sameOrigin('run'));
    // The program closes the worker itself once no tab is left (hub.Options.OnIdle).
    self.__lifelineClose = () => self.close();
    self.__lifelineRun({ module, wasm, onExit: exited });
  } catch (err) {
    exited('the worker could not start: ' + err);
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
})();
