// Chromium only: these freeze the page's JavaScript with the debugger over DevTools, which no
// other engine's driver here offers (scenarios/lifecycle.spec.js holds what every engine can).
// Real browsers: a page that was frozen, hidden or asleep while its link went
// half-open finds out in seconds, by probing, instead of at the watchdog (37.5 s); a hidden
// page adds no dials; a probe on a healthy link changes nothing.
//
// This headless Chromium can neither hide nor freeze a page through the DevTools protocol:
// there is no visibility emulation (bringToFront and minimizing leave every page 'visible'),
// and Page.setWebLifecycleState 'frozen' is accepted but changes nothing (a page's timers kept
// running, no freeze or resume event: checked on http and data: pages, foreground and
// background targets). So the tests freeze the page's JavaScript with the debugger (timers and
// handlers stop; the network goes on) and dispatch the lifecycle's resume event themselves, and
// emulate what the page reads of its visibility (document.visibilityState and its event).
const { test, expect, mode, withMode, recordStates, states, waitState, waitFor, ticks, gapsIn } = require('./fixtures');

// lifecycle freezes the page's JavaScript ('frozen') or resumes it and tells the page so
// ('active'), through one DevTools session per page.
const sessions = new WeakMap();
async function lifecycle(context, page, state) {
  if (!sessions.has(page)) {
    const cdp = await context.newCDPSession(page);
    await cdp.send('Debugger.enable');
    sessions.set(page, cdp);
  }
  const cdp = sessions.get(page);
  if (state === 'frozen') {
    // A pause takes effect at the page's next statement: wait for it (the page runs some
    // every second: its ticks, its timers).
    const paused = new Promise((ok) => cdp.once('Debugger.paused', ok));
    await cdp.send('Debugger.pause');
    await Promise.race([paused, new Promise((_, no) => setTimeout(() => no(new Error('the page did not pause within 5 s')), 5000))]);
    return;
  }
  await cdp.send('Debugger.resume');
  await page.evaluate(() => document.dispatchEvent(new Event('resume')));
}

// follow keeps every ticks delivery, as collectTicks does, through the proxy's origin.
async function follow(page) {
  await page.waitForFunction(() => globalThis.lifeline);
  await page.evaluate(() => {
    window.__ticks = [];
    globalThis.lifeline.subscribe('ticks', (d) => window.__ticks.push(d.reset ? { reset: true, seq: d.seq, epoch: d.epoch } : { seq: d.seq, n: d.data.n }));
  });
}

// hide emulates the page going hidden or visible again, as the page's code sees it.
async function setVisible(page, visible) {
  await page.evaluate((v) => {
    Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => (v ? 'visible' : 'hidden') });
    Object.defineProperty(document, 'hidden', { configurable: true, get: () => !v });
    document.dispatchEvent(new Event('visibilitychange'));
  }, visible);
}

// frozenOverHalfOpen freezes a connected page for `frozen` s while its link goes half-open,
// resumes it, and checks that it is connected again on a new socket within 3 s, its ticks
// resumed by cursor with nothing lost.
async function frozenOverHalfOpen(context, page, host, proxy, frozen) {
  await page.goto(proxy.url('/'));
  await waitState(page, 'connected');
  await follow(page);
  await waitFor(async () => (await ticks(page)).some((d) => !d.reset), { what: 'a first tick' });
  const attempt = (await page.evaluate(() => globalThis.lifeline.state())).attempt;

  await lifecycle(context, page, 'frozen');
  await proxy.mode('stall'); // the open link goes half-open: no FIN, no RST
  await proxy.mode('up'); // the network is back for new connections, as after a lid was opened
  await new Promise((r) => setTimeout(r, frozen * 1000));
  const resumed = Date.now();
  await lifecycle(context, page, 'active');
  // Connected again on a new socket: the old one is dead, and only a probe (or the
  // watchdog, or in shared mode the worker's own watchdog while the tab was frozen) can tell.
  await waitFor(async () => {
    const s = await page.evaluate(() => globalThis.lifeline.state());
    return s.state === 'connected' && s.attempt > attempt ? s : null;
  }, { timeout: 10_000, interval: 20, what: `connected on a new socket after resuming from ${frozen} s` });
  const back = Date.now() - resumed;
  console.log(`[${mode || 'default'}] connected again ${back} ms after resuming from a ${frozen} s freeze over a half-open link`);
  expect(back, `resuming from a ${frozen} s freeze`).toBeLessThan(3000);
  const n = (await ticks(page)).length;
  await waitFor(async () => (await ticks(page)).length >= n + 2, { what: `ticks after resuming from ${frozen} s` });
  const got = await ticks(page);
  expect(gapsIn(got), `gaps after a ${frozen} s freeze`).toEqual([]); // resumed by cursor: every tick of the freeze replayed
  expect(got.filter((d) => d.reset).length, `resets after a ${frozen} s freeze`).toBe(1); // only the first baseline
}

// 60 s: the case; 20 s: the watchdog (37.5 s at the default heartbeat) is far from
// due when the page resumes, so only a probe can find the dead link in time. Both run at
// once, each page in a browser context of its own (in shared mode, a hub of its own) behind
// its own Host and proxy: a frozen page costs no CPU, and the pair takes the time of the
// longer freeze instead of both.
test('pages frozen for 20 s and 60 s while their links went half-open are connected again within 3 s of resuming', async ({ browser, context, page, hosts, proxies }) => {
  test.setTimeout(60_000 + 2 * 60 * 1000);
  const other = await withMode(await browser.newContext());
  try {
    const [short, long] = [await hosts.start({}), await hosts.start({})];
    const [shortProxy, longProxy] = [await proxies.start(short), await proxies.start(long)];
    await Promise.all([
      frozenOverHalfOpen(other, await other.newPage(), short, shortProxy, 20),
      frozenOverHalfOpen(context, page, long, longProxy, 60),
    ]);
  } finally {
    await other.close();
  }
});

test('a probe on a healthy link changes nothing visible', async ({ context, page, hosts }) => {
  const host = await hosts.start({});
  await recordStates(page);
  await page.goto(host.url('/'));
  await waitState(page, 'connected');
  const before = await host.health();
  for (let i = 0; i < 3; i++) {
    await setVisible(page, false);
    await setVisible(page, true);
    await page.evaluate(() => {
      window.dispatchEvent(new Event('online'));
      window.dispatchEvent(new PageTransitionEvent('pageshow', { persisted: false }));
      document.dispatchEvent(new Event('resume'));
    });
    await lifecycle(context, page, 'frozen');
    await lifecycle(context, page, 'active');
  }
  await page.waitForTimeout(3000); // past every probe's 2 s bound
  const after = await host.health();
  expect(after.accepted).toBe(before.accepted); // no reconnect
  expect(await states(page)).toEqual(['connecting', 'connected']); // no flicker
});

test('a page hidden while reconnecting dials no more often than its ladder, and at once when shown if overdue', async ({ context, page, hosts }) => {
  test.setTimeout(90_000);
  // A fixed 2 s wait (no jitter), so the ladder's dials can be counted.
  const host = await hosts.start({ recovery: { initialDelayMs: 2000, maxDelayMs: 2000, jitter: 0, deadlineMs: 1000, slowAfterMs: 500 } });
  await page.goto(host.url('/'));
  await waitState(page, 'connected');
  await host.fault('outage');
  await waitState(page, 'reconnecting');
  await setVisible(page, false);
  // An attempt is a socket, or the plain GET that checks the Host before one is dialed again
  // after a failure (PROTOCOL.md §11.5): in an outage that check is the whole attempt.
  const attempts = (h) => h.accepted + h.queries;
  const h0 = await host.health();
  await page.waitForTimeout(10_000);
  const h1 = await host.health();
  const dials = attempts(h1) - attempts(h0);
  console.log(`[${mode || 'default'}] hidden for 10 s while reconnecting: ${dials} attempts (the ladder: one every 2 s)`);
  expect(dials).toBeLessThanOrEqual(6);
  expect(dials).toBeGreaterThanOrEqual(4);

  // Frozen past the next attempt (its timer held back, as a throttled hidden tab's is), then
  // shown: the overdue attempt goes at once. (Shared, the timers are the worker's, which no
  // tab's state holds back: there is no overdue attempt to test.)
  if (mode === 'shared') {
    await host.fault('up');
    await waitState(page, 'connected', 5000);
    return;
  }
  // Frozen in a wait, not mid-dial: a dial the freeze caught ends at resume, and the wait it
  // starts then is the ladder's next, not an overdue one.
  await waitFor(() => page.evaluate(() => {
    const s = globalThis.lifeline.state();
    return s.state === 'reconnecting' && s.nextAttempt - Date.now() > 1000;
  }), { interval: 20, what: 'a wait with over 1 s to run' });
  await lifecycle(context, page, 'frozen');
  await page.waitForTimeout(5000);
  const h2 = await host.health();
  const shown = Date.now();
  await lifecycle(context, page, 'active');
  await setVisible(page, true);
  await waitFor(async () => attempts(await host.health()) > attempts(h2), { timeout: 5000, interval: 20, what: 'an attempt after being shown' });
  const late = Date.now() - shown;
  console.log(`[${mode || 'default'}] the overdue attempt went ${late} ms after the page was shown`);
  expect(late).toBeLessThan(1000);
  await host.fault('up');
  await waitState(page, 'connected', 5000);
});
