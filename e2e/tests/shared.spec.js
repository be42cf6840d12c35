// Shared mode's hub crash, in Chromium only: the SharedWorker is broken through DevTools, which
// only Chromium's driver reaches (Playwright exposes no SharedWorker; BiDi and WebKitWebDriver
// none either). The other shared-mode scenarios run in every engine: scenarios/shared.spec.js.
// Shared mode only: skipped in an in-page run.
const { test, expect, mode, waitState, waitFor, sharedWorker, gapsIn } = require('./fixtures');

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

// ticking waits until every page has had two ticks past its baseline.
const ticking = (pages) => waitFor(async () => (await Promise.all(pages.map(got))).every((l) => l.filter((d) => !d.reset).length >= 2), { what: 'ticks in every tab' });

// expectWhole checks a page's ticks: no gap, and its first baseline only (it resumed by cursor).
async function expectWhole(page) {
  const list = await got(page);
  expect(gapsIn(list)).toEqual([]);
  expect(list.filter((d) => d.reset).length).toBe(1);
}

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
  let rejoined = 0; // tabs that took the crash for a worker the browser ended (they must not: web/worker.js EXIT_LINGER)
  pages.forEach((p, i) => p.on('console', (m) => {
    if (!stopped[i] && m.text().startsWith('lifeline: the shared hub stopped')) stopped[i] = Date.now();
    if (m.text().startsWith("lifeline: the browser ended the shared hub's worker")) rejoined++;
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
  expect(rejoined).toBe(0); // every tab moved to the hub the ended one named
});

// The browser ends the hub's worker without a word (WebKitGTK does when one of several windows
// closes: scenarios/shared.spec.js's five tabs meet it there): each tab learns it from the
// worker's Web Lock at once, rejoins the hub of the same name and resumes its streams at its
// cursor. Here the worker is ended by its own close(), which no page hears of otherwise.
test('a hub whose worker the browser ends is rejoined at once, and every tab resumes its streams where they were', async ({ browser, context, hosts }) => {
  const host = await hosts.start({});
  const pages = await open(context, host, 3);
  for (const p of pages) await follow(p);
  await ticking(pages);
  const accepted = (await host.health()).accepted;
  const ended = pages.map(() => 0); // when each tab said the browser ended its hub
  pages.forEach((p, i) => p.on('console', (m) => {
    if (!ended[i] && m.text().startsWith("lifeline: the browser ended the shared hub's worker")) ended[i] = Date.now();
  }));
  const before = await Promise.all(pages.map(async (p) => (await got(p)).length));
  const t0 = Date.now();
  await inWorker(browser, 'setTimeout(() => self.close(), 0); "closing"');
  await waitFor(async () => ended.every((t) => t > 0), { timeout: 5000, interval: 10, what: 'every tab told its hub ended' });
  await waitFor(async () => (await host.health()).accepted === accepted + 1, { what: "the rejoined hub's socket" });
  for (const [i, p] of pages.entries()) {
    await waitFor(async () => (await got(p)).length >= before[i] + 3, { what: 'ticks after the hub ended' });
  }
  console.log(`the tabs learnt their hub had ended ${ended.map((t) => t - t0).join(', ')} ms after it closed`);
  for (const p of pages) await expectWhole(p);
  await waitFor(async () => (await host.health()).sessions === 1, { what: "one session: the ended hub's socket is closed" });
  expect((await host.health()).accepted).toBe(accepted + 1);
  // The tabs all rejoined one hub (one socket above), and it serves them: a command of one
  // acts for all.
  await pages[0].evaluate(() => globalThis.lifeline.reconnectNow());
  await waitFor(async () => (await host.health()).accepted === accepted + 2, { what: 'the reconnect of the rejoined hub' });
  for (const p of pages) await waitState(p, 'connected');
  expect((await host.health()).sessions).toBe(1);
});

// WebKitGTK can let go of the worker's lock while the worker lives on: here a page steals it
// (Web Locks' steal), which ends the worker's hold just so. The tabs rejoin the same worker,
// find it by its instance, stop watching its lock and carry on: no socket, nothing lost.
test('a hub whose lock is let go while its worker lives on costs nothing, and its tabs stop watching that lock', async ({ context, hosts }) => {
  const host = await hosts.start({});
  const pages = await open(context, host, 2);
  for (const p of pages) await follow(p);
  await ticking(pages);
  const lines = pages.map(() => []);
  pages.forEach((p, i) => p.on('console', (m) => lines[i].push(m.text())));
  const accepted = (await host.health()).accepted;
  const before = await Promise.all(pages.map(async (p) => (await got(p)).length));
  const steal = () => pages[0].evaluate(async () => {
    const held = (await navigator.locks.query()).held.filter((l) => l.name.startsWith('lifeline:hub:'));
    if (held.length !== 1) return 'held: ' + JSON.stringify(held);
    await navigator.locks.request(held[0].name, { steal: true }, () => {});
    return '';
  });
  expect(await steal()).toBe('');
  const livedOn = (i) => lines[i].filter((l) => l.startsWith("lifeline: the shared hub's worker lives on after all")).length;
  await waitFor(async () => livedOn(0) === 1 && livedOn(1) === 1, { what: 'each tab found its hub had lived on' });
  for (const [i, p] of pages.entries()) {
    await waitFor(async () => (await got(p)).length >= before[i] + 3, { what: 'ticks after the lock was let go' });
    await expectWhole(p);
  }
  expect((await host.health()).accepted).toBe(accepted); // the same worker, the same socket
  // Each tab took it for ended once, and watches that lock no more: nobody waits for it.
  const ended = (i) => lines[i].filter((l) => l.startsWith("lifeline: the browser ended the shared hub's worker")).length;
  expect([ended(0), ended(1)]).toEqual([1, 1]);
  const pending = await pages[0].evaluate(async () => (await navigator.locks.query()).pending.filter((l) => l.name.startsWith('lifeline:hub:')).length);
  expect(pending).toBe(0);
});

// muteNextHub wraps SharedWorker so that the test can make the next hub the page joins say
// nothing to it, as WebKitGTK's restarted worker can to the first tab that rejoins it.
function muteNextHub() {
  const Real = globalThis.SharedWorker;
  window.__muteNext = false;
  window.__joins = 0;
  globalThis.SharedWorker = function SharedWorker(url, opts) {
    const w = new Real(url, opts);
    window.__joins++;
    if (!window.__muteNext) return w;
    window.__muteNext = false;
    const real = w.port;
    const port = {
      postMessage(m) { real.postMessage(m); },
      set onmessage(f) { real.onmessage = f ? () => {} : null; }, // heard by nobody
      get onmessage() { return null; },
      start() { real.start(); },
      close() { real.close(); },
    };
    return { port, set onerror(f) { w.onerror = f; }, get onerror() { return w.onerror; } };
  };
}

test('a rejoined hub that says nothing to a tab is joined again, and the tab resumes where it was', async ({ browser, context, hosts }) => {
  const host = await hosts.start({});
  await context.addInitScript(muteNextHub);
  const pages = await open(context, host, 2);
  for (const p of pages) await follow(p);
  await ticking(pages);
  const [a, b] = pages;
  await a.evaluate(() => { window.__muteNext = true; });
  const lines = [];
  a.on('console', (m) => lines.push(m.text()));
  const before = await Promise.all(pages.map(async (p) => (await got(p)).length));
  await inWorker(browser, 'setTimeout(() => self.close(), 0); "closing"');
  for (const [i, p] of pages.entries()) {
    await waitFor(async () => (await got(p)).length >= before[i] + 3, { what: 'ticks after the hub ended' });
  }
  // Joined again once, or more where the fresh worker was slow to start (its thread busy
  // with the wasm): the first join, the muted one, at least one that answered.
  expect(lines.filter((l) => l.startsWith('lifeline: the restarted shared hub did not answer this tab in 3000 ms; joining it again')).length).toBeGreaterThanOrEqual(1);
  expect(await a.evaluate(() => window.__joins)).toBeGreaterThanOrEqual(3);
  for (const p of pages) await expectWhole(p);
  await waitFor(async () => (await host.health()).sessions === 1, { what: 'one session: both tabs in the rejoined hub' });
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
