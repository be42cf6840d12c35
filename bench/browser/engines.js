'use strict';
// The page in every engine: Debian's Chromium (playwright-core), firefox-esr (puppeteer-core
// over WebDriver BiDi) and WebKitGTK's MiniBrowser (WebKitWebDriver under Xvfb, through
// selenium-webdriver). One set of scenarios, run by each engine's driver below:
//   - first visit: each load in a profile of its own, nothing cached (Chromium: a new browser
//     context; Firefox: a new user context, whose HTTP cache is its own; WebKit: a new
//     WebDriver session, which is a new MiniBrowser with an ephemeral website data store);
//   - repeat visit: one profile kept for the run (Chromium: launchPersistentContext; Firefox:
//     a browser of its own with its profile; WebKit: one session, the page in a new window each
//     time), after one unmeasured load of each page, each page kept open --dwell ms after
//     connected (V8 writes its code cache only after its top tier has been quiet for 2 s);
//   - over a slow link: first visits again, each server behind the harness's throttle
//     (--lifeline-link, --sio-link: its 4G), --link-n loads of each page;
//   - memory: what a tab of the page adds to the engine's processes (see treePss), in a fresh
//     profile of an instance that runs nothing else;
//   - floor: what the engine itself needs for the same wasm (see floor).
// Lifeline's page is the demo page served by the real cmd/host from the copy of web/ the
// harness writes: its head begins with bench/browser/engines-page.js, the stopwatch, so that
// it runs before any script of the page in every engine alike (WebKitGTK's WebDriver has no
// "script before the page's own" command); ?mode=in-page and ?hub=N are read there. The
// socket.io page is bench/peers/sio-server.js's /page.html (socket.io-client 4.8, which stamps
// its own connect). Every time is performance.now() in the page: ms from navigation start.
//
//   node engines.js --lifeline http://H/ --floor http://H/floor.xhtml --sio http://S/page.html \
//       --lifeline-link http://H4/ --sio-link http://S4/page.html \
//       --engines chromium,firefox,webkit --n 10 --link-n 6 --dwell 3000 --mem 3 --floors 3
// Prints one JSON line: {"engines": {"chromium": {"version", "first": {"shared": [load…],
//   "inpage": […], "sio": […]}, "repeat": {…}, "link": {…}, "memory": {"shared": [sample…], …},
//   "floor": [sample…], "errors": […]}, …}}; a load is what collect returns, a memory sample
// what memory returns, a floor sample what floor does.
const fs = require('fs');
const os = require('os');
const path = require('path');
const net = require('net');
const { spawn } = require('child_process');

const a = { engines: 'chromium,firefox,webkit', n: '10', dwell: '3000', mem: '3', floors: '3', 'link-n': '6', phases: 'first,repeat,link,memory,floor', pages: 'shared,inpage,sio' };
const argv = process.argv.slice(2);
for (let i = 0; i + 1 < argv.length; i += 2) a[argv[i].replace(/^--?/, '')] = argv[i + 1];
const n = Number(a.n);
const dwell = Number(a.dwell);
const phases = a.phases.split(',');
const kinds = a.pages.split(',');
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// What this script spawns itself (Xvfb, WebKitWebDriver) ends with it, on SIGTERM too (the
// harness's death signal): the drivers of Chromium and Firefox end their browsers on exit.
const spawned = new Set();
// Each in a process group of its own, ended whole: a WebKitWebDriver's MiniBrowser with it.
function start(cmd, args, opts) {
  const p = spawn(cmd, args, { ...opts, detached: true });
  spawned.add(p);
  p.once('exit', () => spawned.delete(p));
  return p;
}
function end(p, sig) {
  try { process.kill(-p.pid, sig); } catch (_) { /* gone */ }
}
process.on('exit', () => { for (const p of spawned) end(p, 'SIGKILL'); });
for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => process.exit(128 + (sig === 'SIGTERM' ? 15 : 2)));

// ---- the engines' drivers: launch(), fresh() and persistent() give a profile, whose
// newTab() gives a tab with goto(url), eval(expression) (awaited, JSON values) and close().

const chromiumArgs = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'];

function chromium() {
  const { chromium: pw } = require('playwright-core');
  const launch = { executablePath: '/usr/bin/chromium', args: chromiumArgs };
  let browser;
  const profile = (context, cleanup) => ({
    async newTab() {
      const page = await context.newPage();
      return {
        goto: (url) => page.goto(url, { waitUntil: 'commit', timeout: 60_000 }),
        eval: (expr) => page.evaluate(expr),
        close: () => page.close(),
      };
    },
    async close() {
      await context.close().catch(() => {});
      if (cleanup) cleanup();
    },
  });
  return {
    name: 'chromium',
    async launch() { browser = await pw.launch(launch); },
    version: () => 'Chromium ' + browser.version(),
    async fresh() { return profile(await browser.newContext()); },
    async persistent() {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lifeline-engines-'));
      return profile(await pw.launchPersistentContext(dir, launch), () => fs.rmSync(dir, { recursive: true, force: true }));
    },
    async close() { if (browser) await browser.close().catch(() => {}); },
  };
}

// puppeteer-core sets fission.webContentIsolationStrategy 0 (every site in one content
// process) whatever the preferences given: the memory figures are of that process model.
function firefox() {
  const puppeteer = require('puppeteer-core');
  const launch = () => puppeteer.launch({
    browser: 'firefox', protocol: 'webDriverBiDi', executablePath: '/usr/bin/firefox-esr', headless: true,
    extraPrefsFirefox: { 'browser.shell.checkDefaultBrowser': false, ...prefs() },
  });
  let browser;
  const profile = (context, close) => ({
    async newTab() {
      const page = await context.newPage();
      return {
        goto: (url) => page.goto(url, { waitUntil: 'domcontentloaded', timeout: 60_000 }),
        eval: (expr) => page.evaluate(expr),
        close: () => page.close(),
      };
    },
    close,
  });
  return {
    name: 'firefox',
    async launch() { browser = await launch(); },
    version: () => browser.version(),
    async fresh() {
      const c = await browser.createBrowserContext();
      return profile(c, () => c.close().catch(() => {}));
    },
    async persistent() {
      const b = await launch();
      return profile(b.defaultBrowserContext(), () => b.close().catch(() => {}));
    },
    async close() { if (browser) await browser.close().catch(() => {}); },
  };
}

// BENCH_FIREFOX_PREFS adds preferences as JSON (e.g. {"javascript.options.wasm_caching": true})
// to see what a setting a page cannot make would give.
function prefs() {
  return process.env.BENCH_FIREFOX_PREFS ? JSON.parse(process.env.BENCH_FIREFOX_PREFS) : {};
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

// WebKitWebDriver serves one session at a time, and a session is a MiniBrowser of its own
// (with an ephemeral website data store): a profile is a driver process and its session, a
// tab a window of it.
function webkit() {
  const { Builder } = require('selenium-webdriver');
  const miniBrowser = '/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser';
  let xvfb;
  let display;
  let version = 'WebKitGTK';
  return {
    name: 'webkit',
    async launch() {
      xvfb = start('Xvfb', ['-displayfd', '3', '-screen', '0', '1280x1024x24', '-nolisten', 'tcp'], { stdio: ['ignore', 'ignore', 'ignore', 'pipe'] });
      display = await new Promise((resolve, reject) => {
        let out = '';
        xvfb.stdio[3].on('data', (b) => {
          out += b;
          if (out.includes('\n')) resolve(':' + out.trim());
        });
        xvfb.once('exit', (code) => reject(new Error(`Xvfb exited with ${code}`)));
        setTimeout(() => reject(new Error('Xvfb named no display within 10 s')), 10_000).unref();
      });
    },
    version: () => version,
    async fresh() {
      const port = await freePort();
      const proc = start('WebKitWebDriver', [`--port=${port}`], { stdio: ['ignore', 'ignore', 'ignore'], env: { ...process.env, DISPLAY: display } });
      let driver;
      for (let i = 0; ; i++) {
        try {
          driver = await new Builder().usingServer(`http://127.0.0.1:${port}`).withCapabilities({
            browserName: 'MiniBrowser',
            'webkitgtk:browserOptions': { binary: miniBrowser, args: ['--automation'] },
          }).build();
          break;
        } catch (e) {
          if (i >= 100) {
            end(proc, 'SIGKILL');
            throw e;
          }
          await sleep(100); // the driver is not listening yet
        }
      }
      const caps = await driver.getCapabilities();
      version = `WebKitGTK ${caps.get('browserVersion')} (MiniBrowser)`;
      await driver.manage().setTimeouts({ script: 120_000, pageLoad: 60_000 });
      let first = true;
      return {
        async newTab() {
          let handle;
          if (first) {
            first = false;
            handle = await driver.getWindowHandle();
          } else {
            // From a window still open: the one a closed tab left current is gone.
            await driver.switchTo().window((await driver.getAllWindowHandles())[0]);
            await driver.switchTo().newWindow('window');
            handle = await driver.getWindowHandle();
          }
          const on = async () => driver.switchTo().window(handle);
          return {
            async goto(url) { await on(); await driver.get(url); },
            async eval(expr) {
              await on();
              const r = await driver.executeAsyncScript(
                `const done = arguments[arguments.length - 1];
                 Promise.resolve().then(() => (${expr})).then((v) => done({ v: v === undefined ? null : v }), (e) => done({ e: String(e && e.stack || e) }));`);
              if (r && r.e !== undefined) throw new Error('in the page: ' + r.e);
              return r ? r.v : r;
            },
            async close() {
              // A session's last window stays (closing it ends the session): it goes blank.
              const all = await driver.getAllWindowHandles();
              await on();
              if (all.length > 1) await driver.close();
              else await driver.get('about:blank');
            },
          };
        },
        async close() {
          await driver.quit().catch(() => {});
          end(proc, 'SIGTERM');
        },
      };
    },
    async persistent() { return this.fresh(); },
    async close() { if (xvfb) end(xvfb, 'SIGTERM'); },
  };
}

const engines = { chromium, firefox, webkit };

// ---- what is measured in a page

// collect runs in a connected page: the stopwatch's record (Lifeline) or socket.io's own
// stamp, the client code's Resource Timing entries and the navigation's.
const collect = `(() => {
  const res = performance.getEntriesByType('resource');
  const pathOf = (u) => { try { return new URL(u).pathname; } catch (_) { return u; } };
  const r = (x) => (typeof x === 'number' ? Math.round(x * 10) / 10 : null);
  const entry = (e) => e ? { fetchStart: r(e.fetchStart), responseStart: r(e.responseStart), responseEnd: r(e.responseEnd),
    transferSize: e.transferSize, encodedBodySize: e.encodedBodySize, decodedBodySize: e.decodedBodySize } : null;
  const last = (re) => { const m = res.filter((x) => re.test(pathOf(x.name))); return m.length ? Object.assign(entry(m[m.length - 1]), { count: m.length }) : null; };
  const nav = performance.getEntriesByType('navigation')[0];
  const m = globalThis.__eng ? globalThis.__eng() : { connected: r(window.__connectedAt) };
  m.resource = last(/\\.wasm$/) || last(/\\/socket\\.io(\\.min)?\\.js$/);
  m.worker = last(/\\/worker\\.[0-9a-f]+\\.js$/);
  m.runner = last(/\\/run\\.[0-9a-f]+\\.js$/);
  m.tabScript = last(/\\/lifeline\\.[0-9a-f]+\\.js$/);
  m.nav = nav ? { responseEnd: r(nav.responseEnd), domContentLoaded: r(nav.domContentLoadedEventEnd), load: r(nav.loadEventEnd) } : null;
  if (performance.memory) m.jsHeap = performance.memory.usedJSHeapSize;
  return m;
})()`;

const connectedExpr = `(globalThis.__eng ? globalThis.__eng().connected : window.__connectedAt) || null`;

// load opens url in a new tab of profile, waits for connected, collects, keeps the page open
// stay ms and closes it.
async function load(profile, url, stay) {
  const tab = await profile.newTab();
  try {
    await tab.goto(url);
    const deadline = Date.now() + 60_000;
    while (!(await tab.eval(connectedExpr).catch(() => null))) {
      if (Date.now() > deadline) throw new Error('not connected within 60 s: ' + url);
      await sleep(25);
    }
    const m = await tab.eval(collect);
    if (stay > 0) await sleep(stay);
    return m;
  } finally {
    await tab.close().catch(() => {});
  }
}

// floor runs in a fresh page of the Host's origin that has no Lifeline in it (floor.xhtml:
// not text/html, so the Host injects nothing) and Go's own wasm_exec.js: the engine's compile
// of the served wasm's bytes, already in memory, and its instantiation with Go's imports (not
// run); then the same for an empty Go program (func main() {}, the same Go and flags), run
// until it exits: the engine's floor for any Go wasm, whatever it does.
const floor = `(async () => {
  const html = await (await fetch('/')).text();
  const wasm = (html.match(/data-wasm="([^"]+)"/) || [])[1];
  if (!wasm) throw new Error('no data-wasm in the page');
  const t = () => performance.now();
  const out = {};
  const bytes = await (await fetch(wasm)).arrayBuffer();
  out.bytes = bytes.byteLength;
  let t0 = t();
  const m = await WebAssembly.compile(bytes);
  out.compile = t() - t0;
  t0 = t();
  await WebAssembly.instantiate(m, new Go().importObject);
  out.instantiate = t() - t0;
  const eb = await (await fetch('floor-empty.wasm')).arrayBuffer();
  out.emptyBytes = eb.byteLength;
  t0 = t();
  const em = await WebAssembly.compile(eb);
  out.emptyCompile = t() - t0;
  const go = new Go();
  t0 = t();
  const inst = await WebAssembly.instantiate(em, go.importObject);
  out.emptyInstantiate = t() - t0;
  t0 = t();
  await go.run(inst);
  out.emptyRun = t() - t0;
  return out;
})()`;

// floorStream, in another fresh page like floor's: the served wasm's streaming compile,
// compileStreaming(fetch(wasm)), from the call to the Module, nothing cached: the network and
// the engine's streaming compile of the same bytes, with no page around it. Not in floor's page:
// an engine may keep a module it compiled from the same bytes (V8 does, per process).
const floorStream = `(async () => {
  const html = await (await fetch('/')).text();
  const wasm = (html.match(/data-wasm="([^"]+)"/) || [])[1];
  if (!wasm) throw new Error('no data-wasm in the page');
  const t0 = performance.now();
  await WebAssembly.compileStreaming(fetch(wasm));
  return { stream: performance.now() - t0 };
})()`;

// treePss is the proportional set size (kB) of every process this driver started, but Xvfb:
// the engine's processes (browser, content, network, GPU, workers), counted once each page
// they share.
function treePss() {
  const kids = new Map();
  const comm = new Map();
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const s = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
      const close = s.lastIndexOf(')');
      const ppid = Number(s.slice(close + 2).split(' ')[1]);
      comm.set(Number(d), s.slice(s.indexOf('(') + 1, close));
      if (!kids.has(ppid)) kids.set(ppid, []);
      kids.get(ppid).push(Number(d));
    } catch (_) { /* gone */ }
  }
  let kb = 0;
  const walk = (pid) => {
    for (const k of kids.get(pid) || []) {
      if (comm.get(k) === 'Xvfb') continue;
      try {
        const m = /^Pss:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${k}/smaps_rollup`, 'utf8'));
        if (m) kb += Number(m[1]);
      } catch (_) { /* gone */ }
      walk(k);
    }
  };
  walk(process.pid);
  return kb;
}

// settled is treePss once two readings 500 ms apart differ by less than 1 MB (at most 10 s):
// an engine that has just made a profile or closed one frees and grows memory for a few
// seconds on its own, and a reading in that wake measured the engine, not the page.
async function settled() {
  let last = treePss();
  for (const until = Date.now() + 10_000; Date.now() < until;) {
    await sleep(500);
    const now = treePss();
    if (Math.abs(now - last) < 1024) return now;
    last = now;
  }
  return last;
}

// memory: a fresh profile, a blank tab, the engine's processes measured; the page in that
// tab, connected and 2 s quiet, measured again.
async function memory(engine, url) {
  const profile = await engine.fresh();
  try {
    const tab = await profile.newTab();
    await tab.goto('about:blank');
    const before = await settled();
    await tab.goto(url);
    const deadline = Date.now() + 60_000;
    while (!(await tab.eval(connectedExpr).catch(() => null))) {
      if (Date.now() > deadline) throw new Error('not connected within 60 s: ' + url);
      await sleep(25);
    }
    await sleep(2000);
    const after = await settled();
    const m = await tab.eval(collect);
    return { pssKB: after - before, beforeKB: before, jsHeap: m.jsHeap || null, wasmMemory: m.wasmMemory || null };
  } finally {
    await profile.close();
    await sleep(1000); // the profile's processes end before the next baseline
  }
}

async function runEngine(name) {
  const out = { version: '', first: { shared: [], inpage: [], sio: [] }, repeat: { shared: [], inpage: [], sio: [] },
    link: { shared: [], inpage: [], sio: [] }, memory: { shared: [], inpage: [], sio: [] }, floor: [], errors: [] };
  const attempt = async (what, f) => {
    try { return await f(); } catch (e) { out.errors.push(what + ': ' + String(e && e.message ? e.message : e).split('\n')[0]); return null; }
  };
  const push = (list, m) => { if (m) list.push(m); };
  const with_ = (base, q) => base + (q ? (base.includes('?') ? '&' : '?') + q : '');
  const u = (q) => with_(a.lifeline, q);
  const pages = { shared: () => u(''), inpage: () => u('mode=in-page'), sio: () => a.sio };
  const slow = { shared: () => with_(a['lifeline-link'], ''), inpage: () => with_(a['lifeline-link'], 'mode=in-page'), sio: () => a['sio-link'] };

  let engine = engines[name]();
  await engine.launch();
  let persistent;
  try {
    const freshLoad = async (url) => {
      const p = await engine.fresh();
      try { return await load(p, url, 0); } finally { await p.close(); }
    };
    // One fresh load of each first, not counted: the engine's own start is not the page's.
    await attempt('warm-up lifeline', () => freshLoad(pages.shared()));
    await attempt('warm-up sio', () => freshLoad(pages.sio()));
    const repeat = phases.includes('repeat');
    if (repeat) {
      persistent = await engine.persistent();
      for (const k of kinds) await attempt('primer ' + k, () => load(persistent, pages[k](), dwell));
    }
    out.version = await engine.version();
    for (let i = 0; i < n; i++) {
      for (const k of kinds) {
        if (phases.includes('first')) push(out.first[k], await attempt('first ' + k, () => freshLoad(pages[k]())));
      }
      for (const k of kinds) {
        // A shared page gets a config of its own: no hub of an earlier load to find, one
        // started from the caches.
        const url = k === 'shared' ? u('hub=' + (i + 1)) : pages[k]();
        if (repeat) push(out.repeat[k], await attempt('repeat ' + k, () => load(persistent, url, dwell)));
      }
    }
    if (persistent) await persistent.close().catch(() => {});
    persistent = null;
    // First visits over the slow link (the harness's throttle in front of each server).
    for (let i = 0; phases.includes('link') && a['lifeline-link'] && i < Number(a['link-n']); i++) {
      for (const k of kinds) push(out.link[k], await attempt('link first ' + k, () => freshLoad(slow[k]())));
    }
  } finally {
    if (persistent) await persistent.close().catch(() => {});
    await engine.close();
  }
  // Memory and the floor in an instance of the engine that runs nothing else.
  if (!phases.includes('memory') && !phases.includes('floor')) return out;
  engine = engines[name]();
  await engine.launch();
  try {
    for (let i = 0; phases.includes('memory') && i < Number(a.mem); i++) {
      for (const k of kinds) push(out.memory[k], await attempt('memory ' + k, () => memory(engine, pages[k]())));
    }
    const inFresh = async (expr) => {
      const p = await engine.fresh();
      try {
        const tab = await p.newTab();
        await tab.goto(a.floor);
        return await tab.eval(expr);
      } finally {
        await p.close();
      }
    };
    for (let i = 0; phases.includes('floor') && i < Number(a.floors); i++) {
      const f = await attempt('floor', () => inFresh(floor));
      const st = await attempt('floor, streaming', () => inFresh(floorStream));
      if (f) push(out.floor, Object.assign(f, st || {}));
    }
    if (!out.version) out.version = await engine.version();
  } finally {
    await engine.close();
  }
  return out;
}

module.exports = { engines, load, treePss, collect, floor };

if (require.main === module) main().catch((e) => { console.error(e); process.exit(1); });

async function main() {
  if (!a.lifeline || !a.sio || !a.floor || !(n > 0)) {
    console.error('usage: node engines.js --lifeline URL --floor URL --sio URL [--engines chromium,firefox,webkit] [--n N] [--dwell ms] [--mem M] [--floors F] [--phases first,repeat,link,memory,floor] [--pages shared,inpage,sio] [--lifeline-link URL --sio-link URL --link-n N]');
    process.exit(2);
  }
  const out = { engines: {} };
  for (const name of a.engines.split(',').filter(Boolean)) {
    if (!engines[name]) throw new Error('unknown engine ' + name);
    process.stderr.write(`engines.js: ${name}\n`);
    out.engines[name] = await runEngine(name).catch((e) => ({ errors: [String(e && e.stack || e)] }));
  }
  console.log(JSON.stringify(out));
}
