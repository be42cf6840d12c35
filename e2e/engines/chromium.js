// Debian's Chromium through Playwright: an isolated session is a browser context, a tab a page.
// Offline is Playwright's emulation (it reaches the pages, not a SharedWorker's sockets).
const fs = require('fs');
const { chromium } = require('@playwright/test');
const { consoleType } = require('./common');

// Chromium keeps only the last --disable-features it is given, so ours repeats Playwright's own
// list (chromiumSwitches.ts of the pinned version) and adds the omnibox popups that Chromium
// 156 loads as WebUI renderers for every new window, headless too: one per browser context,
// about a second of CPU each (a context and a page cost 3.2 s of CPU with them, 1.7 s without,
// bench machine), which is most of what the suite's Chromium lanes did. Engine.launch checks
// that this list still holds Playwright's.
const playwrightDisabled = [
  'AvoidUnnecessaryBeforeUnloadCheckSync', 'DestroyProfileOnBrowserClose', 'HttpsUpgrades',
  'HttpsFirstBalancedModeAutoEnable', 'LensOverlay', 'MediaRouter', 'PaintHolding',
  'ThirdPartyStoragePartitioning', 'AvoidCorsURLLoaderRestartOnRedirect', 'TcpPortRandomizationWin',
  'OptimizationHints', 'NetworkTimeServiceQuerying', 'AimEnabled', 'PreconnectToSearch',
  'msForceBrowserSignIn', 'msEdgeUpdateLaunchServicesPreferredVersion',
];
const disabled = [...playwrightDisabled, 'WebUIOmniboxPopup', 'WebUIOmniboxAimPopup', 'PreloadTopChromeWebUI'];

// The flags the Chromium-only specs launch with too (playwright.config.js).
const launchOptions = {
  executablePath: '/usr/bin/chromium',
  args: [
    '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
    `--disable-features=${disabled.join(',')}`,
  ],
};

// checkFeatures fails a launch whose --disable-features lost one Playwright gave (a Playwright
// upgrade that added one to its list): Chromium would silently run with it enabled.
async function checkFeatures(browser) {
  const cdp = await browser.newBrowserCDPSession();
  let args;
  try {
    // (Browser.getBrowserCommandLine answers only with --enable-automation, which Playwright
    // does not pass: the browser process's own command line instead.)
    const { processInfo } = await cdp.send('SystemInfo.getProcessInfo');
    const pid = processInfo.find((p) => p.type === 'browser').id;
    args = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  } finally {
    await cdp.detach();
  }
  const lists = args.filter((a) => a.startsWith('--disable-features=')).map((a) => a.slice('--disable-features='.length).split(','));
  const last = new Set(lists[lists.length - 1] || []);
  const lost = [...new Set(lists.flat())].filter((f) => !last.has(f));
  if (lost.length) throw new Error(`engines/chromium.js: Chromium keeps only the last --disable-features, and it lacks ${lost.join(', ')} of Playwright's: add them to playwrightDisabled`);
}

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
    this.can = { initScripts: true, offline: 'browser', proxyWebSockets: 'connect', hubOutlivesTabs: true };
  }
  async launch() {
    this.browser = await chromium.launch(launchOptions);
    await checkFeatures(this.browser);
  }
  // A proxy applies to loopback too ('<-loopback>' drops Chromium's implicit bypass of it).
  async newSession({ proxy } = {}) {
    return new Session(await this.browser.newContext(proxy ? { proxy: { server: proxy, bypass: '<-loopback>' } } : {}));
  }
  async close() { if (this.browser) await this.browser.close(); }
}

module.exports = { Engine, launchOptions };
