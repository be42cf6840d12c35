// Test fixtures: start real cmd/host processes with the config a scenario needs, switch their
// fault panel, read their health, restart them gracefully (SIGUSR2, following the successor),
// and record every data-state the indicator takes.
const { spawn } = require('child_process');
const fs = require('fs');
const net = require('net');
const os = require('os');
const path = require('path');
const readline = require('readline');

const root = path.resolve(__dirname, '..', '..');
const hostBin = path.join(root, 'bin', 'host');
const embedBin = path.join(root, 'bin', 'embed');

// freePort asks for a loopback port that is free now and that this worker has not handed out
// before: the kernel gives a port closed a moment ago to the next pick as readily as any other,
// so a repeat is held open while it is asked again (internal/test/testbed.FreePort does the same).
//
// With LIFELINE_E2E_PORTS=lo-hi it picks in that range instead, below the kernel's ephemeral
// ports: make test runs the two modes' suites side by side, each in a range of its own, so that
// neither can be handed a port the other picked a moment ago and has not bound yet.
const handedOut = new Set();
function listenOn(port) {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(port, '127.0.0.1', () => resolve(srv));
  });
}
const listenAny = () => listenOn(0);
const portRange = (() => {
  const v = process.env.LIFELINE_E2E_PORTS;
  if (!v) return null;
  const m = /^(\d+)-(\d+)$/.exec(v);
  const [lo, hi] = m ? [Number(m[1]), Number(m[2])] : [];
  if (!m || lo < 1024 || hi > 65535 || hi - lo < 100) {
    throw new Error(`LIFELINE_E2E_PORTS must be lo-hi, 1024 ≤ lo, hi ≤ 65535, at least 100 ports; got ${JSON.stringify(v)}`);
  }
  return [lo, hi];
})();
async function freePortInRange([lo, hi]) {
  for (let i = 0; i < 256; i++) {
    const port = lo + Math.floor(Math.random() * (hi - lo + 1));
    if (handedOut.has(port)) continue;
    let srv;
    try {
      srv = await listenOn(port);
    } catch {
      continue; // in use: another pick
    }
    handedOut.add(port);
    await new Promise((ok) => srv.close(ok));
    return port;
  }
  throw new Error(`freePort: no free port in ${lo}-${hi} after 256 picks`);
}
async function freePort() {
  if (portRange) return freePortInRange(portRange);
  const held = [];
  try {
    for (let i = 0; i < 64; i++) {
      const srv = await listenAny();
      const { port } = srv.address();
      if (!handedOut.has(port)) {
        handedOut.add(port);
        await new Promise((ok) => srv.close(ok));
        return port;
      }
      held.push(srv);
    }
    throw new Error('freePort: the kernel offered 64 ports in a row that were handed out before');
  } finally {
    for (const srv of held) srv.close();
  }
}

// waitFor checks fn every interval ms until it is true (and resolves with its value) or timeout
// ms have passed. Without an interval it checks every 50 ms for a second, then less and less
// often, to every 250 ms: fn is often a round trip to a page (5-10 ms of CPU for the browser, its
// driver and this process), and a long wait at 50 ms kept a lane's CPU busy for nothing. A caller
// that times something from here gives its interval.
async function waitFor(fn, { timeout = 10_000, interval, what = 'condition' } = {}) {
  const start = Date.now();
  const deadline = start + timeout;
  let every = interval || 50;
  let last;
  while (Date.now() < deadline) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    await new Promise((r) => setTimeout(r, Math.min(every, Math.max(0, deadline - Date.now()))));
    if (!interval && Date.now() - start > 1000) every = Math.min(250, every * 1.5);
  }
  throw new Error(`timed out after ${timeout} ms waiting for ${what}${last ? ': ' + last.message : ''}`);
}

// gone reports whether pid has exited (a zombie waiting for its reaper counts as gone).
function gone(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) === 'Z';
  } catch {
    return true;
  }
}

function readPID(file) {
  try {
    const pid = Number(fs.readFileSync(file, 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

class Host {
  constructor(port, configPath, proc, logs, pidFile, argv) {
    this.argv = argv; // the command line, for restart
    this.port = port;
    this.configPath = configPath;
    this.proc = proc;
    this.logs = logs;
    this.pidFile = pidFile;
    // The process serving now: proc, or after handoff() its successor (not our child: it
    // is followed through the PID file the Host writes).
    this.pid = proc.pid;
    this.origin = `http://127.0.0.1:${port}`;
  }

  url(p = '/') {
    return this.origin + p;
  }

  async fault(mode) {
    const res = await fetch(this.url('/_lifeline/faults'), { method: 'POST', body: mode });
    if (!res.ok) throw new Error(`fault ${mode}: ${res.status} ${await res.text()}`);
  }

  async health() {
    const res = await fetch(this.url('/_lifeline/health'));
    return res.json();
  }

  // writeConfig replaces the config file and asks the Host to reload it (SIGHUP).
  async reload(config) {
    fs.writeFileSync(this.configPath, JSON.stringify(config));
    const before = this.logs.length;
    this.proc.kill('SIGHUP');
    await waitFor(() => this.logs.slice(before).some((l) => /reload/i.test(l)), { what: 'the config reload' });
  }

  // handoff is a graceful restart: SIGUSR2 makes the serving process start its successor,
  // which inherits the listening socket; once the successor is ready (it writes its PID to
  // the PID file), the old process drains its pages to it and exits. It resolves when the
  // old process is gone, with both PIDs and the moments (ms since the epoch) the successor
  // was seen ready and the old process seen gone (polled every 5 ms).
  async handoff() {
    const oldPid = this.pid;
    process.kill(oldPid, 'SIGUSR2');
    let readyAt = 0;
    const newPid = await waitFor(() => {
      const pid = readPID(this.pidFile);
      if (pid && pid !== oldPid) readyAt = Date.now();
      return pid && pid !== oldPid ? pid : null;
    }, { interval: 5, what: `a successor of ${oldPid} in ${this.pidFile}` });
    await waitFor(() => gone(oldPid), { interval: 5, what: `process ${oldPid} to exit after the handoff` });
    const goneAt = Date.now();
    this.pid = newPid;
    return { oldPid, newPid, readyAt, goneAt };
  }

  // restart is a plain restart: SIGTERM (the Host closes every page with 1012, "service
  // restart"), down for downMs once the process is gone, then the same command line again on
  // the same port. It resolves once the new process answers its health, with the moments (ms
  // since the epoch) the old process was seen gone and the new one seen up (polled every 5 ms).
  async restart(downMs = 0) {
    const oldPid = this.pid;
    process.kill(oldPid, 'SIGTERM');
    await waitFor(() => gone(oldPid), { interval: 5, what: `process ${oldPid} to exit on SIGTERM` });
    const goneAt = Date.now();
    if (downMs > 0) await new Promise((r) => setTimeout(r, downMs)); // the restart's length, on purpose
    const proc = spawn(this.argv[0], this.argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
    keepLines(proc, this.logs);
    this.proc = proc;
    this.pid = proc.pid;
    await waitFor(async () => (await fetch(this.url('/_lifeline/health'))).ok, { interval: 5, what: `bin/host again on ${this.port}` });
    return { oldPid, newPid: proc.pid, goneAt, upAt: Date.now() };
  }

  // stop ends whichever process serves now (and the first one, should it still run): SIGTERM,
  // then SIGKILL after 10 s.
  async stop() {
    const pids = [...new Set([this.pid, this.proc.pid])].filter((pid) => !gone(pid));
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGTERM');
      } catch {}
    }
    try {
      await waitFor(() => pids.every(gone), { timeout: 10_000, what: `${pids} to exit` });
    } catch {
      for (const pid of pids) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {}
      }
    }
  }
}

// keepLines appends every line proc writes (stdout and stderr) to logs, whole: a pipe's chunk
// may end inside a line, which split on its own would cut in two and no test would match.
function keepLines(proc, logs) {
  for (const s of [proc.stdout, proc.stderr]) {
    readline.createInterface({ input: s, crlfDelay: Infinity }).on('line', (l) => { if (l) logs.push(l); });
  }
}

// startHost runs bin/host with config (an object for -config) and the fault panel on.
async function startHost(config = {}) {
  const port = await freePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lifeline-e2e-'));
  const configPath = path.join(dir, 'config.json');
  const pidFile = path.join(dir, 'host.pid');
  fs.writeFileSync(configPath, JSON.stringify(config));
  const logs = [];
  const argv = [hostBin, '-addr', `127.0.0.1:${port}`, '-config', configPath, '-web', path.join(root, 'web'), '-faults', '-pidfile', pidFile];
  const proc = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
  keepLines(proc, logs);
  const host = new Host(port, configPath, proc, logs, pidFile, argv);
  try {
    await waitFor(async () => (await fetch(host.url('/_lifeline/health'))).ok, { what: `bin/host on ${port}` });
  } catch (e) {
    proc.kill('SIGKILL');
    throw new Error(`${e.message}\n${logs.join('\n')}`);
  }
  return host;
}

// recordStates makes the page keep every data-state the indicator takes, in order, from the
// first paint on (a MutationObserver installed before any page script runs).
async function recordStates(page) {
  await page.addInitScript(() => {
    window.__states = [];
    const start = () => {
      const el = document.getElementById('connection-status');
      if (!el) return;
      const push = () => {
        const s = el.dataset.state;
        if (window.__states[window.__states.length - 1] !== s) window.__states.push(s);
      };
      push();
      new MutationObserver(push).observe(el, { attributes: true, attributeFilter: ['data-state'] });
    };
    document.addEventListener('DOMContentLoaded', start);
  });
}

async function states(page) {
  return page.evaluate(() => window.__states.slice());
}

async function waitState(page, state, timeout = 10_000) {
  await page.waitForSelector(`#connection-status[data-state="${state}"]`, { timeout });
}

// collectTicks subscribes (from the test) to the ticks stream and keeps every delivery.
async function collectTicks(page) {
  await page.waitForFunction(() => globalThis.lifeline && typeof globalThis.lifeline.subscribe === 'function');
  await page.evaluate(() => {
    window.__ticks = [];
    globalThis.lifeline.subscribe('ticks', (d) => window.__ticks.push(d.reset ? { reset: true, seq: d.seq, epoch: d.epoch } : { seq: d.seq, n: d.data.n }));
  });
}

async function ticks(page) {
  return page.evaluate(() => window.__ticks.slice());
}

// assertNoGap checks that the events are consecutive by seq and by n, with no repeat, across
// any explicit resets (after a reset the numbering may start over).
function gapsIn(list) {
  const problems = [];
  let prev = null;
  for (const d of list) {
    if (d.reset) {
      prev = { seq: d.seq, n: null };
      continue;
    }
    if (prev && d.seq !== prev.seq + 1) problems.push(`seq ${prev.seq} -> ${d.seq}`);
    if (prev && prev.n !== null && d.n !== prev.n + 1) problems.push(`n ${prev.n} -> ${d.n}`);
    prev = d;
  }
  return problems;
}

// startProxy puts bin/faultproxy (bench/cmd/faultproxy) in front of host: pages load the
// Host through proxy.url(), so their sockets cross it, and proxy.mode('stall') makes every
// open connection half-open (nothing forwarded, nothing closed); connections made after the
// mode goes back to 'up' are forwarded again. stop() ends it.
async function startProxy(host) {
  const readline = require('readline');
  const proc = spawn(path.join(root, 'bin', 'faultproxy'), ['-listen', '127.0.0.1:0', '-control', '127.0.0.1:0',
    '-upstream', `127.0.0.1:${host.port}`, '-exit-on-eof', '-log', os.devNull], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = readline.createInterface({ input: proc.stdout });
  const ready = await new Promise((ok, fail) => {
    lines.once('line', (l) => ok(JSON.parse(l)));
    proc.once('exit', (code) => fail(new Error(`faultproxy exited with ${code}`)));
  });
  return {
    url: (p = '/') => `http://${ready.listen}${p}`,
    async mode(m) {
      const res = await fetch(`http://${ready.control}/mode?mode=${m}`, { method: 'POST' });
      if (!res.ok) throw new Error(`faultproxy mode ${m}: ${res.status}`);
    },
    async stop() {
      if (proc.exitCode !== null) return;
      const exited = new Promise((r) => proc.once('exit', r));
      proc.stdin.end();
      await exited;
    },
  };
}


// startEmbed runs bin/embed (the embedding example, examples/embed) with config (an object for
// -config). It has no health endpoint: it is up once its page answers. It returns a Host for
// its port, logs and stop; the demo's fault panel and health are not there.
async function startEmbed(config = {}) {
  const port = await freePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lifeline-e2e-embed-'));
  const configPath = path.join(dir, 'config.json');
  fs.writeFileSync(configPath, JSON.stringify(config));
  const logs = [];
  const proc = spawn(embedBin, ['-addr', `127.0.0.1:${port}`, '-config', configPath], { stdio: ['ignore', 'pipe', 'pipe'] });
  keepLines(proc, logs);
  const app = new Host(port, configPath, proc, logs, null);
  try {
    await waitFor(async () => (await fetch(app.url('/'))).ok, { what: `bin/embed on ${port}` });
  } catch (e) {
    proc.kill('SIGKILL');
    throw new Error(`${e.message}\n${logs.join('\n')}`);
  }
  return app;
}

// sharedWorker attaches DevTools to the browser's shared worker (the hub of shared mode), which
// Playwright does not expose. It returns send(method, params) into the worker, on(method, fn)
// for its events, and detach(). Playwright's CDPSession cannot address a flattened child
// session, so the messages go through Target.sendMessageToTarget. Attaching changes a worker's
// lifetime: detach before a test of it.
async function sharedWorker(browser) {
  const cdp = await browser.newBrowserCDPSession();
  const { targetInfos } = await cdp.send('Target.getTargets');
  const w = targetInfos.find((t) => t.type === 'shared_worker');
  if (!w) {
    await cdp.detach();
    throw new Error('no shared worker among the targets: ' + targetInfos.map((t) => t.type).join(', '));
  }
  const { sessionId } = await cdp.send('Target.attachToTarget', { targetId: w.targetId, flatten: false });
  let id = 0;
  const pending = new Map();
  const listeners = new Map();
  cdp.on('Target.receivedMessageFromTarget', (e) => {
    if (e.sessionId !== sessionId) return;
    const m = JSON.parse(e.message);
    if (m.id !== undefined && pending.has(m.id)) {
      const { resolve, reject, method } = pending.get(m.id);
      pending.delete(m.id);
      if (m.error) reject(new Error(`${method} in the shared worker: ${m.error.message}`));
      else resolve(m.result);
      return;
    }
    for (const fn of listeners.get(m.method) || []) fn(m.params);
  });
  return {
    send(method, params = {}) {
      return new Promise((resolve, reject) => {
        const i = ++id;
        pending.set(i, { resolve, reject, method });
        cdp.send('Target.sendMessageToTarget', { sessionId, message: JSON.stringify({ id: i, method, params }) }).catch(reject);
      });
    },
    // evaluate runs expression in the worker and returns its value; a throw is an error.
    async evaluate(expression) {
      const r = await this.send('Runtime.evaluate', { expression, returnByValue: true });
      if (r.exceptionDetails) throw new Error(`in the shared worker: ${r.exceptionDetails.exception ? r.exceptionDetails.exception.description : r.exceptionDetails.text}`);
      return r.result.value;
    },
    on(method, fn) {
      if (!listeners.has(method)) listeners.set(method, []);
      listeners.get(method).push(fn);
    },
    async detach() {
      await cdp.send('Target.detachFromTarget', { sessionId }).catch(() => {});
      await cdp.detach().catch(() => {});
    },
  };
}

module.exports = { startHost, startProxy, startEmbed, recordStates, states, waitState, waitFor, collectTicks, ticks, gapsIn, freePort, sharedWorker };
