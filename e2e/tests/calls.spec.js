// Calls in Chromium only, where they need what only Chromium's driver reaches: a crash of the
// shared hub with calls in flight (the SharedWorker is broken through DevTools, which no other
// engine's driver here offers), and the embedding example's keyed call (bin/embed's specs are
// Chromium's: embed.spec.js). Every other call scenario (README "Calls", the table of failures)
// runs in every engine: scenarios/calls.spec.js. "Ran once" is read from the Host's log
// (tests/calls.js).
const { test, expect, mode, waitState, waitFor, sharedWorker } = require('./fixtures');
const { runs, ranOnce, callIn, started, settled } = require('./calls');

const fast = { recovery: { initialDelayMs: 200, maxDelayMs: 500 } };

test('a crash of the shared hub: its unkeyed call in flight rejects not-run (the fresh hub fences the session it went out on), its keyed one is sent again and runs once', async ({ browser, page, hosts }) => {
  test.skip(mode === 'in-page', 'shared mode only: in-page, the hub is the page\'s own program');
  const host = await hosts.start({});
  await page.goto(host.url('/'));
  await waitState(page, 'connected');
  // A session's calls run one at a time: the keyed one runs while the crash comes, the
  // unkeyed one waits behind it at the Host.
  const keyed = await callIn(page, 'board.slow', { text: 'keyed through the crash', ms: 2000 }, { key: 'crash-1' });
  const unkeyed = await callIn(page, 'board.slow', { text: 'unkeyed through the crash', ms: 100 });
  await started(page, host, keyed, 'board.slow', 'crash-1');
  let told = 0; // when the tab said its hub stopped
  page.on('console', (m) => { if (!told && m.text().startsWith('lifeline: the shared hub stopped')) told = Date.now(); });
  const w = await sharedWorker(browser);
  try {
    // The program dies the next time it reads the clock: at once, as a port arrives (its
    // arrival is stamped), not whenever its scheduler next wakes, which may be after the keyed
    // call's reply came.
    await w.evaluate("performance.now = () => { throw new Error('test: the clock broke'); }; try { self.__lifelineConnect(new MessageChannel().port1); } catch (_) { /* the crash itself */ } 'broken'");
  } finally {
    await w.detach();
  }
  const u = await settled(page, unkeyed);
  expect(u).toMatchObject({ state: 'rejected', kind: 'not-run', sent: true });
  const k = await settled(page, keyed);
  expect(k).toMatchObject({ state: 'resolved', value: { text: 'keyed through the crash' } });
  await ranOnce(host, 'board.slow', 'crash-1');
  expect(runs(host, 'board.slow', '')).toBe(0); // it waited behind the keyed one when its session ended
  // The premise: the hub did crash while the keyed call ran, and its reply came through the fresh one.
  expect(told).toBeGreaterThan(0);
  expect(k.at).toBeGreaterThan(told);
});

test('a crash of the shared hub: a call it never said it sent is made as new on the fresh hub, once', async ({ browser, page, hosts }) => {
  test.skip(mode === 'in-page', 'shared mode only: in-page, the hub is the page\'s own program');
  const host = await hosts.start(fast);
  await page.goto(host.url('/'));
  await waitState(page, 'connected');
  await host.fault('outage');
  await waitState(page, 'reconnecting');
  // Made while not connected: waiting in the hub, never sent; unkeyed, so only "never sent"
  // makes it safe to make again.
  const waiting = await callIn(page, 'board.post', { text: 'made before the crash' });
  let told = 0; // when the tab said its hub stopped
  page.on('console', (m) => { if (!told && m.text().startsWith('lifeline: the shared hub stopped')) told = Date.now(); });
  const w = await sharedWorker(browser);
  try {
    // The program dies the next time it reads the clock: at once, as a port arrives (its
    // arrival is stamped), not whenever its scheduler next wakes, which may be after the keyed
    // call's reply came.
    await w.evaluate("performance.now = () => { throw new Error('test: the clock broke'); }; try { self.__lifelineConnect(new MessageChannel().port1); } catch (_) { /* the crash itself */ } 'broken'");
  } finally {
    await w.detach();
  }
  await waitFor(() => told > 0, { what: 'the tab to say its hub stopped' }); // the premise: it crashed before the call could go
  await host.fault('up');
  const r = await settled(page, waiting);
  expect(r).toMatchObject({ state: 'resolved', value: { text: 'made before the crash' } });
  expect(runs(host, 'board.post', '')).toBe(1);
});

test('the embedding example saves a user\'s memo with a keyed call; the handler lets a user write their own only', async ({ page, hosts }) => {
  const app = await hosts.startEmbed({});
  await page.goto(app.url('/login?user=alice'));
  await waitState(page, 'connected');
  await page.fill('#memo-text', 'buy milk');
  await page.click('#memo-save');
  await expect(page.locator('#memo-status')).toHaveText('Saved (version 1)');
  await page.reload();
  await expect(page.locator('#memo-text')).toHaveValue('buy milk');
  await waitState(page, 'connected');
  const other = await settled(page, await callIn(page, 'memo.save', { user: 'bob', text: 'not yours' }, { key: 'bob-1' }));
  expect(other).toMatchObject({ state: 'rejected', kind: 'app', sent: true });
  expect(other.message).toContain('this memo belongs to another user');
});
