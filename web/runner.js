// The Lifeline runner: starts the hub (lifeline.wasm, with Go's wasm_exec.js loaded before
// this script) where it is to run — the page itself (in-page mode) or a SharedWorker (shared
// mode, web/worker.js) — and watches it.
//
//   __lifelineRun({ module, wasm, onExit }) starts the program: from a compiled
//     WebAssembly.Module (module, a promise of one is fine) or by streaming the wasm at the URL
//     wasm. onExit(cause) is called once if the program ever ends (it exits, its runtime
//     throws, or it cannot be loaded).
//   __lifelineConnect(port) hands the program a MessagePort to a tab: queued until the program
//     runs, then attached at once (see wasm/main.go).
//
// Every socket the program opens is recorded in __lifelineSockets, so that all are closed if
// the program ends: the Host must not keep sessions nobody reads.
(function () {
  'use strict';

  const sockets = (globalThis.__lifelineSockets = new Set());
  const NativeWebSocket = globalThis.WebSocket;
  globalThis.WebSocket = new Proxy(NativeWebSocket, {
    construct(target, args, newTarget) {
      const ws = Reflect.construct(target, args, newTarget);
      sockets.add(ws);
      ws.addEventListener('close', () => sockets.delete(ws));
      return ws;
    },
  });

  globalThis.__lifelinePorts = globalThis.__lifelinePorts || [];
  globalThis.__lifelineConnect = (port) => {
    if (globalThis.__lifelineAttach) globalThis.__lifelineAttach(port);
    else globalThis.__lifelinePorts.push(port);
  };

  // The last lines the program wrote to stderr: a panic says why there.
  let stderr = '';
  const fs = globalThis.fs;
  if (fs && fs.writeSync) {
    const write = fs.writeSync.bind(fs);
    const text = new TextDecoder();
    fs.writeSync = (fd, buf) => {
      if (fd === 2) stderr = (stderr + text.decode(buf)).slice(-4000);
      return write(fd, buf);
    };
  }

  // The moments of the start, for the DevTools performance panel and the page-load benchmark
  // (which reads a worker's through the DevTools protocol); wasm/main.go marks
  // lifeline:go-ready.
  function mark(name) {
    if (typeof performance === 'object' && typeof performance.mark === 'function') performance.mark(name);
  }

  function cause(fallback) {
    const line = stderr.split('\n').find((l) => /^(panic|fatal error):/.test(l));
    return line || fallback;
  }

  globalThis.__lifelineRun = function run({ module, wasm, onExit }) {
    let ended = false;
    const end = (why) => {
      if (ended) return;
      ended = true;
      for (const ws of sockets) {
        try { ws.close(); } catch (_) { /* closing is best effort */ }
      }
      onExit(why);
    };
    const go = new Go();
    const exit = go.exit;
    go.exit = (code) => {
      exit(code);
      end(cause('it exited with code ' + code));
    };
    // A JS exception thrown inside the runtime (from one of its imports) unwinds the wasm
    // stack without an exit: the program is dead all the same.
    const resume = go._resume.bind(go);
    go._resume = () => {
      try {
        resume();
      } catch (e) {
        end(cause(String(e && e.message ? e.message : e)));
        throw e;
      }
    };
    const started = module
      ? Promise.resolve(module).then((m) => {
        mark('lifeline:compiled');
        return WebAssembly.instantiate(m, go.importObject);
      })
      : WebAssembly.instantiateStreaming(fetch(wasm), go.importObject).then((r) => r.instance);
    started
      .then((instance) => {
        mark('lifeline:instantiated');
        return go.run(instance);
      })
      .then(() => end(cause('it exited')))
      .catch((err) => end('it could not start: ' + err));
    return go;
  };
})();
