// The soak's browser pages: one headless Debian Chromium with PAGES pages, each in its own
// context, loading URL and following the "ticks" stream. Every lifeline:state transition and
// every delivery is printed on stdout as one JSON line for the Go driver:
//
//	{"t":…,"page":0,"event":"state","state":"connected","attempt":3}
//	{"t":…,"page":0,"event":"delivery","seq":12,"reset":false,"epoch":"…","i":57}
//	{"t":…,"page":0,"event":"console","text":"panic: …"}   (errors and panics only)
//
// i numbers a page's reports so the driver can tell a lost or reordered report from a lost
// event. The script ends (closing the browser) on SIGTERM or SIGINT, or when its stdin closes,
// so that it never outlives the driver.
//
//	node e2e/soak/pages.js http://127.0.0.1:8080/ 3
'use strict';
const { chromium } = require('@playwright/test');

const url = process.argv[2];
const count = Number(process.argv[3] || 1);
if (!url || !(count >= 1)) {
  console.error('usage: node pages.js URL COUNT');
  process.exit(2);
}

function emit(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

let browser;
let ending = false;
async function end(code) {
  if (ending) return;
  ending = true;
  const timer = setTimeout(() => process.exit(code), 5000);
  try { if (browser) await browser.close(); } catch (_) { /* gone already */ }
  clearTimeout(timer);
  process.exit(code);
}
process.on('SIGTERM', () => end(0));
process.on('SIGINT', () => end(0));
process.stdin.on('end', () => end(0));
process.stdin.on('error', () => end(0));
process.stdin.resume();

// Runs in each page before its scripts: reports go through the exposed binding, numbered.
const init = () => {
  let i = 0;
  const report = (o) => { o.i = i++; o.t = Date.now(); globalThis.__soak(o); };
  window.addEventListener('lifeline:state', (e) => {
    const d = e.detail || {};
    report({ event: 'state', state: String(d.state), attempt: Number(d.attempt || 0), error: String(d.error || '') });
  });
  // The demo page subscribes to ticks itself on lifeline:ready, and a newer subscription to a
  // stream replaces the older one: so the page's own subscription is observed, by wrapping
  // lifeline.subscribe before the page's listener runs (this one is registered first). If the
  // page has not subscribed within 2 s, the soak subscribes itself.
  window.addEventListener('lifeline:ready', () => {
    const api = globalThis.lifeline;
    const orig = api.subscribe;
    let subscribed = false;
    const tee = (d) => report({ event: 'delivery', seq: Number(d.seq), reset: !!d.reset, epoch: String(d.epoch || '') });
    api.subscribe = (stream, fn) => {
      if (stream !== 'ticks') return orig(stream, fn);
      subscribed = true;
      return orig(stream, (d) => { tee(d); fn(d); });
    };
    setTimeout(() => { if (!subscribed) api.subscribe('ticks', () => {}); }, 2000);
  });
};

(async () => {
  browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    handleSIGINT: false, handleSIGTERM: false, handleSIGHUP: false,
    args: [
      '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync',
    ],
  });
  for (let p = 0; p < count; p++) {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.exposeFunction('__soak', (o) => { o.page = p; emit(o); });
    page.on('console', (m) => {
      // Failed WebSocket handshakes are logged as errors by Chromium during every fault: only
      // Go panics and uncaught exceptions matter here.
      const text = m.text();
      if (/panic|fatal error/i.test(text)) emit({ t: Date.now(), page: p, event: 'console', text: text.slice(0, 500) });
    });
    page.on('pageerror', (e) => emit({ t: Date.now(), page: p, event: 'console', text: 'pageerror: ' + String(e).slice(0, 500) }));
    page.on('crash', () => emit({ t: Date.now(), page: p, event: 'console', text: 'panic: page crashed' }));
    await page.addInitScript(init);
    await page.goto(url, { timeout: 30000 });
    emit({ t: Date.now(), page: p, event: 'loaded' });
  }
})().catch((e) => {
  emit({ t: Date.now(), page: -1, event: 'console', text: 'driver: ' + String(e).slice(0, 500) });
  end(1);
});
