// Debian's firefox-esr through puppeteer-core over WebDriver BiDi (Playwright's Firefox needs a
// patched build, and its moz-firefox channel fails at newPage here): an isolated session is a
// browser context (a BiDi user context), a tab a page. Init scripts are BiDi preload scripts;
// offline is BiDi's network emulation.
const puppeteer = require('puppeteer-core');
const { consoleType, steady } = require('./common');
const { waitFor } = require('../tests/host');

// errorsAsText runs first in every page: over BiDi a console message's Error argument reaches
// the driver as an empty remote value (puppeteer's text() says "JSHandle@error", and it cannot
// be read afterwards), so the test browser's console gets Errors as their text, as Chromium's
// console messages give them.
function errorsAsText() {
  for (const type of ['log', 'info', 'warn', 'error', 'debug']) {
    const orig = console[type];
    console[type] = function (...args) {
      return orig.apply(this, args.map((a) => (a instanceof Error ? String(a) : a)));
    };
  }
}

class Tab {
  constructor(page) {
    this.page = page;
    this.lines = [];
    page.on('console', (m) => this.lines.push({ type: consoleType(m.type()), text: m.text() }));
    page.on('pageerror', (e) => this.lines.push({ type: 'pageerror', text: e.message }));
  }
  async addInitScript(fn, arg) { await this.page.evaluateOnNewDocument(fn, arg); }
  async goto(url) { await this.page.goto(url); }
  async reload() { await this.page.reload(); }
  // back goes back in the tab's history. Not page.goBack(): over BiDi it waits for a navigation
  // event that a page restored from the back-forward cache never sends (30 s, then a timeout).
  // Done: the tab shows another document, fully loaded (a restored one is at once).
  async back() {
    const before = await this.page.evaluate(() => location.href + '#' + performance.timeOrigin);
    await this.page.evaluate(() => { setTimeout(() => history.back(), 0); });
    await waitFor(async () => {
      const now = await this.page.evaluate(() => document.readyState === 'complete' && location.href + '#' + performance.timeOrigin);
      return now && now !== before;
    }, { timeout: 30_000, interval: 20, what: 'the previous page of the history' });
  }
  evaluate(fn, arg) { return this.page.evaluate(fn, arg); }
  async click(selector) {
    await this.page.evaluate(steady, selector);
    await this.page.click(selector);
  }
  async console() { return this.lines.slice(); }
  screenshot(path) { return this.page.screenshot({ path }); }
  async close() { if (!this.page.isClosed()) await this.page.close(); }
  get closed() { return this.page.isClosed(); }
}

class Session {
  constructor(context) {
    this.context = context;
    this.tabs = [];
    this.offline = false;
  }
  async newTab() {
    const tab = new Tab(await this.context.newPage());
    await tab.addInitScript(errorsAsText);
    if (this.offline) await tab.page.setOfflineMode(true);
    this.tabs.push(tab);
    return tab;
  }
  // Offline for every tab of the session: BiDi emulates it per browsing context.
  async setOffline(offline) {
    this.offline = offline;
    await Promise.all(this.tabs.filter((t) => !t.closed).map((t) => t.page.setOfflineMode(offline)));
  }
  close() { return this.context.close(); }
}

class Engine {
  constructor() {
    this.name = 'firefox';
    this.can = { initScripts: true, offline: 'browser', proxyWebSockets: 'connect', hubOutlivesTabs: false };
  }
  async launch() {
    this.browser = await puppeteer.launch({
      browser: 'firefox', protocol: 'webDriverBiDi', executablePath: '/usr/bin/firefox-esr', headless: true,
      // The real users' preferences stay as they are (network.websocket.delay-failed-reconnects
      // among them); only what keeps a test browser quiet is set.
      // allow_hijacking_localhost: a session's proxy (newSession) applies to loopback, where
      // the test Hosts are; without a proxy it changes nothing.
      extraPrefsFirefox: { 'browser.shell.checkDefaultBrowser': false, 'network.proxy.allow_hijacking_localhost': true },
    });
  }
  // A proxy is the BiDi user context's (browser.createUserContext's proxy, manual, host:port).
  async newSession({ proxy } = {}) {
    return new Session(await this.browser.createBrowserContext(proxy ? { proxyServer: new URL(proxy).host } : {}));
  }
  async close() { if (this.browser) await this.browser.close(); }
}

module.exports = { Engine };
