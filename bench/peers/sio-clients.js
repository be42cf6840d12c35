'use strict';
// N socket.io-client 4.8.4 clients with the library's default options, each with a Manager of
// its own, as N pages would have (io(url) would multiplex them all over one Manager).
//   node sio-clients.js --url http://127.0.0.1:PORT --n 50
const { Manager } = require('socket.io-client');
const { emit, args, exitOnSignal } = require('./emit');

const a = args({ url: 'http://127.0.0.1:3000', n: '1' });
const n = Number(a.n);
exitOnSignal();

for (let id = 0; id < n; id++) {
  const manager = new Manager(a.url); // default options: nothing passed
  let up = false;
  emit(id, 'attempt'); // the first open happens now (autoConnect)
  manager.on('reconnect_attempt', () => emit(id, 'attempt'));
  const socket = manager.socket('/');
  socket.on('connect', () => { up = true; emit(id, 'connected'); });
  socket.on('disconnect', () => { if (up) { up = false; emit(id, 'disconnected'); } });
  socket.on('tick', (seq) => emit(id, 'tick:' + seq));
}
