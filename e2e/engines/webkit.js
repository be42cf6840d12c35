// WebKitGTK: WebKitWebDriver driving its MiniBrowser under Xvfb, through selenium-webdriver
// (classic WebDriver). WebKitWebDriver serves one session at a time, so an isolated session is
// a driver process of its own with its own MiniBrowser; a tab is a window of that session
// (a window, not a tab: switching to a tab of one window would hide the others, and a hidden
// page behaves differently). Every command first switches to its tab's window, under the
// session's lock.
//
// What classic WebDriver lacks, done another way:
// - init scripts: the test Host (bin/host -faults, cmd/host/initscripts.go) serves a tab's
//   scripts first in the page's head; goto registers them and loads the page with ?e2e-init=.
// - the console: an init script keeps it in the tab's sessionStorage (common.recordConsole).
// - offline: none; the scenarios cut the Host and tell the page (engine.can.offline 'events').
const { spawn, execFileSync } = require('child_process');
const fs = require('fs');
const { Builder } = require('selenium-webdriver');
const { freePort, waitFor } = require('../tests/host');
const { source, recordConsole, steady } = require('./common');

const miniBrowser = '/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser';

// sessionStart bounds the start of a session: a driver, its MiniBrowser, the WebDriver session.
// It takes 0.3 s on an idle machine; see Engine.newSession for one that never starts.
const sessionStart = 20_000;

class SessionStalled extends Error {}

// startXvfb starts a virtual display and resolves with its number (Xvfb picks a free one and
// writes it to -displayfd).
function startXvfb() {
  const proc = spawn('Xvfb', ['-displayfd', '3', '-screen', '0', '1280x1024x24', '-nolisten', 'tcp'], { stdio: ['ignore', 'ignore', 'pipe', 'pipe'] });
  const display = new Promise((resolve, reject) => {
    let out = '';
    proc.stdio[3].on('data', (b) => {
      out += b;
      if (out.includes('\n')) resolve(':' + out.trim());
    });
    proc.once('exit', (code) => reject(new Error(`Xvfb exited with ${code} before it named its display`)));
    setTimeout(() => reject(new Error('Xvfb named no display within 10 s')), 10_000).unref();
  });
  return { proc, display };
}

// A lock: one command at a time per session, as each begins by switching windows.
function serial() {
  let last = Promise.resolve();
  return (f) => {
    const run = last.then(f, f);
    last = run.catch(() => {});
    return run;
  };
}

class Tab {
  constructor(session, handle) {
    this.session = session;
    this.handle = handle;
    this.scripts = [source(recordConsole)];
    this.closed = false;
    this.lastConsole = [];
  }
  run(f) {
    return this.session.lock(async () => {
      if (this.closed) throw new Error('the tab is closed');
      await this.session.driver.switchTo().window(this.handle);
      return f(this.session.driver);
    });
  }
  async addInitScript(fn, arg) { this.scripts.push(source(fn, arg)); }
  // withScripts registers this tab's scripts at the Host that serves url and returns the URL
  // that asks for them.
  async withScripts(url) {
    const u = new URL(url);
    const res = await fetch(u.origin + '/_lifeline/e2e/init', { method: 'POST', body: this.scripts.join('\n') });
    if (!res.ok) throw new Error(`registering the init scripts of a WebKit tab at ${u.origin}: ${res.status} ${await res.text()}`);
    u.searchParams.set('e2e-init', await res.text());
    return u.href;
  }
  async goto(url) {
    const withScripts = await this.withScripts(url);
    await this.run((d) => d.get(withScripts));
  }
  // reload registers the scripts again first: a Host restarted since has forgotten them (the
  // token is their hash, so the URL stays the same).
  async reload() {
    const url = await this.run((d) => d.getCurrentUrl());
    await this.withScripts(url);
    await this.run((d) => d.navigate().refresh());
  }
  async back() { await this.run((d) => d.navigate().back()); }
  // evaluate runs fn(arg) in the page and resolves with its (awaited) value.
  async evaluate(fn, arg) {
    const r = await this.run((d) => d.executeAsyncScript(
      `const done = arguments[arguments.length - 1];
       Promise.resolve().then(() => (${fn})(arguments[0])).then((v) => done({ v: v === undefined ? null : v }), (e) => done({ e: String(e && e.stack || e) }));`,
      arg === undefined ? null : arg));
    if (r && r.e !== undefined) throw new Error(`in the page: ${r.e}`);
    return r ? r.v : r;
  }
  async click(selector) {
    await this.evaluate(steady, selector);
    await this.run(async (d) => {
      const el = await d.findElement({ css: selector });
      await el.click();
    });
  }
  async console() {
    try {
      this.lastConsole = await this.evaluate(() => JSON.parse(sessionStorage.getItem('__e2eConsole') || '[]'));
    } catch {
      // Between two documents: what was read last.
    }
    return this.lastConsole.slice();
  }
  async screenshot(path) {
    const png = await this.run((d) => d.takeScreenshot());
    fs.writeFileSync(path, Buffer.from(png, 'base64'));
  }
  async close() {
    if (this.closed) return;
    await this.run((d) => d.close());
    this.closed = true;
    this.session.tabs = this.session.tabs.filter((t) => t !== this);
  }
}

class Session {
  constructor(driver, proc) {
    this.driver = driver;
    this.proc = proc;
    this.lock = serial();
    this.tabs = [];
    this.first = true; // the session's first window is the first tab
  }
  async newTab() {
    const handle = await this.lock(async () => {
      if (this.first) {
        this.first = false;
        return this.driver.getWindowHandle();
      }
      await this.driver.switchTo().newWindow('window');
      return this.driver.getWindowHandle();
    });
    const tab = new Tab(this, handle);
    this.tabs.push(tab);
    return tab;
  }
  async setOffline() {
    throw new Error('WebKitGTK\'s WebDriver cannot take the browser offline');
  }
  async close() {
    try {
      await this.driver.quit();
    } finally {
      this.proc.kill('SIGTERM');
    }
  }
}

class Engine {
  constructor() {
    this.name = 'webkit';
    // offline: 'events' — no driver can cut this browser's network: the scenario cuts the Host
    // and dispatches offline/online in the page.
    // proxyWebSockets: 'get' — WebKitGTK (libsoup) asks an HTTP proxy for a ws:// upgrade with a
    // GET of the ws:// URL, never a CONNECT; a proxy that does not upgrade itself (squid: 501)
    // never carries its WebSockets, whatever its CONNECT rules.
    this.can = { initScripts: true, offline: 'events', proxyWebSockets: 'get', hubOutlivesTabs: false };
  }
  async launch() {
    const x = startXvfb();
    this.xvfb = x.proc;
    this.display = await x.display;
  }
  // A proxy is WebDriver's proxy capability (manual, host:port), which WebKitWebDriver hands to
  // its browser's network session.
  //
  // A session that does not start within sessionStart is started again, with a new driver, at
  // most twice; each stall is logged with the driver's output, which includes MiniBrowser's.
  // In a make test whose Go tests and fleets ran beside the e2e suite, a test stood 90 s in
  // newSession. Its driver, found alive after its lane had ended, had no browser left and was
  // neither dialling nor answering. Why its session never started is not known. One way there
  // is in WebKitWebDriver itself (Source/WebDriver/glib/SessionHostGlib.cpp): it picks the port
  // of its browser's inspector server by binding port 0 and closing it, then starts MiniBrowser
  // on it. That port is in the kernel's ephemeral range, which any connection on the machine
  // may take as its local port first. A new driver picks another port and another browser.
  async newSession({ proxy } = {}) {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.startSession(proxy);
      } catch (e) {
        if (!(e instanceof SessionStalled) || attempt === 3) throw e;
        console.warn(`[webkit] ${e.message}; starting another driver (attempt ${attempt + 1} of 3)`);
      }
    }
  }
  async startSession(proxy) {
    const port = await freePort();
    const proc = spawn('WebKitWebDriver', [`--port=${port}`], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, DISPLAY: this.display } });
    const errors = [];
    proc.stderr.on('data', (b) => errors.push(String(b)));
    const kill = () => {
      // MiniBrowser is the driver's child: it goes first, or it outlives its driver.
      try { execFileSync('pkill', ['-KILL', '-P', String(proc.pid)]); } catch { /* none left */ }
      proc.kill('SIGKILL');
    };
    let timer;
    try {
      await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/status`)).ok, { what: `WebKitWebDriver on ${port}` });
      const build = new Builder().usingServer(`http://127.0.0.1:${port}`).withCapabilities({
        browserName: 'MiniBrowser',
        'webkitgtk:browserOptions': { binary: miniBrowser, args: ['--automation'] },
        ...(proxy ? { proxy: { proxyType: 'manual', httpProxy: new URL(proxy).host } } : {}),
      }).build();
      build.catch(() => {}); // a stalled one ends with its driver's kill, unread
      const stalled = new Promise((_, reject) => {
        timer = setTimeout(() => reject(new SessionStalled(`WebKitWebDriver on ${port} started no session within ${sessionStart / 1000} s${errors.length ? ` (its output: ${errors.join('').trim().slice(0, 500)})` : ''}`)), sessionStart);
      });
      const driver = await Promise.race([build, stalled]);
      // A script bounded by 10 s, not WebDriver's 30 s: one lost in a navigation never answers,
      // and it holds the session's lock (every tab's commands) until it times out. The
      // scenarios' in-page waits take a second at a time (scenarios/page.js waitPage), and no
      // script of theirs waits in the page for longer than 5 s.
      await driver.manage().setTimeouts({ script: 10_000, pageLoad: 60_000 });
      return new Session(driver, proc);
    } catch (e) {
      kill();
      if (e instanceof SessionStalled) throw e;
      throw new Error(`${e.message}\n${errors.join('')}`);
    } finally {
      clearTimeout(timer);
    }
  }
  async close() { if (this.xvfb) this.xvfb.kill('SIGTERM'); }
}

module.exports = { Engine };
