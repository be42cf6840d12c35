// What the Settings indicator says to a person: a change of state is announced once
// and the countdown never; each kind of failure is a short sentence in the page's language,
// with the raw error kept for developers (the detail's title, the console, lifeline.state()).
//
// The README's screenshots come from the last test here:
//   cd e2e && UPDATE_README_SHOTS=1 npx playwright test tests/indicator.spec.js -g README
// writes e2e/readme/settings-en.png and settings-zh.png (without the variable, the test writes
// them to its output directory only).
const path = require('path');
const { test, expect, waitState } = require('./fixtures');

const fast = { recovery: { slowAfterMs: 1000, deadlineMs: 3000 } };

// What a person reads, per kind of failure, as a careful writer put it; the tests own a copy so
// that a change of wording is a visible decision.
const SAY = {
  en: {
    reconnecting: 'Reconnecting', button: 'Reconnect now', unauthorized: 'Sign-in required',
    countdown: /^in \d+ s$/,
    timeout: 'The Host did not answer in time; retrying.',
    timeoutStopped: 'The Host did not answer in time.',
    refused: 'The Host cannot be reached; retrying.',
    busy4: 'The Host is busy and asked to wait 4 s; retrying after that.',
    busy90: 'The Host is busy and asked to wait 90 s; retrying after that.',
    busy: 'The Host is busy; retrying shortly.',
    protocol: 'The Host’s reply was not understood; retrying.',
    closed: 'The connection was lost; reconnecting.',
    silent: 'The connection stopped responding; reconnecting.',
    other: 'The connection failed; retrying.',
    offline: 'This device is offline; the page reconnects when the network is back.',
    signIn: 'The Host needs you to sign in; after signing in, choose Reconnect now.',
    misconfigured: 'This site’s connection settings need fixing; the page cannot connect until then.',
    failed: 'The page’s connection program stopped; reloading the page starts it again.',
  },
  zh: {
    reconnecting: '自动重连中', button: '立即重连', unauthorized: '需要登录',
    countdown: /^\d+ 秒后$/,
    timeout: '主机未及时响应，正在重试。',
    timeoutStopped: '主机未及时响应。',
    refused: '无法连接到主机，正在重试。',
    busy4: '主机繁忙，要求等待 4 秒，之后重试。',
    busy90: '主机繁忙，要求等待 90 秒，之后重试。',
    busy: '主机繁忙，稍后重试。',
    protocol: '无法识别主机的应答，正在重试。',
    closed: '连接已断开，正在重连。',
    silent: '连接无响应，正在重连。',
    other: '连接失败，正在重试。',
    offline: '设备已离线，网络恢复后将自动重连。',
    signIn: '主机要求登录；登录后请点击“立即重连”。',
    misconfigured: '本网站的连接设置有误，修正之前页面无法连接。',
    failed: '页面的连接程序已停止，刷新页面即可重新启动。',
  },
};

// recordDetails keeps every sentence the detail shows, in order, and every error a status
// carried, from the first paint on.
async function recordDetails(page) {
  await page.addInitScript(() => {
    window.__sentences = [];
    window.__errors = new Set();
    window.addEventListener('lifeline:state', (e) => window.__errors.add(e.detail.error || ''));
    document.addEventListener('DOMContentLoaded', () => {
      const el = document.getElementById('connection-detail');
      const push = () => {
        const s = el.querySelector('.connection-sentence');
        const text = s ? s.textContent : '';
        if (window.__sentences[window.__sentences.length - 1] !== text) window.__sentences.push(text);
      };
      push();
      new MutationObserver(push).observe(el, { childList: true, subtree: true, characterData: true });
    });
  });
}

function consoleLines(page) {
  const lines = [];
  page.on('console', (m) => lines.push(m.text()));
  return lines;
}

// showsRaw checks that the detail's title is the raw error of a status the page received, that
// the console logged it, and that none of it is in the sentence a person reads.
async function showsRaw(page, lines, pattern) {
  const detail = page.locator('#connection-detail');
  const title = await detail.getAttribute('title');
  expect(title).toMatch(pattern);
  expect(await page.evaluate((t) => window.__errors.has(t), title)).toBe(true);
  expect(lines.join('\n')).toContain('err=' + title);
  const sentence = await detail.locator('.connection-sentence').textContent();
  expect(sentence).not.toMatch(/gateway|controller|deadline exceeded|ws:\/\//);
  await expect(detail.locator('.connection-code')).toHaveCount(0);
}

for (const lang of ['en', 'zh']) {
  test(`real faults read as a sentence per kind, the raw error kept in the title (${lang})`, async ({ page, hosts }) => {
    test.setTimeout(60_000);
    const L = SAY[lang];
    const host = await hosts.start(fast);
    const lines = consoleLines(page);
    await recordDetails(page);
    await page.goto(host.url(`/?lang=${lang}`));
    await waitState(page, 'connected');
    const detail = page.locator('#connection-detail');
    const sentence = detail.locator('.connection-sentence');
    await expect(detail).toBeEmpty();
    expect(await detail.getAttribute('title')).toBeNull();

    const back = async () => {
      await host.fault('up');
      await page.evaluate(() => globalThis.lifeline.reconnectNow());
      await waitState(page, 'connected', 15_000);
      await expect(detail).toBeEmpty();
      expect(await detail.getAttribute('title')).toBeNull();
    };

    // stall-open: the handshake is held until the deadline cancels it.
    await host.fault('stall-open');
    await page.evaluate(() => globalThis.lifeline.reconnectNow());
    await expect(sentence).toHaveText(L.timeout);
    await showsRaw(page, lines, /^controller: handshake deadline exceeded after 3s$/);
    await back();

    // refuse: HTTP 503 before the upgrade; in the browser, a WebSocket that fails to open.
    await host.fault('refuse');
    await page.evaluate(() => globalThis.lifeline.reconnectNow());
    await expect(sentence).toHaveText(L.refused);
    await showsRaw(page, lines, /^gateway: dial failed: /);
    await back();

    // overload=4000: closed with 1013 and retry-after 4 s, which the sentence gives.
    await host.fault('overload=4000');
    await page.evaluate(() => globalThis.lifeline.reconnectNow());
    await expect(sentence).toHaveText(L.busy4);
    await showsRaw(page, lines, /^gateway: host overloaded: .*\(retry after 4s\)$/);
    await back();

    // outage: the connected session is dropped (closed), then every dial fails (refused).
    const n = (await page.evaluate(() => window.__sentences)).length;
    await host.fault('outage');
    await expect(sentence).toHaveText(L.refused);
    await showsRaw(page, lines, /^gateway: dial failed: /);
    const seen = (await page.evaluate(() => window.__sentences)).slice(n);
    expect(seen.slice(0, 2)).toEqual([L.closed, L.refused]);
    await back();
  });
}

// The AX node of a text, and the nearest live region (or timer) around it, in Chromium's
// accessibility tree.
async function axLiveness(page, texts) {
  const cdp = await page.context().newCDPSession(page);
  const { nodes } = await cdp.send('Accessibility.getFullAXTree');
  await cdp.detach();
  const byId = new Map(nodes.map((n) => [n.nodeId, n]));
  const prop = (n, name) => ((n.properties || []).find((p) => p.name === name) || { value: {} }).value.value;
  const out = {};
  for (const [key, match] of Object.entries(texts)) {
    const node = nodes.find((n) => !n.ignored && n.role && n.role.value === 'StaticText' && match.test(n.name.value));
    if (!node) throw new Error(`no text ${match} in the accessibility tree`);
    let live = null;
    for (let a = byId.get(node.parentId); a && !live; a = byId.get(a.parentId)) {
      if (prop(a, 'live') || a.role.value === 'timer') live = { role: a.role.value, live: prop(a, 'live') || 'off' };
    }
    out[key] = { text: node.name.value, live };
  }
  return out;
}

test('the state label is announced once per change; the countdown is shown, not announced', async ({ page, hosts }) => {
  test.setTimeout(60_000);
  // A fixed 20 s between attempts: the checks and the 5 s window below fit in one countdown with
  // room to spare on a loaded machine; Reconnect now ends it, so the length costs nothing.
  const host = await hosts.start({ recovery: { initialDelayMs: 20_000, maxDelayMs: 20_000, jitter: 0 } });
  await page.goto(host.url('/'));
  await waitState(page, 'connected');
  await host.fault('outage');
  await waitState(page, 'reconnecting');
  // The dropped session is the failure the countdown waits on.
  await expect(page.locator('#connection-detail .connection-sentence')).toHaveText(SAY.en.closed);
  await expect.poll(async () => Number(await page.locator('#connection-status').getAttribute('data-seconds'))).toBeGreaterThanOrEqual(19);

  // What a screen reader finds: the label, the countdown as a timer, the button, the sentence.
  await expect(page.locator('#connection-status')).toMatchAriaSnapshot(`
    - text: Reconnecting
    - timer: /in \\d+ s/
    - button "Reconnect now"
    - text: ${SAY.en.closed}
  `);
  const ax = await axLiveness(page, { label: /^Reconnecting$/, countdown: /^in \d+ s$/, detail: /^The connection was lost/ });
  expect(ax.label.live).toEqual({ role: 'generic', live: 'polite' });
  expect(ax.detail.live).toEqual({ role: 'generic', live: 'polite' });
  // The countdown's nearest region is the timer (aria-live off): no polite region above it.
  expect(ax.countdown.live).toEqual({ role: 'timer', live: 'off' });
  expect(await page.locator('#connection-countdown').evaluate((el) => el.closest('[aria-live]:not([aria-live="off"])'))).toBeNull();

  // Every mutation of every live region of the indicator, every countdown text and every state.
  await page.evaluate(() => {
    const box = document.getElementById('connection-status');
    window.__live = [];
    window.__shown = [];
    window.__stateChanges = 0;
    for (const el of box.querySelectorAll('[aria-live]:not([aria-live="off"])')) {
      new MutationObserver((records) => window.__live.push(...records.map((r) => `${el.id} ${r.type}`)))
        .observe(el, { childList: true, subtree: true, characterData: true, attributes: true });
    }
    const countdown = document.getElementById('connection-countdown');
    new MutationObserver(() => window.__shown.push(countdown.textContent))
      .observe(countdown, { childList: true, subtree: true, characterData: true });
    new MutationObserver(() => window.__stateChanges++).observe(box, { attributes: true, attributeFilter: ['data-state'] });
  });

  // 5 s of countdown: the number changes every second, the live regions not once.
  await page.waitForTimeout(5000);
  const quiet = await page.evaluate(() => ({ live: window.__live.slice(), shown: window.__shown.slice(), states: window.__stateChanges }));
  expect(quiet.states).toBe(0);
  expect(quiet.shown.length).toBeGreaterThanOrEqual(4);
  for (const s of quiet.shown) expect(s).toMatch(/^in \d+ s$/);
  expect(quiet.live).toEqual([]);

  // Back: each change of state rewrites the label once, and the sentence goes once.
  await host.fault('up');
  await page.locator('#reconnect-now').click();
  await waitState(page, 'connected');
  await page.waitForTimeout(500);
  const after = await page.evaluate(() => ({ live: window.__live.slice(), states: window.__stateChanges }));
  expect(after.states).toBeGreaterThanOrEqual(2); // connecting, connected
  // (The title going with the error is an attribute change, which no live region announces.)
  expect(after.live.filter((r) => r === 'connection-label childList').length).toBe(after.states);
  expect(after.live.filter((r) => r.startsWith('connection-label') && r !== 'connection-label childList')).toEqual([]);
  expect(after.live.filter((r) => r === 'connection-detail childList')).toEqual(['connection-detail childList']);
  await expect(page.locator('#connection-countdown')).toBeHidden();
  expect(await page.locator('#connection-status').getAttribute('data-seconds')).toBeNull();
});

// dispatch shows a status as the wasm would send it; the page's own controller is stopped first,
// so nothing else writes the indicator meanwhile.
async function dispatch(page, detail) {
  await page.evaluate((d) => window.dispatchEvent(new CustomEvent('lifeline:state', { detail: d })), detail);
}

for (const lang of ['en', 'zh']) {
  test(`the sentence is keyed off the status's kind, and read from the error where there is none (${lang})`, async ({ page, hosts }) => {
    const L = SAY[lang];
    const host = await hosts.start({});
    await page.goto(host.url(`/?lang=${lang}`));
    await waitState(page, 'connected');
    await page.evaluate(() => globalThis.lifeline.stop());
    await waitState(page, 'stopped');
    const box = page.locator('#connection-status');
    const detail = page.locator('#connection-detail');
    const sentence = detail.locator('.connection-sentence');
    const code = detail.locator('.connection-code');

    const rows = [
      // name, status, sentence, code
      ['kind wins over the text', { state: 'reconnecting', kind: 'silent', error: 'gateway: session closed: x' }, L.silent, null],
      ['protocol', { state: 'connecting', kind: 'protocol', error: 'gateway: host broke the protocol: unhandled frame type "x"' }, L.protocol, null],
      ['busy with the Host\'s retryAfter', { state: 'reconnecting', kind: 'busy', retryAfter: 4000, error: 'gateway: host overloaded' }, L.busy4, null],
      ['busy without one', { state: 'reconnecting', kind: 'busy', error: 'gateway: host overloaded: close 1013 ""' }, L.busy, null],
      ['stopped: nothing is retried', { state: 'stopped', kind: 'timeout', error: 'controller: handshake deadline exceeded after 3s' }, L.timeoutStopped, null],
      ['offline', { state: 'offline', kind: 'offline', error: '' }, L.offline, null],
      ['a kind this indicator does not know', { state: 'reconnecting', kind: 'brand-new', error: 'x' }, L.other, null],
      ['no kind: silent, from the text', { state: 'reconnecting', error: 'gateway: link silent for 2.5 × heartbeat: no frame for 25s (heartbeat 10s)' }, L.silent, null],
      ['no kind: protocol, from the text', { state: 'reconnecting', error: 'gateway: host broke the protocol: a binary message of 3 bytes' }, L.protocol, null],
      ['no kind: busy, the retry-after from the text', { state: 'reconnecting', error: 'gateway: host overloaded: close 1013 "retry-after=90000" (retry after 1m30s)' }, L.busy90, null],
      ['no kind: closed, from the text', { state: 'connecting', error: 'gateway: session closed: failed to read: EOF' }, L.closed, null],
      ['no kind: an error never seen before', { state: 'reconnecting', error: 'something new' }, L.other, null],
      ['misconfigured names the fields and values', { state: 'misconfigured', kind: 'misconfigured', error: 'gateway: recovery.deadlineMs: must be an integer in 1..2147483647, got 0; recovery.factor: must be a finite number >= 1, got -1' }, L.misconfigured, 'recovery.deadlineMs, got 0; recovery.factor, got -1'],
      ['misconfigured with no field shows the error', { state: 'misconfigured', error: '/lifeline.wasm: TypeError: Failed to fetch' }, L.misconfigured, '/lifeline.wasm: TypeError: Failed to fetch'],
      ['failed shows the cause', { state: 'failed', kind: 'failed', error: 'the Lifeline program stopped: it exited with code 2; reload the page to reconnect' }, L.failed, 'the Lifeline program stopped: it exited with code 2; reload the page to reconnect'],
      ['connected: no detail', { state: 'connected', kind: '', error: '' }, null, null],
    ];
    for (const [name, status, want, wantCode] of rows) {
      await dispatch(page, status);
      if (want === null) {
        await expect(detail, name).toBeEmpty();
      } else {
        await expect(sentence, name).toHaveText(want);
      }
      if (wantCode === null) await expect(code, name).toHaveCount(0);
      else await expect(code, name).toHaveText(wantCode);
      if (status.error) await expect(detail, name).toHaveAttribute('title', status.error);
      else expect(await detail.getAttribute('title'), name).toBeNull();
    }

    // unauthorized: its own label and colour; Reconnect now stays.
    await dispatch(page, { state: 'unauthorized', kind: 'unauthorized', error: 'gateway: dial failed: 401' });
    await expect(box).toHaveAttribute('data-state', 'unauthorized');
    await expect(page.locator('#connection-label')).toHaveText(L.unauthorized);
    await expect(sentence).toHaveText(L.signIn);
    await expect(page.locator('#reconnect-now')).toBeEnabled();
    await expect(page.locator('#reconnect-now')).toHaveText(L.button);
    const dot = () => box.evaluate((el) => getComputedStyle(el, '::before').backgroundColor);
    expect(await dot()).toBe('rgb(9, 105, 218)');
    await dispatch(page, { state: 'failed', kind: 'failed', error: 'x' });
    expect(await dot()).toBe('rgb(130, 80, 223)');
    await dispatch(page, { state: 'reconnecting', kind: 'closed', error: 'x', nextAttempt: Date.now() + 3000 });
    expect(await dot()).toBe('rgb(207, 34, 46)');
  });
}

test('the indicator completes an older markup: the countdown and the ARIA attributes', async ({ page, hosts }) => {
  const host = await hosts.start({ recovery: { initialDelayMs: 10_000, maxDelayMs: 10_000, jitter: 0 } });
  // The markup of the first indicator: no countdown element, no ARIA but the label's.
  await page.addInitScript(() => {
    document.addEventListener('readystatechange', () => {
      if (document.readyState !== 'interactive') return;
      document.getElementById('connection-countdown').remove();
      document.getElementById('connection-detail').removeAttribute('aria-live');
      document.getElementById('connection-detail').removeAttribute('aria-atomic');
    }, { once: true });
  });
  await page.goto(host.url('/'));
  await waitState(page, 'connected');
  await host.fault('outage');
  await waitState(page, 'reconnecting');
  await expect(page.locator('#connection-countdown')).toHaveText(/^in \d+ s$/);
  await expect(page.locator('#connection-countdown')).toHaveAttribute('role', 'timer');
  await expect(page.locator('#connection-detail')).toHaveAttribute('aria-live', 'polite');
  // In the order of the contract: label, countdown, button, detail.
  expect(await page.locator('#connection-status > *').evaluateAll((els) => els.map((e) => e.id)))
    .toEqual(['connection-label', 'connection-countdown', 'reconnect-now', 'connection-detail']);
});

for (const lang of ['en', 'zh']) {
  test(`README: the indicator reconnecting after a stalled handshake (${lang})`, async ({ page, hosts }, testInfo) => {
    const L = SAY[lang];
    // A stalled handshake, then a long wait before the next attempt: a still picture.
    const host = await hosts.start({ recovery: { slowAfterMs: 1000, deadlineMs: 3000, initialDelayMs: 10_000, maxDelayMs: 10_000, jitter: 0 } });
    await host.fault('stall-open');
    await page.goto(host.url(`/?lang=${lang}`));
    await waitState(page, 'reconnecting', 8000);
    await expect(page.locator('#connection-label')).toHaveText(L.reconnecting);
    await expect(page.locator('#connection-countdown')).toHaveText(L.countdown);
    await expect(page.locator('#connection-detail .connection-sentence')).toHaveText(L.timeout);
    const file = `settings-${lang}.png`;
    const out = process.env.UPDATE_README_SHOTS ? path.join(__dirname, '..', 'readme', file) : testInfo.outputPath(file);
    await page.locator('#settings').screenshot({ path: out });
    expect(await page.locator('#connection-status').getAttribute('data-state')).toBe('reconnecting');
  });
}
