// The localized presentation in Chromium only: its pictures of the indicator in each state are
// the ones the suite keeps, from one engine. The other scenarios run in every engine:
// scenarios/ (connect, faults, restart, lifecycle).
const { test, expect, waitState } = require('./fixtures');

const fast = { recovery: { slowAfterMs: 1000, deadlineMs: 3000 } };

async function shot(page, testInfo, name) {
  await page.locator('#settings').screenshot({ path: testInfo.outputPath(`${name}.png`) });
}

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
