// Shared mode's hub crash, in Chromium only: the SharedWorker is broken through DevTools, which
// only Chromium's driver reaches (Playwright exposes no SharedWorker; BiDi and WebKitWebDriver
// none either). The other shared-mode scenarios run in every engine: scenarios/shared.spec.js.
// Shared mode only: skipped in an in-page run.
const { test, expect, mode, waitState, waitFor, sharedWorker } = require('./fixtures');

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
    // The tab lost its hub and met the fresh one: a connected status from it. A tab may not
    // pass through connecting: the fresh worker opens its socket at its first line (web/worker.js,
    // openEarly) and is often connected before a tab has joined it, and a tab told a status it
    // already shows would flicker for nothing.
    await waitFor(async () => {
      const seen = (await p.evaluate(() => window.__since.slice())).map((x) => x.state);
      return seen[seen.length - 1] === 'connected' ? seen : null;
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
