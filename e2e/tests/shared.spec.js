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
