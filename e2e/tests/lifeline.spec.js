// End-to-end scenarios of issue 5, against the real cmd/host with real faults. Every scenario
// records each data-state the indicator takes and asserts the sequence, not only the end.
const { test, expect, recordStates, states, waitState, waitFor, collectTicks, ticks, gapsIn } = require('./fixtures');

const fast = { recovery: { slowAfterMs: 1000, deadlineMs: 3000 } };

async function shot(page, testInfo, name) {
  await page.locator('#settings').screenshot({ path: testInfo.outputPath(`${name}.png`) });
}

// The sequence may repeat connecting/reconnecting any number of times during an outage; this
// collapses those runs so the assertion says what matters.
function collapse(list) {
  const out = [];
  for (const s of list) {
    const k = s === 'connecting' || s === 'reconnecting' ? 'retrying' : s;
    if (out[out.length - 1] !== k) out.push(k);
  }
  return out;
}

test('1. the page loads connected and ticks advance', async ({ page, hosts }) => {
  const host = await hosts.start({});
  await recordStates(page);
  await page.goto(host.url('/'));
  await waitState(page, 'connected');
  const first = Number(await page.locator('#ticks').getAttribute('data-n'));
  await expect.poll(async () => Number(await page.locator('#ticks').getAttribute('data-n')), { timeout: 5000 }).toBeGreaterThan(first);
  expect(await states(page)).toEqual(['connecting', 'connected']);
  await expect(page.locator('#reconnect-now')).toBeDisabled();
});

test('2. an outage longer than 20 s: reconnecting with a countdown, then connected with no gap', async ({ page, hosts }) => {
  test.setTimeout(120_000);
  const host = await hosts.start({});
  await recordStates(page);
  await page.goto(host.url('/'));
  await waitState(page, 'connected');
  await collectTicks(page);
  await waitFor(async () => (await ticks(page)).some((d) => !d.reset), { what: 'a first tick' });

  await host.fault('outage');
  await waitState(page, 'reconnecting');
  const secs = await page.locator('#connection-status').getAttribute('data-seconds');
  expect(Number(secs)).toBeGreaterThanOrEqual(0);
  // The countdown is shown beside the label, outside its live region (tests/indicator.spec.js).
  await expect(page.locator('#connection-label')).toHaveText('Reconnecting');
  await expect(page.locator('#connection-countdown')).toHaveText(/^in \d+ s$/);
  await expect(page.locator('#reconnect-now')).toBeEnabled();
  await page.waitForTimeout(21_000); // longer than the old terminal policy
  await expect(page.locator('#connection-status')).toHaveAttribute('data-state', /reconnecting|connecting/);

  await host.fault('up');
  await waitState(page, 'connected', 12_000); // at most the 10 s top cap, plus the handshake
  const before = (await ticks(page)).length;
  await waitFor(async () => (await ticks(page)).length >= before + 2, { what: 'ticks after the outage' });
  const got = await ticks(page);
  expect(gapsIn(got)).toEqual([]);
  expect(got.filter((d) => d.reset).length).toBe(1); // only the fresh subscription's baseline
  expect(collapse(await states(page))).toEqual(['retrying', 'connected', 'retrying', 'connected']);
});

for (const mode of ['stall-open', 'stall-ready']) {
  test(`3/4. a stalled handshake (${mode}): slow at the warning, cancelled at the deadline; Reconnect now replaces it`, async ({ page, hosts }) => {
    const host = await hosts.start(fast);
    await host.fault(mode);
    await page.addInitScript(() => {
      window.__times = [];
      window.addEventListener('lifeline:state', (e) => {
        const d = e.detail;
        const s = d.state === 'connecting' && d.slow ? 'slow' : d.state;
        const last = window.__times[window.__times.length - 1];
        // When the controller changed state (d.at), not when this page heard of it: the
        // status crosses a message port, which a busy page may serve late.
        if (!last || last.s !== s) window.__times.push({ s, t: d.at });
      });
    });
    await recordStates(page);
    await page.goto(host.url('/'));
    await waitState(page, 'reconnecting', 8000);
    const times = await page.evaluate(() => window.__times);
    const at = (s) => times.find((x) => x.s === s).t;
    const slowAfter = at('slow') - at('connecting');
    const deadline = at('reconnecting') - at('connecting');
    expect(slowAfter).toBeGreaterThanOrEqual(950);
    expect(slowAfter).toBeLessThan(1600);
    expect(deadline).toBeGreaterThanOrEqual(2950);
    expect(deadline).toBeLessThan(3700);
    expect((await states(page)).slice(0, 3)).toEqual(['connecting', 'slow', 'reconnecting']);

    // During the next stall, "Reconnect now" closes the stalled socket and dials a new one.
    await waitState(page, 'connecting', 5000);
    const h0 = await host.health();
    const t0 = Date.now();
    await page.locator('#reconnect-now').click();
    const h1 = await waitFor(async () => {
      const h = await host.health();
      return h.accepted > h0.accepted ? h : null;
    }, { timeout: 2000, interval: 20, what: 'a new socket at the Host' });
    expect(Date.now() - t0).toBeLessThan(500);
    await waitFor(async () => (await host.health()).open <= 1, { timeout: 2000, what: 'the stalled socket closed' });
    expect(h1.accepted).toBe(h0.accepted + 1);

    // Once the Host answers again, the ladder (a few seconds at most here) brings the page back.
    await host.fault('up');
    await waitState(page, 'connected', 15_000);
  });
}

test('5. offline: no dial while offline, connected within 2 s of online', async ({ page, context, hosts }) => {
  const host = await hosts.start({});
  await recordStates(page);
  await page.goto(host.url('/'));
  await waitState(page, 'connected');
  await context.setOffline(true);
  await waitState(page, 'offline', 3000);
  const h0 = await host.health();
  await page.waitForTimeout(5000);
  const h1 = await host.health();
  expect(h1.accepted).toBe(h0.accepted);
  await expect(page.locator('#reconnect-now')).toBeEnabled();
  const t0 = Date.now();
  await context.setOffline(false);
  await waitState(page, 'connected', 2000);
  expect(Date.now() - t0).toBeLessThan(2000);
  expect(await states(page)).toEqual(['connecting', 'connected', 'offline', 'connecting', 'connected']);
});

const zh = {
  connected: '已连接', connecting: '正在连接…', slow: '主机响应缓慢', reconnecting: '自动重连中',
  offline: '离线', stopped: '已停止', misconfigured: '连接设置无效', button: '立即重连',
};
const en = {
  connected: 'Connected', connecting: 'Connecting…', slow: 'Host is slow to respond', reconnecting: 'Reconnecting',
  offline: 'Offline', stopped: 'Stopped', misconfigured: 'Connection settings are invalid', button: 'Reconnect now',
};

async function walkStates(page, context, host, L, testInfo, tag) {
  const label = page.locator('#connection-label');
  await waitState(page, 'connected');
  await expect(label).toHaveText(L.connected);
  await expect(page.locator('#reconnect-now')).toHaveText(L.button);
  await shot(page, testInfo, `${tag}-connected`);
  await host.fault('stall-open');
  await page.evaluate(() => globalThis.lifeline.reconnectNow());
  await waitState(page, 'connecting');
  await expect(label).toHaveText(L.connecting);
  await shot(page, testInfo, `${tag}-connecting`);
  await waitState(page, 'slow');
  await expect(label).toHaveText(L.slow);
  await shot(page, testInfo, `${tag}-slow`);
  await waitState(page, 'reconnecting');
  await expect(label).toContainText(L.reconnecting);
  await shot(page, testInfo, `${tag}-reconnecting`);
  await context.setOffline(true);
  await waitState(page, 'offline');
  await expect(label).toHaveText(L.offline);
  await shot(page, testInfo, `${tag}-offline`);
  await context.setOffline(false);
  await page.evaluate(() => globalThis.lifeline.stop());
  await waitState(page, 'stopped');
  await expect(label).toHaveText(L.stopped);
  await shot(page, testInfo, `${tag}-stopped`);
  await host.fault('up');
}

test('6. localized presentation: English, ?lang=zh and <html lang="zh-CN">', async ({ page, context, hosts }, testInfo) => {
  test.setTimeout(60_000);
  const host = await hosts.start(fast);
  await page.goto(host.url('/'));
  await walkStates(page, context, host, en, testInfo, 'en');

  await page.goto(host.url('/?lang=zh'));
  await walkStates(page, context, host, zh, testInfo, 'zh');

  // A page whose <html lang> is zh-CN. Not by route interception: Chromium treats a fulfilled
  // document as public and then blocks its WebSocket to loopback (Local Network Access).
  await page.addInitScript(() => {
    new MutationObserver((_, obs) => {
      if (document.documentElement) {
        document.documentElement.setAttribute('lang', 'zh-CN');
        obs.disconnect();
      }
    }).observe(document, { childList: true });
  });
  await page.goto(host.url('/'));
  expect(await page.evaluate(() => document.documentElement.lang)).toBe('zh-CN');
  await waitState(page, 'connected');
  await expect(page.locator('#connection-label')).toHaveText(zh.connected);
  await expect(page.locator('#reconnect-now')).toHaveText(zh.button);
});

test('7. a Host config change applies to pages loaded afterwards', async ({ page, hosts }) => {
  const host = await hosts.start({ recovery: { deadlineMs: 15000 } });
  const bootstrap = () => page.evaluate(() => JSON.parse(document.getElementById('lifeline-bootstrap').textContent));
  await page.goto(host.url('/'));
  await waitState(page, 'connected');
  expect((await bootstrap()).recovery.deadlineMs).toBe(15000);
  await host.reload({ recovery: { deadlineMs: 7000 } });
  expect((await bootstrap()).recovery.deadlineMs).toBe(15000); // a loaded page keeps its own
  await page.reload();
  await waitState(page, 'connected');
  expect((await bootstrap()).recovery.deadlineMs).toBe(7000);
});

test('8. a planned restart drains to a second Host: never leaves connected, ticks continue through a reset', async ({ page, hosts }) => {
  const first = await hosts.start({});
  const second = await hosts.start({ allowedOrigins: [first.origin] });
  await recordStates(page);
  await page.goto(first.url('/'));
  await waitState(page, 'connected');
  await collectTicks(page);
  await waitFor(async () => (await ticks(page)).some((d) => !d.reset), { what: 'a first tick' });
  await first.fault(`drain=ws://127.0.0.1:${second.port}/_lifeline/events`);
  // The page closes its draining session once its new one is ready, not before: a first Host
  // stopped while the page still waits for the second's ready frame would take the page's
  // only ready session with it (the page then says connecting, as it should).
  await waitFor(async () => (await second.health()).sessions === 1 && (await first.health()).sessions === 0, { what: 'the page moved to the second Host' });
  await first.stop();
  const resets = async () => (await ticks(page)).filter((d) => d.reset).length;
  await waitFor(async () => (await resets()) === 2, { what: 'the second log\'s reset' });
  const n = (await ticks(page)).length;
  await waitFor(async () => (await ticks(page)).length >= n + 2, { what: 'ticks from the second Host' });
  expect(gapsIn(await ticks(page))).toEqual([]);
  expect(await states(page)).toEqual(['connecting', 'connected']);
});

test('9. an invalid bootstrap shows misconfigured and names the field', async ({ page, hosts }, testInfo) => {
  const host = await hosts.start({});
  for (const [lang, L] of [['en', en], ['zh', zh]]) {
    const url = host.url(`/?lang=${lang}`);
    await page.route(url, async (route) => {
      const res = await route.fetch();
      const body = (await res.text()).replace(/"deadlineMs":\d+/, '"deadlineMs":0');
      await route.fulfill({ response: res, body });
    });
    const errors = [];
    page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
    await page.goto(url);
    await waitState(page, 'misconfigured');
    await expect(page.locator('#connection-label')).toHaveText(L.misconfigured);
    await expect(page.locator('#connection-detail')).toContainText('recovery.deadlineMs');
    await expect(page.locator('#connection-detail')).toContainText('got 0');
    expect(errors.join('\n')).toContain('recovery.deadlineMs');
    expect((await host.health()).sessions).toBe(0);
    await shot(page, testInfo, `${lang}-misconfigured`);
  }
});

test('10. back-forward navigation: connected again within 1 s of going back', async ({ page, hosts }) => {
  const host = await hosts.start({});
  await page.goto(host.url('/'));
  await waitState(page, 'connected');
  await page.goto(host.url('/settings.js'));
  const t0 = Date.now();
  await page.goBack();
  await waitState(page, 'connected', 3000);
  expect(Date.now() - t0).toBeLessThan(1000);
});
