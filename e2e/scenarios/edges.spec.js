// The page's edges in every engine: embedder code can never kill the page, misuse of
// the API is reported and harmless, and a program that ends anyway is shown as failed, never as
// connected.
const { test, expect, waitFor, gapsIn } = require('./fixtures');
const { waitState, waitPage, text, recordStates, states, ticks, collapse } = require('./page');

// problems is every console error and warning of a tab, and every uncaught error, as text.
async function problems(tab) {
  return (await tab.console()).filter((l) => ['error', 'warn', 'pageerror'].includes(l.type)).map((l) => (l.type === 'pageerror' ? 'pageerror: ' : '') + l.text);
}

test('throwing listeners and handlers are logged and the page carries on', async ({ browse, hosts }) => {
  const host = await hosts.start({ recovery: { initialDelayMs: 200, maxDelayMs: 1000 } });
  const tab = await browse.tab();
  await recordStates(tab);
  await tab.goto(host.url('/'));
  await waitState(tab, 'connected');
  await tab.evaluate(() => {
    window.__ticks = [];
    globalThis.lifeline.onState(() => { throw new Error('embedder bug in onState'); });
    // (This replaces the demo page's own ticks subscription: one per stream and page.)
    globalThis.lifeline.subscribe('ticks', (d) => {
      window.__ticks.push(d.reset ? { reset: true, seq: d.seq, epoch: d.epoch } : { seq: d.seq, n: d.data.n });
      throw new Error('embedder bug in a handler');
    });
    window.addEventListener('lifeline:state', () => { throw new Error('embedder bug in an event listener'); });
  });
  await waitFor(async () => (await ticks(tab)).filter((d) => !d.reset).length >= 2, { what: 'two events for the throwing handler' });
  await host.fault('outage');
  await waitState(tab, 'reconnecting');
  await host.fault('up');
  await waitState(tab, 'connected', 5000);
  const before = (await ticks(tab)).length;
  await waitFor(async () => (await ticks(tab)).length >= before + 2, { what: 'ticks after the outage' });
  expect(gapsIn(await ticks(tab))).toEqual([]);
  expect(await tab.evaluate(() => globalThis.lifeline.state().state)).toBe('connected');
  const log = (await problems(tab)).join('\n');
  expect(log).toContain('lifeline: an onState listener threw; Lifeline carries on:');
  expect(log).toContain('embedder bug in onState');
  expect(log).toContain('lifeline: the lifeline.subscribe("ticks") handler threw; Lifeline carries on:');
  expect(log).toContain('embedder bug in a handler');
  expect(log).not.toContain('Go program has already exited');
  expect(collapse(await states(tab))).toEqual(['retrying', 'connected', 'retrying', 'connected']);
});

test('misuse is reported with the call and the value, and what it returns is harmless', async ({ browse, hosts }) => {
  const host = await hosts.start({});
  const tab = await browse.tab();
  await tab.goto(host.url('/'));
  await waitState(tab, 'connected');
  const results = await tab.evaluate(() => {
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
  const log = (await problems(tab)).join('\n');
  expect(log).toContain('lifeline: lifeline.subscribe("", fn): the protocol cannot carry this stream name (1..256 bytes of UTF-8, got 0)');
  expect(log).toContain('lifeline.subscribe("' + 'x'.repeat(32) + '…", fn): the protocol cannot carry this stream name (1..256 bytes of UTF-8, got 300)');
  expect(log).toContain('lifeline: lifeline.subscribe(stream, fn): stream must be a string, got 5');
  expect(log).toContain('lifeline: lifeline.subscribe("ticks", fn): fn must be a function, got undefined');
  expect(log).toContain('lifeline: lifeline.subscribe("ticks", fn): fn must be a function, got print');
  expect(log).toContain('lifeline: lifeline.onState(fn): fn must be a function, got');

  // Removers of real registrations: the second call is a quiet no-op.
  const n = (await problems(tab)).length;
  await tab.evaluate(() => {
    const off = globalThis.lifeline.onState(() => {});
    const unsub = globalThis.lifeline.subscribe('ticks', () => {});
    off(); off(); unsub(); unsub();
  });
  await new Promise((r) => setTimeout(r, 300)); // a window in which a late report would be seen
  expect((await problems(tab)).slice(n)).toEqual([]);
  expect(await tab.evaluate(() => globalThis.lifeline.state().state)).toBe('connected');
});

for (const [lang, label] of [['en', 'Connection stopped working: reload the page'], ['zh', '连接已失效，请刷新页面']]) {
  test(`a program that ends anyway shows failed, never connected (${lang})`, async ({ browse, hosts }) => {
    const host = await hosts.start({});
    // In-page, where the program is the page's own (a shared hub that ends is replaced).
    const tab = await browse.tab({ mode: false });
    await tab.addInitScript(() => { globalThis.lifelineOptions = Object.assign({}, globalThis.lifelineOptions, { mode: 'in-page' }); });
    await recordStates(tab);
    await tab.goto(host.url(`/?lang=${lang}`));
    await waitState(tab, 'connected');
    await waitFor(async () => (await host.health()).sessions === 1, { what: 'the session at the Host' });
    // Break something the Go runtime needs (its clock): its next call throws inside the wasm,
    // which unwinds the program without an exit. For the Go runtime only (its runner,
    // run.<hash>.js, on the stack): a driver's own script harness reads the clock too.
    await tab.evaluate(() => {
      const now = performance.now.bind(performance);
      performance.now = () => {
        if (/\/run\.[0-9a-f]+\.js|wasm/.test(new Error().stack)) throw new Error('test: the clock broke');
        return now();
      };
    });
    await waitState(tab, 'failed', 5000);
    expect(await text(tab, '#connection-label')).toBe(label);
    const detail = await text(tab, '#connection-detail');
    expect(detail).toContain('the Lifeline program stopped');
    expect(detail).toContain('test: the clock broke');
    expect(await tab.evaluate(() => document.getElementById('reconnect-now').disabled)).toBe(false);
    expect(await tab.evaluate(() => globalThis.lifeline.state().state)).toBe('failed');
    await waitFor(async () => (await host.health()).sessions === 0, { what: 'the dead page\'s session closed' });
    await waitFor(async () => (await problems(tab)).join('\n').includes('lifeline: the Lifeline program stopped'), { timeout: 5000, what: 'the stop on the console' });
    const seq = await states(tab);
    expect(seq[seq.length - 1]).toBe('failed');
    // "Reconnect now" reloads the page, which starts a fresh program.
    await tab.click('#reconnect-now');
    await waitState(tab, 'connected');
    await waitPage(tab, () => globalThis.lifeline.state().state === 'connected', undefined, { what: 'a fresh program connected' });
  });
}
