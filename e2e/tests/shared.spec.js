// Shared mode (issue 17): every tab of an origin shares one Lifeline in a SharedWorker. The
// Host's own session count is the witness. These need shared mode and skip in an in-page run.
const { test, expect, mode, waitState, waitFor, gapsIn, sharedWorker } = require('./fixtures');

test.skip(mode === 'in-page', 'shared mode only');

// tick collects every ticks delivery of a page from its first subscription on.
async function follow(page) {
  await page.waitForFunction(() => globalThis.lifeline);
  await page.evaluate(() => {
    window.__ticks = [];
    globalThis.lifeline.subscribe('ticks', (d) => window.__ticks.push(d.reset ? { reset: true, seq: d.seq } : { seq: d.seq, n: d.data.n }));
  });
}
const got = (page) => page.evaluate(() => window.__ticks.slice());

async function open(context, host, n) {
  const pages = [];
  for (let i = 0; i < n; i++) {
    const p = await context.newPage();
    await p.goto(host.url('/'));
    pages.push(p);
  }
  for (const p of pages) await waitState(p, 'connected');
  return pages;
}

// inWorker runs expression in the context's shared worker, attaching only for that call
// (attaching DevTools changes a worker's lifetime).
async function inWorker(browser, expression) {
  const w = await sharedWorker(browser);
  try {
    return await w.evaluate(expression);
  } finally {
    await w.detach();
  }
}

test('five tabs share one session; tabs closing in any order never interrupt the others', async ({ context, hosts }) => {
  test.setTimeout(90_000);
  const host = await hosts.start({});
  const pages = await open(context, host, 5);
  expect((await host.health()).sessions).toBe(1);
  for (const p of pages) await follow(p);
  await waitFor(async () => (await Promise.all(pages.map(got))).every((l) => l.filter((d) => !d.reset).length >= 2), { what: 'ticks in every tab' });
  for (const i of [0, 3, 1]) { // close tabs 1, 4 and 2
    await pages[i].close();
    const left = pages.filter((p) => !p.isClosed());
    const before = await Promise.all(left.map(async (p) => (await got(p)).length));
    await waitFor(async () => (await Promise.all(left.map(got))).every((l, j) => l.length >= before[j] + 2), { what: 'ticks after a tab closed' });
  }
  for (const p of pages.filter((p) => !p.isClosed())) {
    const list = await got(p);
    expect(gapsIn(list)).toEqual([]);
    expect(list.filter((d) => d.reset).length).toBe(1); // its own baseline, once
  }
  expect((await host.health()).sessions).toBe(1);
});

test('Reconnect now in any tab acts on the shared connection; every tab shows the same state', async ({ context, hosts }) => {
  const host = await hosts.start({ recovery: { initialDelayMs: 3000, maxDelayMs: 3000 } });
  const [a, b] = await open(context, host, 2);
  const accepted = (await host.health()).accepted;
  await b.locator('#reconnect-now').evaluate((el) => { el.disabled = false; el.click(); });
  await waitFor(async () => (await host.health()).accepted === accepted + 1, { what: 'one new socket at the Host' });
  await waitFor(async () => (await a.evaluate(() => globalThis.lifeline.state().attempt)) === 2, { what: 'tab a told of attempt 2' });
  await host.fault('outage');
  await waitState(a, 'reconnecting');
  await waitState(b, 'reconnecting');
  const [sa, sb] = await Promise.all([a, b].map((p) => p.evaluate(() => globalThis.lifeline.state())));
  expect(sa.nextAttempt).toBe(sb.nextAttempt);
  expect(sa.attempt).toBe(sb.attempt);
  await host.fault('up');
  await a.evaluate(() => globalThis.lifeline.reconnectNow());
  await waitState(b, 'connected');
  expect((await host.health()).sessions).toBe(1);
});

test('a crash of the hub recovers every tab within a second', async ({ browser, context, hosts }) => {
  const host = await hosts.start({});
  const pages = await open(context, host, 3);
  for (const p of pages) await follow(p);
  await waitFor(async () => (await Promise.all(pages.map(got))).every((l) => l.some((d) => !d.reset)), { what: 'a tick in every tab' });
  for (const p of pages) {
    await p.evaluate(() => {
      window.__since = [];
      window.addEventListener('lifeline:state', (e) => window.__since.push({ state: e.detail.state, t: Date.now() }));
    });
  }
  const accepted = (await host.health()).accepted;
  const stopped = pages.map(() => 0); // when each tab said its hub stopped
  pages.forEach((p, i) => p.on('console', (m) => {
    if (!stopped[i] && m.text().startsWith('lifeline: the shared hub stopped')) stopped[i] = Date.now();
  }));
  const t0 = Date.now();
  // Break the clock the Go runtime needs: the program in the worker dies as a panic would.
  await inWorker(browser, "performance.now = () => { throw new Error('test: the clock broke'); }; 'broken'");
  for (const p of pages) {
    // Back through connecting: the tab lost its hub and met the fresh one.
    await waitFor(async () => {
      const seen = (await p.evaluate(() => window.__since.slice())).map((x) => x.state);
      return seen.includes('connecting') && seen[seen.length - 1] === 'connected' ? seen : null;
    }, { timeout: 10_000, interval: 20, what: 'the tab connected to a fresh hub' });
  }
  // From the moment each tab was told its hub stopped to connected to the fresh one. (Telling
  // waits for the runtime's next look at the clock, which this way of crashing it needs; a
  // panic is told at once.)
  const since = await Promise.all(pages.map((p) => p.evaluate(() => window.__since.slice())));
  const told = stopped.map((t) => t - t0);
  const back = since.map((l, i) => l[l.length - 1].t - stopped[i]);
  console.log(`the tabs were told ${told.join(', ')} ms after the crash; connected to a fresh hub ${back.join(', ')} ms after that`);
  for (const b of back) expect(b).toBeLessThan(1000);
  await waitFor(async () => (await host.health()).sessions === 1, { what: 'one session: the dead hub\'s socket is closed' });
  expect((await host.health()).accepted).toBe(accepted + 1); // the fresh hub's one socket
  for (const p of pages) {
    const before = (await got(p)).length;
    await waitFor(async () => (await got(p)).length > before, { what: 'ticks again' });
  }
});

test('offline in a tab suspends the shared hub; online resumes it', async ({ context, hosts }) => {
  const host = await hosts.start({});
  const [a, b] = await open(context, host, 2);
  // Emulated offline does not reach the worker: cut the Host too.
  await context.setOffline(true);
  await host.fault('outage');
  await waitState(a, 'offline');
  await waitState(b, 'offline');
  const accepted = (await host.health()).accepted;
  await a.waitForTimeout(3000);
  expect((await host.health()).accepted).toBe(accepted); // no dial while offline
  await host.fault('up');
  const t0 = Date.now();
  await context.setOffline(false);
  await waitState(a, 'connected', 3000);
  await waitState(b, 'connected', 3000);
  expect(Date.now() - t0).toBeLessThan(2000);
});

test('the hub keeps its socket through a reload of the only tab, and closes it once no tab is left', async ({ context, hosts }) => {
  test.setTimeout(60_000);
  const host = await hosts.start({});
  const [a] = await open(context, host, 1);
  const accepted = (await host.health()).accepted;
  await a.reload();
  await waitState(a, 'connected');
  expect((await host.health()).accepted).toBe(accepted); // the same socket
  await a.close();
  await waitFor(async () => (await host.health()).sessions === 0, { timeout: 20_000, what: 'the session closed after the last tab left' });
});

test('a tab in the back-forward cache leaves the hub and rejoins when shown', async ({ context, hosts }) => {
  const host = await hosts.start({});
  const [a, b] = await open(context, host, 2);
  await follow(b);
  await a.goto(host.url('/settings-not-a-page'));
  await a.goBack();
  await waitState(a, 'connected', 3000);
  await follow(a);
  await waitFor(async () => (await got(a)).some((d) => !d.reset), { what: 'ticks in the tab that came back' });
  expect(gapsIn(await got(b))).toEqual([]);
  expect((await host.health()).sessions).toBe(1);
});

// web/boot.js starts the wasm's bytes on a first visit, before the worker's script is in, and
// the worker's own fetch joins that one in the HTTP cache; Apple's WebKit joins no request to
// one in flight, so there the page leaves the wasm to the worker (two copies would share the
// link: WebKitGTK's shared first visit over 4G took 2,307 ms to connected with the page's copy
// and 1,402 ms without, bench/RESULTS.md, engines). Playwright sees the page's requests, not the
// worker's; Chromium stands in for WebKit by its navigator.vendor.
test('a first visit fetches the wasm ahead of its worker, but not in Apple\'s WebKit, where the worker could not join that fetch', async ({ browser, hosts }) => {
  const host = await hosts.start({});
  for (const [vendor, want] of [['', 1], ['Apple Computer, Inc.', 0]]) {
    const context = await browser.newContext(); // a first visit: nothing cached, nothing noted
    try {
      if (vendor) {
        await context.addInitScript((v) => Object.defineProperty(Navigator.prototype, 'vendor', { get: () => v, configurable: true }), vendor);
      }
      const page = await context.newPage();
      const wasm = [];
      page.on('request', (r) => { if (new URL(r.url()).pathname.endsWith('.wasm')) wasm.push(r.url()); });
      await page.goto(host.url('/'));
      await waitState(page, 'connected');
      expect(await page.evaluate(() => navigator.vendor), 'the vendor the boot saw').toBe(vendor || 'Google Inc.');
      expect(wasm, `the page's own fetches of the wasm, navigator.vendor ${vendor || 'Google Inc.'}`).toHaveLength(want);
    } finally {
      await context.close();
    }
  }
});
