// The first socket opens while the wasm loads (PROTOCOL.md §6.5): the loader opens it at the URL
// the hub dials (web/boot.js in-page, web/worker.js for a shared hub), and the hub's first dial
// takes it, with the ready frame that waited for it, instead of opening another. In every engine.
const { test, expect, mode, waitFor } = require('./fixtures');
const { waitState } = require('./page');

test('the first socket opens while the wasm loads, and the hub takes it: one socket at the Host', async ({ browse, hosts }) => {
  const host = await hosts.start({});
  const page = await browse.tab();
  // Every WebSocket the page makes, and when (in-page the hub's are the page's own).
  await page.addInitScript(() => {
    window.__sockets = [];
    const Native = window.WebSocket;
    window.WebSocket = new Proxy(Native, {
      construct(target, args, newTarget) {
        window.__sockets.push({ url: String(args[0]), at: performance.now() });
        return Reflect.construct(target, args, newTarget);
      },
    });
  });
  await page.goto(host.url('/'));
  await waitState(page, 'connected');
  const h = await host.health();
  expect(h.accepted).toBe(1); // the early socket carries the session: no second one
  expect(h.open).toBe(1);
  if (mode === 'in-page') {
    const { sockets, goReady } = await page.evaluate(() => ({
      sockets: window.__sockets,
      goReady: (performance.getEntriesByName('lifeline:go-ready')[0] || {}).startTime,
    }));
    expect(sockets.length).toBe(1);
    expect(sockets[0].url).toContain('lifeline-mode=in-page');
    expect(goReady).toBeGreaterThan(sockets[0].at); // opened before the program ran
  }
  // Still one a while later: the early socket was taken, not left to time out beside another.
  await new Promise((r) => setTimeout(r, 500));
  await waitFor(async () => (await host.health()).accepted === 1, { what: 'one socket at the Host' });
});
