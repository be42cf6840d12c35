// Every network (PROTOCOL.md §11): where a WebSocket cannot get through, the page connects over
// the HTTP carrier, and keeps every promise there; once the path opens, it is back on a
// WebSocket, losing and repeating nothing. The middleboxes are real and started here: Debian's
// squid with its stock configuration, nginx as a plain reverse proxy, and bin/pathproxy for
// the other ways networks break WebSockets.
const { test, expect, withMode, recordStates, states, waitState, waitFor, collectTicks, ticks, gapsIn } = require('./fixtures');
const { startSquid, startPath, startNginx } = require('./middleboxes');

// A page on the HTTP carrier tries a WebSocket again after a second here (lifelineOptions
// .upgradeAfterMs; 15 s by default), so that a path that opens is seen within the test.
async function quickUpgrades(context) {
  await context.addInitScript(() => {
    globalThis.lifelineOptions = Object.assign({}, globalThis.lifelineOptions, { upgradeAfterMs: 1000 });
  });
}

async function carrier(page) {
  return page.getAttribute('#connection-status', 'data-carrier');
}

async function waitCarrier(page, want, timeout = 10_000) {
  await page.waitForSelector(`#connection-status[data-carrier="${want}"]`, { timeout });
}

// callOnce makes a keyed call of the demo board and checks the Host ran it once.
async function callOnce(page, host, key) {
  const reply = await page.evaluate((key) => globalThis.lifeline.call('board.post', { text: 'via ' + key }, { key }), key);
  expect(reply.text).toBe('via ' + key);
  const want = `msg="demo: board call ran" call=board.post key=${key}`;
  await waitFor(() => host.logs.some((l) => l.includes(want)), { what: `the run of ${key} in the Host's log` });
  expect(host.logs.filter((l) => l.includes(want + ' ') || l.endsWith(want)).length).toBe(1);
}

// holds checks, on the carrier want, what the page was promised on any: ticks flow, a keyed
// call runs once, a restart of the Host costs nothing (no flicker on screen; the ticks go on
// with the successor's baseline and no gap) and Reconnect now replaces the connection, on the
// same carrier. Returns the states recorded so far.
async function holds(page, host, label, want) {
  await collectTicks(page);
  await waitFor(async () => (await ticks(page)).filter((d) => !d.reset).length >= 2, { what: `ticks over ${want}` });
  await callOnce(page, host, `${label}-1`);

  const resets = (await ticks(page)).filter((d) => d.reset).length;
  const before = await states(page);
  const h = await host.handoff(); // a restart costs the page nothing, on HTTP too
  expect(h.newPid).not.toBe(h.oldPid);
  await waitFor(async () => (await ticks(page)).filter((d) => d.reset).length === resets + 1, { what: "the successor's reset" });
  const n = (await ticks(page)).length;
  await waitFor(async () => (await ticks(page)).length >= n + 2, { what: 'ticks after the restart' });
  expect(await states(page)).toEqual(before); // the restart: no flicker
  await waitCarrier(page, want);

  await page.evaluate(() => globalThis.lifeline.reconnectNow());
  await waitFor(async () => (await states(page)).length > before.length, { what: 'Reconnect now to replace the connection' });
  await waitState(page, 'connected');
  await waitCarrier(page, want);
  const m = (await ticks(page)).length;
  await waitFor(async () => (await ticks(page)).length >= m + 2, { what: 'ticks after Reconnect now' });
  expect(gapsIn(await ticks(page))).toEqual([]);
  await callOnce(page, host, `${label}-2`);
  return states(page);
}

// opens checks that once the path carries WebSockets the page moves to one: make-before-break,
// no tick lost or repeated, no state change on screen, a keyed call still run once.
async function opens(page, host, label, open) {
  const before = await states(page);
  const resets = (await ticks(page)).filter((d) => d.reset).length;
  await open();
  // The next probe comes within twice the wait before it (1, 2, 4, 8 s…, spread by jitter).
  await waitCarrier(page, 'websocket', 30_000);
  const n = (await ticks(page)).length;
  await waitFor(async () => (await ticks(page)).length >= n + 3, { what: 'ticks over the WebSocket' });
  const got = await ticks(page);
  expect(gapsIn(got)).toEqual([]);
  expect(got.filter((d) => d.reset).length).toBe(resets); // no baseline more: the cursor carried over
  expect(await states(page)).toEqual(before); // no flicker on screen
  await callOnce(page, host, `${label}-3`);
}

test.describe('behind Debian\'s stock squid, which refuses CONNECT to any port but 443', () => {
  test('the page connects over HTTP within 3 s and keeps every promise there; it starts on HTTP on its next visit; once the proxy passes WebSockets it is back on one', async ({ browser, hosts }) => {
    test.setTimeout(120_000);
    const squid = await startSquid();
    try {
      const host = await hosts.start({});
      const context = await withMode(await browser.newContext({ proxy: { server: squid.server, bypass: '<-loopback>' } }));
      await quickUpgrades(context);
      const page = await context.newPage();
      await recordStates(page);
      const t0 = Date.now();
      await page.goto(host.url('/'));
      await waitState(page, 'connected', 3000);
      console.log(`behind squid: connected ${Date.now() - t0} ms after the navigation began, on ${await carrier(page)}`);
      await waitCarrier(page, 'stream');
      expect(squid.connects()).toBeGreaterThanOrEqual(1); // the WebSocket it tried, refused
      // The indicator says what the network does, in words.
      await expect(page.locator('#connection-detail')).toContainText('does not carry WebSockets');
      await holds(page, host, 'squid', 'stream');

      // The next visit remembers the network: it starts on HTTP at once. The one CONNECT it may
      // make is the loader's early socket, opened while the wasm loads (web/boot.js,
      // openEarly): the proxy refuses it at once, the Host never sees it, and the page does
      // not wait for it (a shared page that finds the hub up makes none).
      const before = squid.connects();
      const again = await context.newPage();
      const t1 = Date.now();
      await again.goto(host.url('/'));
      await waitState(again, 'connected', 3000);
      console.log(`behind squid, the next visit: connected ${Date.now() - t1} ms after the navigation began`);
      expect(await carrier(again)).toBe('stream');
      expect(squid.connects()).toBeLessThanOrEqual(before + 1);
      await again.close();

      // The proxy's administrator lets CONNECT through to the Host's port.
      await opens(page, host, 'squid', () => squid.allowConnect(host.port));
      await context.close();
    } finally {
      await squid.stop();
    }
  });
});

test('behind nginx as a plain reverse proxy (no Upgrade passed on), the page connects over HTTP and keeps every promise there; once nginx passes the upgrade it is back on a WebSocket', async ({ browser, hosts }) => {
  test.setTimeout(120_000);
  const host = await hosts.start({});
  const nginx = await startNginx(host);
  try {
    const context = await withMode(await browser.newContext());
    await quickUpgrades(context);
    const page = await context.newPage();
    await recordStates(page);
    await page.goto(nginx.url('/'));
    await waitState(page, 'connected', 3000);
    await waitCarrier(page, 'stream');
    await holds(page, host, 'nginx', 'stream');
    await opens(page, host, 'nginx', () => nginx.passUpgrade());
    await context.close();
  } finally {
    await nginx.stop();
  }
});

for (const [mode, want] of [['refuse-403', 'stream'], ['close-at-once', 'stream'], ['silent', 'stream'], ['buffer', 'poll']]) {
  test(`a path that ${mode}s the WebSocket: connected over ${want}, every promise kept there; once it opens, back on a WebSocket, no tick lost or repeated`, async ({ browser, hosts }) => {
    test.setTimeout(120_000);
    const host = await hosts.start({});
    const p = await startPath(host, mode);
    try {
      const context = await withMode(await browser.newContext());
      await quickUpgrades(context);
      const page = await context.newPage();
      await recordStates(page);
      await page.goto(p.url('/'));
      await waitState(page, 'connected', 4000);
      await waitCarrier(page, want);
      await holds(page, host, mode, want);
      await opens(page, host, mode, () => p.mode('open'));
      await context.close();
    } finally {
      await p.stop();
    }
  });
}
