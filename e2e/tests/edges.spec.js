// The page's edges (issue 11): embedder code can never kill the page, misuse of the API is
// reported and harmless, and a program that ends anyway is shown as failed, never as connected.
const { test, expect, recordStates, states, waitState, waitFor, ticks, gapsIn } = require('./fixtures');

// consoleErrors keeps every console.error line and every uncaught page error.
function consoleErrors(page) {
  const lines = [];
  page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') lines.push(m.text()); });
  page.on('pageerror', (e) => lines.push('pageerror: ' + e.message));
  return lines;
}

test('throwing listeners and handlers are logged and the page carries on', async ({ page, hosts }) => {
  const host = await hosts.start({ recovery: { initialDelayMs: 200, maxDelayMs: 1000 } });
  const errors = consoleErrors(page);
  await recordStates(page);
  await page.goto(host.url('/'));
  await waitState(page, 'connected');
  await page.evaluate(() => {
    window.__ticks = [];
    globalThis.lifeline.onState(() => { throw new Error('embedder bug in onState'); });
    // (This replaces the demo page's own ticks subscription: one per stream and page.)
    globalThis.lifeline.subscribe('ticks', (d) => {
      window.__ticks.push(d.reset ? { reset: true, seq: d.seq, epoch: d.epoch } : { seq: d.seq, n: d.data.n });
      throw new Error('embedder bug in a handler');
    });
    window.addEventListener('lifeline:state', () => { throw new Error('embedder bug in an event listener'); });
  });
  // The throwing handler keeps being called, event after event: its stream goes on.
  await waitFor(async () => (await ticks(page)).filter((d) => !d.reset).length >= 2, { what: 'two events for the throwing handler' });

  // And the controller goes on: an outage, then back, with every listener throwing each time.
  await host.fault('outage');
  await waitState(page, 'reconnecting');
  await host.fault('up');
  await waitState(page, 'connected', 5000);
  const before = (await ticks(page)).length;
  await waitFor(async () => (await ticks(page)).length >= before + 2, { what: 'ticks after the outage' });
  expect(gapsIn(await ticks(page))).toEqual([]);
  expect(await page.evaluate(() => globalThis.lifeline.state().state)).toBe('connected');

  const text = errors.join('\n');
  expect(text).toContain('lifeline: an onState listener threw; Lifeline carries on:');
  expect(text).toContain('embedder bug in onState');
  expect(text).toContain('lifeline: the lifeline.subscribe("ticks") handler threw; Lifeline carries on:');
  expect(text).toContain('embedder bug in a handler');
  expect(text).not.toContain('Go program has already exited');
  expect(collapse(await states(page))).toEqual(['retrying', 'connected', 'retrying', 'connected']);
});

test('misuse is reported with the call and the value, and what it returns is harmless', async ({ page, hosts }) => {
  const host = await hosts.start({});
  const errors = consoleErrors(page);
  await page.goto(host.url('/'));
  await waitState(page, 'connected');
  const results = await page.evaluate(() => {
    const L = globalThis.lifeline;
    const out = [];
    for (const [name, f] of [
      ['empty', () => L.subscribe('', () => {})],
      ['too long', () => L.subscribe('x'.repeat(300), () => {})],
      ['not a string', () => L.subscribe(5, () => {})],
      ['no handler', () => L.subscribe('ticks')],
      ['a string handler', () => L.subscribe('ticks', 'print')],
      ['onState without a function', () => L.onState({})],
    ]) {
      const r = f();
      out.push([name, typeof r]);
      r(); r(); // the remover of a refused call does nothing, however often it is called
    }
    return out;
  });
  for (const [name, kind] of results) expect(kind, name).toBe('function');
  const text = errors.join('\n');
  expect(text).toContain('lifeline: lifeline.subscribe("", fn): the protocol cannot carry this stream name (1..256 bytes of UTF-8, got 0)');
  expect(text).toContain('lifeline.subscribe("' + 'x'.repeat(32) + '…", fn): the protocol cannot carry this stream name (1..256 bytes of UTF-8, got 300)');
  expect(text).toContain('lifeline: lifeline.subscribe(stream, fn): stream must be a string, got 5');
  expect(text).toContain('lifeline: lifeline.subscribe("ticks", fn): fn must be a function, got undefined');
  expect(text).toContain('lifeline: lifeline.subscribe("ticks", fn): fn must be a function, got print');
  expect(text).toContain('lifeline: lifeline.onState(fn): fn must be a function, got');

  // Removers of real registrations: the second call is a quiet no-op.
  const n = errors.length;
  await page.evaluate(() => {
    const off = globalThis.lifeline.onState(() => {});
    const unsub = globalThis.lifeline.subscribe('ticks', () => {});
    off(); off(); unsub(); unsub();
  });
  await page.waitForTimeout(300);
  expect(errors.slice(n)).toEqual([]);
  expect(await page.evaluate(() => globalThis.lifeline.state().state)).toBe('connected');
});

for (const [lang, label] of [['en', 'Connection stopped working: reload the page'], ['zh', '连接已失效，请刷新页面']]) {
  test(`a program that ends anyway shows failed, never connected (${lang})`, async ({ page, hosts }) => {
    // In-page, where the program is the page's own (a shared hub that ends is replaced: see
    // shared.spec.js).
    await page.addInitScript(() => { globalThis.lifelineOptions = Object.assign({}, globalThis.lifelineOptions, { mode: 'in-page' }); });
    const host = await hosts.start({});
    const errors = consoleErrors(page);
    await recordStates(page);
    await page.goto(host.url(`/?lang=${lang}`));
    await waitState(page, 'connected');
    await waitFor(async () => (await host.health()).sessions === 1, { what: 'the session at the Host' });
    // Break something the Go runtime needs (its clock): its next call throws inside the wasm,
    // which unwinds the program without an exit. Nothing Lifeline does can survive that.
    await page.evaluate(() => { performance.now = () => { throw new Error('test: the clock broke'); }; });
    await waitState(page, 'failed', 5000);
    await expect(page.locator('#connection-label')).toHaveText(label);
    await expect(page.locator('#connection-detail')).toContainText('the Lifeline program stopped');
    await expect(page.locator('#connection-detail')).toContainText('test: the clock broke');
    await expect(page.locator('#reconnect-now')).toBeEnabled();
    expect(await page.evaluate(() => globalThis.lifeline.state().state)).toBe('failed');
    // Its socket is closed: the Host does not keep a session for a page that cannot read it.
    await waitFor(async () => (await host.health()).sessions === 0, { what: 'the dead page\'s session closed' });
    expect(errors.join('\n')).toContain('lifeline: the Lifeline program stopped');
    const seq = await states(page);
    expect(seq[seq.length - 1]).toBe('failed');
    // "Reconnect now" reloads the page, which starts a fresh program.
    await page.locator('#reconnect-now').click();
    await waitState(page, 'connected');
  });
}

function collapse(list) {
  const out = [];
  for (const s of list) {
    const k = s === 'connecting' || s === 'reconnecting' ? 'retrying' : s;
    if (out[out.length - 1] !== k) out.push(k);
  }
  return out;
}
