'use strict';
// A socket.io 4.8.4 server with its default options. It also serves /page.html, the page of
// the page-load scenario, which loads the client bundle the server itself serves
// (/socket.io/socket.io.min.js) and records when it is connected; and answers the event
// "bench.run" of the calls scenario (sio-callers.js) as bench/cmd/callhost answers the call:
// a "run" line on stdout for each run (bench/callline), the data's workMs of work, then the ack
// {call: id}.
//   node sio-server.js --port 3000
const http = require('http');
const { Server } = require('socket.io');
const { args, exitOnSignal, line } = require('./emit');

const a = args({ port: '3000' });
exitOnSignal();

const page = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>socket.io page</title></head>
<body><div id="state">connecting</div>
<script src="/socket.io/socket.io.min.js"></script>
<script>
  const socket = io();
  socket.on('connect', () => {
    if (!window.__connectedAt) window.__connectedAt = performance.now();
    document.getElementById('state').textContent = 'connected';
  });
</script></body></html>`;

const server = http.createServer((req, res) => {
  if (req.url === '/page.html' || req.url === '/') {
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-store' });
    res.end(page);
    return;
  }
  // socket.io answers its own paths; everything else is a 404.
  if (!req.url.startsWith('/socket.io/')) {
    res.writeHead(404);
    res.end();
  }
});
const io = new Server(server);
io.on('connection', (socket) => {
  socket.on('bench.run', (data, ack) => {
    const call = data && typeof data.call === 'string' ? data.call : '';
    if (!call || typeof ack !== 'function') return; // not the scenario's event
    line({ t: Date.now(), id: -1, event: 'run', call });
    // No timer for no work: setTimeout(0) would add a turn of the event loop to every ack.
    if (data.workMs > 0) setTimeout(() => ack({ call }), data.workMs);
    else ack({ call });
  });
});
server.listen(Number(a.port), '127.0.0.1', () => {
  console.log(JSON.stringify({ listening: server.address().port }));
});
