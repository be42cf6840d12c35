'use strict';
// The socket.io-client 4.8.4 callers of the calls scenario (bench/harness, scenario 10), as
// bench/cmd/callpages is Lifeline's: N clients, each with a Manager of its own and the
// library's default connection options, that connect and wait; on SIGUSR2 each makes --calls
// calls of the event "bench.run" (sio-server.js) — one every --every ms whatever the link is
// doing, or with --seq 1 also none before the previous one's outcome — and prints, for each,
// what its caller was told (bench/callline's "call" line), then one "settled" line once every
// call has one.
//   --mode retries: socket.emitWithAck with the socket options {retries, ackTimeout: timeout}
//                   (the library re-sends an unacknowledged event, one event at a time);
//   --mode ack:     socket.timeout(timeout).emit(ev, data, (err, reply) => …), the ack callback.
// Every error of either is "failed": socket.io-client's errors ("operation has timed out",
// "socket has been disconnected") do not say whether the event went out. A call with no
// outcome --timeout + 10 s after the last call was made is printed "none".
//   node sio-callers.js --url http://127.0.0.1:PORT --n 20 --calls 80 --every 1000 --work 20 --mode retries
const { Manager } = require('socket.io-client');
const { emit, line, args, exitOnSignal } = require('./emit');

const a = args({ url: 'http://127.0.0.1:3000', n: '1', calls: '10', every: '1000', seq: '0', work: '0', timeout: '30000', mode: 'ack', retries: '3' });
const n = Number(a.n), calls = Number(a.calls), every = Number(a.every), work = Number(a.work);
const timeout = Number(a.timeout), retries = Number(a.retries), seq = a.seq === '1';
if (!['ack', 'retries'].includes(a.mode)) {
  console.error(`sio-callers: --mode must be ack or retries, got ${JSON.stringify(a.mode)}`);
  process.exit(2);
}
exitOnSignal();

const settleGrace = 10000; // after the last call is made, past its timeout
const since = (t0) => Math.round((performance.now() - t0) * 1000) / 1000; // ms, to the µs
const clients = [];
for (let id = 0; id < n; id++) {
  const manager = new Manager(a.url); // default options: nothing passed
  let up = false;
  emit(id, 'attempt'); // the first open happens now (autoConnect)
  manager.on('reconnect_attempt', () => emit(id, 'attempt'));
  const socket = manager.socket('/', a.mode === 'retries' ? { retries, ackTimeout: timeout } : {});
  socket.on('connect', () => { up = true; emit(id, 'connected'); });
  socket.on('disconnect', () => { if (up) { up = false; emit(id, 'disconnected'); } });
  clients.push({ id, socket });
}

let lastMade = 0; // performance.now() of the latest call made

// call makes call k of client c; the promise settles once the call's line is printed.
function call(c, k, pending) {
  const id = `${c.id}-${k}`;
  const data = { call: id, workMs: work };
  const t0 = performance.now();
  lastMade = t0;
  return new Promise((resolve) => {
    pending.set(id, { c, t0, resolve });
    const told = (err, reply) => {
      if (!pending.delete(id)) return; // printed "none" already
      let l = { told: 'ok' };
      if (err) l = { told: 'failed', why: String(err.message || err) };
      else if (!reply || reply.call !== id) l = { told: 'mixed', why: `the reply ${JSON.stringify(reply)}` };
      line({ t: Date.now(), id: c.id, event: 'call', call: id, ...l, ms: since(t0) });
      resolve();
    };
    if (a.mode === 'retries') c.socket.emitWithAck('bench.run', data).then((r) => told(null, r), (e) => told(e));
    else c.socket.timeout(timeout).emit('bench.run', data, told);
  });
}

async function run(c, start, pending) {
  const offset = (every * c.id) / n;
  const made = [];
  for (let k = 0; k < calls; k++) {
    const wait = start + offset + k * every - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    if (seq) await call(c, k, pending);
    else made.push(call(c, k, pending));
  }
  return Promise.all(made);
}

process.once('SIGUSR2', async () => {
  const start = performance.now();
  const pending = new Map(); // call id → {c, t0, resolve}: made, not told
  // A call still without an outcome timeout + grace after the latest call was made never
  // gets one here: it is printed "none" (with the schedule, the latest is the last; with
  // --seq, the one stuck).
  const check = setInterval(() => {
    if (performance.now() <= lastMade + timeout + settleGrace) return;
    for (const [id, p] of pending) {
      line({ t: Date.now(), id: p.c.id, event: 'call', call: id, told: 'none', ms: since(p.t0) });
      p.resolve();
    }
    pending.clear();
  }, 500);
  await Promise.all(clients.map((c) => run(c, start, pending)));
  clearInterval(check);
  line({ t: Date.now(), id: -1, event: 'settled', made: n * calls });
});
