// Every network (PROTOCOL.md §11), in every engine: where a WebSocket cannot get through, the
// page connects over the HTTP carrier (stream, or poll where the path buffers a response) and
// keeps every promise there; once the path opens, it is back on a WebSocket, losing and
// repeating nothing. The middleboxes are real and started here: Debian's squid with its stock
// configuration as the browser's proxy (each engine's session takes a proxy: engines/index.js),
// nginx as a plain reverse proxy, and bin/pathproxy in front of the Host for the other ways
// networks break WebSockets.
const { test, expect, waitFor, gapsIn } = require('./fixtures');
const { waitState, waitPage, attr, text, recordStates, states, collectTicks, ticks } = require('./page');
const { startPath, startSquid, startNginx } = require('../tests/middleboxes');

// A page on the HTTP carrier tries a WebSocket again after a second here (lifelineOptions
// .upgradeAfterMs; 15 s by default), so that a path that opens is seen within the test.
function quickUpgrades() {
  globalThis.lifelineOptions = Object.assign({}, globalThis.lifelineOptions, { upgradeAfterMs: 1000 });
}

const carrier = (tab) => attr(tab, '#connection-status', 'data-carrier');

function waitCarrier(tab, want, timeout = 10_000) {
  return waitPage(tab, (w) => document.getElementById('connection-status').dataset.carrier === w, want, { timeout, what: `data-carrier="${want}"` });
}

// callOnce makes a keyed call of the demo board and checks the Host ran it once.
async function callOnce(tab, host, key) {
  const reply = await tab.evaluate((k) => globalThis.lifeline.call('board.post', { text: 'via ' + k }, { key: k }), key);
  expect(reply.text).toBe('via ' + key);
  const want = `msg="demo: board call ran" call=board.post key=${key}`;
  await waitFor(() => host.logs.some((l) => l.includes(want)), { what: `the run of ${key} in the Host's log` });
  expect(host.logs.filter((l) => l.includes(want + ' ') || l.endsWith(want)).length).toBe(1);
}

// holds checks, on the carrier want, what the page was promised on any: ticks flow, a keyed
// call runs once, a restart of the Host costs nothing (no flicker on screen; the ticks go on
// with the successor's baseline and no gap) and Reconnect now replaces the connection, on the
// same carrier.
async function holds(tab, host, label, want) {
  await collectTicks(tab);
  await waitFor(async () => (await ticks(tab)).filter((d) => !d.reset).length >= 2, { what: `ticks over ${want}` });
  await callOnce(tab, host, `${label}-1`);

  const resets = (await ticks(tab)).filter((d) => d.reset).length;
  const before = await states(tab);
  const h = await host.handoff(); // a restart costs the page nothing, on HTTP too
  expect(h.newPid).not.toBe(h.oldPid);
  await waitFor(async () => (await ticks(tab)).filter((d) => d.reset).length === resets + 1, { what: "the successor's reset" });
  const n = (await ticks(tab)).length;
  await waitFor(async () => (await ticks(tab)).length >= n + 2, { what: 'ticks after the restart' });
  expect(await states(tab)).toEqual(before); // the restart: no flicker
  await waitCarrier(tab, want);

  await tab.evaluate(() => globalThis.lifeline.reconnectNow());
  await waitFor(async () => (await states(tab)).length > before.length, { what: 'Reconnect now to replace the connection' });
  await waitState(tab, 'connected');
  await waitCarrier(tab, want);
  const m = (await ticks(tab)).length;
  await waitFor(async () => (await ticks(tab)).length >= m + 2, { what: 'ticks after Reconnect now' });
  expect(gapsIn(await ticks(tab))).toEqual([]);
  await callOnce(tab, host, `${label}-2`);
}

// opens checks that once the path carries WebSockets the page moves to one: make-before-break,
// no tick lost or repeated, no state change on screen, a keyed call still run once.
async function opens(tab, host, label, open) {
  const before = await states(tab);
  const resets = (await ticks(tab)).filter((d) => d.reset).length;
  await open();
  // The next probe comes within twice the wait before it (1, 2, 4, 8 s…, spread by jitter).
  await waitCarrier(tab, 'websocket', 30_000);
  const n = (await ticks(tab)).length;
  await waitFor(async () => (await ticks(tab)).length >= n + 3, { what: 'ticks over the WebSocket' });
  const got = await ticks(tab);
  expect(gapsIn(got)).toEqual([]);
  expect(got.filter((d) => d.reset).length).toBe(resets); // no baseline more: the cursor carried over
  expect(await states(tab)).toEqual(before); // no flicker on screen
  await callOnce(tab, host, `${label}-3`);
}

// The ways a path breaks WebSockets (internal/test/pathproxy) and the carrier the page must
// settle on: a refusal, a socket closed at once and a handshake never answered leave a stream
// (an answer delivered as it comes); a path that buffers a response to its end leaves polls.
for (const [mode, want] of [['refuse-403', 'stream'], ['close-at-once', 'stream'], ['silent', 'stream'], ['buffer', 'poll']]) {
  test(`a path that ${mode}s the WebSocket: connected over ${want}, every promise kept there; once it opens, back on a WebSocket, no tick lost or repeated`, async ({ browse, hosts }) => {
    test.setTimeout(120_000);
    const host = await hosts.start({});
    const p = await startPath(host, mode);
    try {
      const tab = await browse.tab();
      await tab.addInitScript(quickUpgrades);
      await recordStates(tab);
      await tab.goto(p.url('/'));
      await waitState(tab, 'connected', 4000);
      await waitCarrier(tab, want);
      expect(await p.upgrades()).toBeGreaterThanOrEqual(1); // it tried a WebSocket first
      await holds(tab, host, mode, want);
      await opens(tab, host, mode, () => p.mode('open'));
      expect(await carrier(tab)).toBe('websocket');
    } finally {
      await p.stop();
    }
  });
}

test('behind Debian\'s stock squid, which refuses CONNECT to any port but 443: connected over HTTP within 3 s, every promise kept there; the next visit starts on HTTP; once the proxy passes WebSockets, back on one', async ({ browse, hosts }) => {
  test.setTimeout(120_000);
  const squid = await startSquid();
  try {
    const host = await hosts.start({});
    const session = await browse.session({ proxy: squid.server });
    const tab = await session.newTab();
    await tab.addInitScript(quickUpgrades);
    await recordStates(tab);
    const t0 = Date.now();
    await tab.goto(host.url('/'));
    await waitState(tab, 'connected', 3000);
    console.log(`[${browse.engine.name}] behind squid: connected ${Date.now() - t0} ms after the navigation began, on ${await carrier(tab)}`);
    await waitCarrier(tab, 'stream');
    expect(squid.sockets()).toBeGreaterThanOrEqual(1); // the WebSocket it tried, refused
    // The indicator says what the network does, in words.
    expect(await text(tab, '#connection-detail')).toContain('does not carry WebSockets');
    await holds(tab, host, 'squid', 'stream');

    // The next visit remembers the network: it starts on HTTP at once. The one WebSocket it may
    // try is the loader's early socket, opened while the wasm loads (web/boot.js, openEarly):
    // the proxy refuses it at once, the Host never sees it, and the page does not wait for it
    // (a shared page that finds the hub up makes none).
    const before = squid.sockets();
    const again = await session.newTab();
    const t1 = Date.now();
    await again.goto(host.url('/'));
    await waitState(again, 'connected', 3000);
    console.log(`[${browse.engine.name}] behind squid, the next visit: connected ${Date.now() - t1} ms after the navigation began`);
    expect(await carrier(again)).toBe('stream');
    expect(squid.sockets()).toBeLessThanOrEqual(before + 1);
    await again.close();

    // The proxy's administrator lets CONNECT through to the Host's port. Not for an engine that
    // never tunnels a WebSocket through a proxy (WebKitGTK sends squid a GET of the ws:// URL,
    // which squid cannot upgrade: 501): no rule of squid's opens that path, and the page stays
    // on HTTP (its pathproxy and nginx scenarios hold the way back to a WebSocket).
    if (browse.engine.can.proxyWebSockets === 'connect') {
      await opens(tab, host, 'squid', () => squid.allowConnect(host.port));
    } else {
      console.log(`[${browse.engine.name}] behind squid: no way back to a WebSocket (the engine asks the proxy for ${browse.engine.can.proxyWebSockets}, not CONNECT)`);
      const n = (await ticks(tab)).length;
      await waitFor(async () => (await ticks(tab)).length >= n + 3, { what: 'ticks on HTTP, on and on' });
      expect(await carrier(tab)).toBe('stream');
    }
  } finally {
    await squid.stop();
  }
});

test('behind nginx as a plain reverse proxy (no Upgrade passed on), the page connects over HTTP and keeps every promise there; once nginx passes the upgrade it is back on a WebSocket', async ({ browse, hosts }) => {
  test.setTimeout(120_000);
  const host = await hosts.start({});
  const nginx = await startNginx(host);
  try {
    const tab = await browse.tab();
    await tab.addInitScript(quickUpgrades);
    await recordStates(tab);
    await tab.goto(nginx.url('/'));
    await waitState(tab, 'connected', 3000);
    await waitCarrier(tab, 'stream');
    await holds(tab, host, 'nginx', 'stream');
    await opens(tab, host, 'nginx', () => nginx.passUpgrade());
  } finally {
    await nginx.stop();
  }
});
