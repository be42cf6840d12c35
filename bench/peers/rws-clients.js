'use strict';
// N reconnecting-websocket 4.4.0 clients with the library's default options, over the ws
// package (Node has no WebSocket of its own in v20).
//   node rws-clients.js --url ws://127.0.0.1:PORT/ --n 50
//
// Two things make N clients in one process behave like N pages, without touching an option:
//  - reconnecting-websocket draws its default minReconnectionDelay (1000 + random × 4000 ms)
//    once, when the module loads; a page loads it once per page, so each client here loads a
//    fresh copy of the module (else all N would share one delay and move in lockstep);
//  - ws throws an 'error' event nobody listens to (a browser's WebSocket never crashes the
//    page), so each socket gets a no-op error listener of its own.
const WS = require('ws');
const { emit, args, exitOnSignal } = require('./emit');

const a = args({ url: 'ws://127.0.0.1:3001/', n: '1' });
const n = Number(a.n);
exitOnSignal();

const rwsPath = require.resolve('reconnecting-websocket');

function freshRWS() {
  delete require.cache[rwsPath];
  return require(rwsPath);
}

for (let id = 0; id < n; id++) {
  const ReconnectingWebSocket = freshRWS();
  class CountedWS extends WS {
    constructor(url, protocols) {
      emit(id, 'attempt');
      super(url, protocols);
      this.on('error', () => {});
    }
  }
  let up = false;
  const rws = new ReconnectingWebSocket(a.url, [], { WebSocket: CountedWS }); // defaults otherwise
  rws.addEventListener('open', () => { up = true; emit(id, 'connected'); });
  rws.addEventListener('close', () => { if (up) { up = false; emit(id, 'disconnected'); } });
}
