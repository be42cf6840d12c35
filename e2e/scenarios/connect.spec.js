// First connect, the injected config, a bad config refused, and the fallback without
// SharedWorker: in every engine (playwright.config.js), in the suite's page mode.
const { test, expect, mode, waitFor } = require('./fixtures');
const { waitState, attr, text, recordStates, states, inPage, waitPage, lifelineErrors } = require('./page');

test('the page loads connected in its mode and ticks advance', async ({ browse, hosts }) => {
  const host = await hosts.start({});
  const tab = await browse.tab();
  await recordStates(tab);
  await tab.goto(host.url('/'));
  await waitState(tab, 'connected');
  const n = () => tab.evaluate(() => Number(document.getElementById('ticks').dataset.n));
  const first = await n();
  await waitFor(async () => (await n()) > first, { timeout: 5000, what: 'the ticks to advance' });
  expect(await states(tab)).toEqual(['connecting', 'connected']);
  expect(await tab.evaluate(() => document.getElementById('reconnect-now').disabled)).toBe(true);
  // The mode the suite asked for is the one the page runs (shared: its hub is a SharedWorker,
  // and the page loads no runner).
  const hasShared = await tab.evaluate(() => typeof SharedWorker === 'function');
  expect(await inPage(tab)).toBe(mode === 'in-page' || !hasShared);
  expect((await host.health()).sessions).toBe(1);
});

test('the injected config is read; a Host config change applies to pages loaded afterwards', async ({ browse, hosts }) => {
  const host = await hosts.start({ recovery: { deadlineMs: 15000 } });
  const tab = await browse.tab();
  const bootstrap = () => tab.evaluate(() => JSON.parse(document.getElementById('lifeline-bootstrap').textContent));
  await tab.goto(host.url('/'));
  await waitState(tab, 'connected');
  expect((await bootstrap()).recovery.deadlineMs).toBe(15000);
  await host.reload({ recovery: { deadlineMs: 7000 } });
  expect((await bootstrap()).recovery.deadlineMs).toBe(15000); // a loaded page keeps its own
  await tab.reload();
  await waitState(tab, 'connected');
  expect((await bootstrap()).recovery.deadlineMs).toBe(7000);
});

// breakBootstrap rewrites the bootstrap's deadline to 0 as the parser inserts it, before the
// boot right after it runs (the parser runs the microtasks before an inline script).
function breakBootstrap() {
  new MutationObserver((_, obs) => {
    const el = document.getElementById('lifeline-bootstrap');
    if (!el || !el.textContent) return;
    el.textContent = el.textContent.replace(/"deadlineMs":\d+/, '"deadlineMs":0');
    obs.disconnect();
  }).observe(document, { childList: true, subtree: true, characterData: true });
}

for (const [lang, label] of [['en', 'Connection settings are invalid'], ['zh', '连接设置无效']]) {
  test(`an invalid bootstrap shows misconfigured and names the field (${lang})`, async ({ browse, hosts }) => {
    const host = await hosts.start({});
    const tab = await browse.tab();
    await tab.addInitScript(breakBootstrap);
    await tab.goto(host.url(`/?lang=${lang}`));
    await waitState(tab, 'misconfigured');
    expect(await tab.evaluate(() => JSON.parse(document.getElementById('lifeline-bootstrap').textContent).recovery.deadlineMs)).toBe(0);
    expect(await text(tab, '#connection-label')).toBe(label);
    const detail = await text(tab, '#connection-detail');
    expect(detail).toContain('recovery.deadlineMs');
    expect(detail).toContain('got 0');
    await waitFor(async () => (await lifelineErrors(tab)).some((l) => l.includes('recovery.deadlineMs')), { timeout: 5000, what: 'the field named on the console' });
    // Nothing connects: the socket the loader opened while the wasm loaded is closed as the
    // hub refuses its settings (gateway.DropEarly); the Host counts it until the close reaches it.
    await waitFor(async () => (await host.health()).sessions === 0, { timeout: 3000, what: 'no session at the Host' });
    expect(await attr(tab, '#reconnect-now', 'disabled')).toBeNull();
  });
}

// No engine is a different product. A browser without SharedWorker (Chrome
// on Android; here it is removed before the loader runs) gets the in-page hub by itself, and the
// page says so once on its console. The page chooses: the suite's mode is not set.
test('without SharedWorker the page falls back to in-page by itself and says so once', async ({ browse, hosts }) => {
  const host = await hosts.start({});
  const tab = await browse.tab({ mode: false });
  await tab.addInitScript(() => { delete globalThis.SharedWorker; });
  await tab.goto(host.url('/'));
  await waitState(tab, 'connected');
  expect(await tab.evaluate(() => typeof SharedWorker)).toBe('undefined');
  expect(await inPage(tab)).toBe(true);
  expect((await host.health()).sessions).toBe(1);
  await waitPage(tab, () => Number(document.getElementById('ticks').dataset.n) > 0, undefined, { what: 'a tick' });
  // Once: one line of Lifeline's that names what is missing, whatever its level.
  const said = (await tab.console()).filter((l) => l.text.startsWith('lifeline:') && /SharedWorker/.test(l.text));
  expect(said.map((l) => l.text), 'the console lines of Lifeline naming SharedWorker').toHaveLength(1);
});

// Point 2 again: a browser that fires no online/offline events (here they are removed before
// the loader runs, and navigator.onLine says offline, which no event would ever correct) gets
// a page that takes itself as online, says so once, and rides an outage on its ladder alone.
test('without online/offline events the page takes itself as online, says so once, and rides an outage on its ladder', async ({ browse, hosts }) => {
  const host = await hosts.start({ recovery: { initialDelayMs: 200, maxDelayMs: 1000 } });
  const tab = await browse.tab();
  await tab.addInitScript(() => {
    for (const o of [Window.prototype, window]) {
      delete o.ononline;
      delete o.onoffline;
    }
    Object.defineProperty(Navigator.prototype, 'onLine', { configurable: true, get: () => false });
  });
  await tab.goto(host.url('/'));
  await waitState(tab, 'connected');
  expect(await tab.evaluate(() => ['ononline' in window, navigator.onLine])).toEqual([false, false]);
  const said = (await tab.console()).filter((l) => l.text.startsWith('lifeline:') && /online\/offline events/.test(l.text));
  expect(said.map((l) => l.text), 'the console lines of Lifeline naming the missing events').toHaveLength(1);
  await host.fault('outage');
  await waitState(tab, 'reconnecting');
  await host.fault('up');
  await waitState(tab, 'connected', 5000); // the ladder's top cap (1 s) and a handshake
  await waitPage(tab, () => Number(document.getElementById('ticks').dataset.n) > 0, undefined, { what: 'a tick' });
});
