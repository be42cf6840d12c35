// Debian's Chromium through Playwright: an isolated session is a browser context, a tab a page.
// Offline is Playwright's emulation (it reaches the pages, not a SharedWorker's sockets).
const { chromium } = require('@playwright/test');
const { consoleType } = require('./common');

// The flags the Chromium-only specs launch with too (playwright.config.js).
const launchOptions = {
  executablePath: '/usr/bin/chromium',
  args: [
    '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
  ],
};

class Tab {
  constructor(page) {
    this.page = page;
    this.lines = [];
    page.on('console', (m) => this.lines.push({ type: consoleType(m.type()), text: m.text() }));
    page.on('pageerror', (e) => this.lines.push({ type: 'pageerror', text: e.message }));
  }
  addInitScript(fn, arg) { return this.page.addInitScript(fn, arg); }
  async goto(url) { await this.page.goto(url); }
  async reload() { await this.page.reload(); }
  async back() { await this.page.goBack(); }
  evaluate(fn, arg) { return this.page.evaluate(fn, arg); }
  click(selector) { return this.page.click(selector); }
  async console() { return this.lines.slice(); }
  screenshot(path) { return this.page.screenshot({ path }); }
  async close() { if (!this.page.isClosed()) await this.page.close(); }
  get closed() { return this.page.isClosed(); }
}

class Session {
  constructor(context) { this.context = context; }
  async newTab() { return new Tab(await this.context.newPage()); }
  setOffline(offline) { return this.context.setOffline(offline); }
  close() { return this.context.close(); }
}

class Engine {
  constructor() {
    this.name = 'chromium';
    // offline: 'browser' — the driver cuts the page's network and fires offline/online.
    // proxyWebSockets: 'connect' — a ws:// goes through an HTTP proxy as a CONNECT tunnel.
    this.can = { initScripts: true, offline: 'browser', proxyWebSockets: 'connect' };
  }
  async launch() { this.browser = await chromium.launch(launchOptions); }
  // A proxy applies to loopback too ('<-loopback>' drops Chromium's implicit bypass of it).
  async newSession({ proxy } = {}) {
    return new Session(await this.browser.newContext(proxy ? { proxy: { server: proxy, bypass: '<-loopback>' } } : {}));
  }
  async close() { if (this.browser) await this.browser.close(); }
}

module.exports = { Engine, launchOptions };
