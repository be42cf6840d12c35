'use strict';
// A ws server with its default options: accepts every socket and says nothing.
//   node ws-server.js --port 3001
const { WebSocketServer } = require('ws');
const { args, exitOnSignal } = require('./emit');

const a = args({ port: '3001' });
exitOnSignal();

const wss = new WebSocketServer({ host: '127.0.0.1', port: Number(a.port) }, () => {
  console.log(JSON.stringify({ listening: wss.address().port }));
});
wss.on('connection', (ws) => { ws.on('error', () => {}); });
