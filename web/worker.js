// Lifeline's hub in a SharedWorker: shared mode, one connection for every tab of an origin
// (web/lifeline.js starts it as new SharedWorker(this URL, {name, extendedLifetime})). It
// loads the runner (Go's wasm_exec.js and web/runner.js), starts the same wasm as in-page
// mode, and hands it each tab's MessagePort as the tab connects; the first connect comes
// before Go runs, so the runner queues the ports until the program takes them over.
//
// If the program ends, every tab is told ({t:"exited", error, next}: next names the fresh
// hub all of them move to) and the worker closes, its sockets with it.
//
// Query parameters (set by the tab script, same-origin URLs): run, the runner; wasm, the
// module.
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

  self.onconnect = (e) => {
    for (const p of e.ports) {
      if (ended) {
        p.postMessage(ended);
        continue;
      }
      ports.add(p);
      self.__lifelineConnect(p);
    }
  };

  function exited(why) {
    ended = { t: 'exited', error: why, next: Math.random().toString(36).slice(2, 10) };
    for (const p of ports) {
      try { p.postMessage(ended); } catch (_) { /* a tab that is gone */ }
    }
    self.close();
  }

  try {
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
})();
