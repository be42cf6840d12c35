// The Lifeline loader: starts the page's wasm (lifeline.wasm with Go's wasm_exec.js) and
// watches it. If the Go program ever ends — it exits, or its runtime throws — the page says so:
// the indicator leaves whatever it showed for `failed`, with the cause; globalThis.lifeline
// answers that state and reports every further call on the console; the sockets the program
// had open are closed, so the Host does not keep a session nobody reads.
//
// <script src="/wasm_exec.js"></script> must come first. data-wasm on this script's tag names
// the wasm (default /lifeline.wasm).
(function () {
  'use strict';

  const me = document.currentScript;
  const wasmURL = (me && me.dataset.wasm) || '/lifeline.wasm';
  let stopped = false;

  function announce(detail) {
    window.dispatchEvent(new CustomEvent('lifeline:state', { detail }));
  }

  // Every socket the program opens, so that they can be closed if it ends.
  const sockets = new Set();
  const NativeWebSocket = globalThis.WebSocket;
  globalThis.WebSocket = new Proxy(NativeWebSocket, {
    construct(target, args, newTarget) {
      const ws = Reflect.construct(target, args, newTarget);
      sockets.add(ws);
      ws.addEventListener('close', () => sockets.delete(ws));
      return ws;
    },
  });

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

  function cause(fallback) {
    const line = stderr.split('\n').find((l) => /^(panic|fatal error):/.test(l));
    return line || fallback;
  }

  function failed(why) {
    if (stopped) return;
    stopped = true;
    const error = 'the Lifeline program stopped: ' + why + '; reload the page to reconnect';
    console.error('lifeline: ' + error);
    for (const ws of sockets) {
      try { ws.close(); } catch (_) { /* closing is best effort */ }
    }
    const state = { state: 'failed', error, slow: false, attempt: 0, failures: 0, nextAttempt: 0 };
    const dead = () => console.error('lifeline: the Lifeline program has stopped; reload the page');
    globalThis.lifeline = {
      state: () => state,
      onState(fn) {
        if (typeof fn === 'function') {
          try { fn(state); } catch (e) { console.error('lifeline: an onState listener threw:', e); }
        }
        return () => {};
      },
      reconnectNow: dead,
      stop: dead,
      start: dead,
      subscribe() { dead(); return () => {}; },
    };
    announce(state);
  }

  const go = new Go();
  const exit = go.exit;
  go.exit = (code) => {
    exit(code);
    failed(cause('it exited with code ' + code));
  };
  // A JS exception thrown inside the runtime (from one of its imports) unwinds the wasm stack
  // without an exit: the program is dead all the same.
  const resume = go._resume.bind(go);
  go._resume = () => {
    try {
      resume();
    } catch (e) {
      if (!stopped) failed(cause(String(e && e.message ? e.message : e)));
      throw e;
    }
  };

  WebAssembly.instantiateStreaming(fetch(wasmURL), go.importObject)
    .then((r) => go.run(r.instance))
    .then(() => failed(cause('it exited')))
    .catch((err) => {
      if (stopped) return;
      stopped = true;
      console.error('lifeline: the page could not load its wasm:', err);
      announce({ state: 'misconfigured', error: wasmURL + ': ' + err });
    });
})();
