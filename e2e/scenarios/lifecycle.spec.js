// The page's lifecycle in every engine: back-forward navigation (pagehide/pageshow, the
// back-forward cache where the engine keeps the page), visibility hidden and visible, and
// leaving the page (reload, navigation away) without a false alarm on the console.
//
// No driver here hides a page for real: headless Chromium keeps every page visible, and
// WebKitGTK's WebDriver has no such command. The page's code is told as the browser would tell
// it: document.visibilityState and its event, emulated. Freezing a page (the debugger, over
// DevTools) is Chromium's alone: tests/lifecycle.spec.js.
const { test, expect, mode } = require('./fixtures');
const { waitState, waitPage, recordStates, states, lifelineErrors } = require('./page');

test('back-forward navigation: connected again within 1 s of going back', async ({ browse, hosts }) => {
  const host = await hosts.start({});
  const tab = await browse.tab();
  // Timed in the page, from when the browser began going back (the new document's time origin,
  // or the pageshow of a page the back-forward cache kept) to when the controller said connected:
  // the driver's own way to the browser is no part of the promise (over BiDi, on a loaded
  // machine, it took hundreds of ms of the 801 ms one run counted from before the driver's call).
  // A page the cache kept may hear its hub's "connected" before its pageshow (WebKit): it was
  // connected when shown, 0 ms.
  await tab.addInitScript(() => {
    window.__back = { from: performance.timeOrigin, connected: 0 };
    window.addEventListener('pagehide', () => { window.__back = { from: 0, connected: 0 }; });
    window.addEventListener('pageshow', (e) => {
      sessionStorage.setItem('__persisted', String(e.persisted));
      if (e.persisted) window.__back.from = Date.now();
    });
    window.addEventListener('lifeline:state', (e) => {
      // When this document heard it (a shared hub's status says when the hub connected).
      if (!window.__back.connected && e.detail.state === 'connected') window.__back.connected = Date.now();
    });
  });
  await tab.goto(host.url('/'));
  await waitState(tab, 'connected');
  await tab.goto(host.url('/settings.js'));
  await tab.back();
  // Not the indicator: a page the cache kept shows what it showed when hidden (connected) for
  // a moment, before its program runs again.
  const back = await waitPage(tab, () => {
    const b = window.__back;
    return b && b.connected ? b : null;
  }, undefined, { timeout: 3000, what: 'the page connected after going back' });
  const took = Math.max(0, Math.round(back.connected - back.from));
  const persisted = await tab.evaluate(() => sessionStorage.getItem('__persisted'));
  console.log(`[${browse.engine.name} ${mode || 'default'}] connected ${took} ms after going back (pageshow persisted: ${persisted})`);
  expect(took).toBeLessThan(1000);
});

async function setVisible(tab, visible) {
  await tab.evaluate((v) => {
    Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => (v ? 'visible' : 'hidden') });
    Object.defineProperty(document, 'hidden', { configurable: true, get: () => !v });
    document.dispatchEvent(new Event('visibilitychange'));
  }, visible);
}

test('hidden and visible, online, pageshow and resume probe a healthy link and change nothing visible', async ({ browse, hosts }) => {
  const host = await hosts.start({});
  const tab = await browse.tab();
  await recordStates(tab);
  await tab.goto(host.url('/'));
  await waitState(tab, 'connected');
  const before = await host.health();
  for (let i = 0; i < 3; i++) {
    await setVisible(tab, false);
    await setVisible(tab, true);
    await tab.evaluate(() => {
      window.dispatchEvent(new Event('online'));
      window.dispatchEvent(new PageTransitionEvent('pageshow', { persisted: false }));
      document.dispatchEvent(new Event('resume'));
    });
  }
  await new Promise((r) => setTimeout(r, 3000)); // past every probe's 2 s bound
  const after = await host.health();
  expect(after.accepted).toBe(before.accepted); // no reconnect
  expect(await states(tab)).toEqual(['connecting', 'connected']); // no flicker
});

test('a reload and a navigation away log no console error', async ({ browse, hosts }) => {
  const host = await hosts.start({});
  const tab = await browse.tab();
  await tab.goto(host.url('/'));
  await waitState(tab, 'connected');
  await tab.reload();
  await waitState(tab, 'connected');
  await tab.goto(host.url('/settings.js')); // same origin: a recorder that keeps the console in storage still sees it
  await tab.back();
  await waitState(tab, 'connected', 3000);
  expect(await lifelineErrors(tab)).toEqual([]);
});
