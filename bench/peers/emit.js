'use strict';
// One JSON line per client event, the same shape bin/swarm prints, so that one analyser reads
// every kind: {"t": ms since the epoch, "id": client index, "event": "attempt"|"connected"|"disconnected"}.
const out = [];
let scheduled = false;

function flush() {
  scheduled = false;
  if (out.length) process.stdout.write(out.splice(0).join(''));
}

// line prints obj, a line with t, id and event first (bench/callline's lines carry more).
function line(obj) {
  out.push(JSON.stringify(obj) + '\n');
  if (!scheduled) {
    scheduled = true;
    setImmediate(flush);
  }
}
exports.line = line;

exports.emit = function emit(id, event) {
  line({ t: Date.now(), id, event });
};

// args reads "--name value" pairs.
exports.args = function args(defaults) {
  const a = { ...defaults };
  const argv = process.argv.slice(2);
  for (let i = 0; i + 1 < argv.length; i += 2) a[argv[i].replace(/^--?/, '')] = argv[i + 1];
  return a;
};

// Ends the process on SIGTERM/SIGINT after writing what is buffered.
exports.exitOnSignal = function exitOnSignal() {
  for (const s of ['SIGTERM', 'SIGINT']) process.on(s, () => { flush(); process.exit(0); });
};
