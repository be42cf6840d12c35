// Calls (issue 23) in Chromium, in both page modes, against bin/host's demo board: the form's
// message posted once online and across an outage, calls cut off by an outage after they were
// sent and over a flapping link (an unkeyed one is told only once the Host has fenced its
// session), calls in flight across a graceful restart, an unkeyed one cut off by a SIGKILL, two tabs calling at once, bad input from the page, (in shared mode) a crash
// of the hub with calls in flight, and the embedding example's keyed call (README "Calls", the
// table of failures, names these tests). "Ran once" is read from the Host's log:
// every run of a board handler logs "demo: board call ran" with its call and key (cmd/host/
// demo.go), and a successor after SIGUSR2 logs to the same output.
const { test, expect, mode, recordStates, states, waitState, waitFor, sharedWorker } = require('./fixtures');

// runs counts the runs the Host logged of call with key ('' for unkeyed calls).
function runs(host, call, key) {
  const want = `msg="demo: board call ran" call=${call} key=${key === '' ? '""' : key}`;
  return host.logs.filter((l) => l.includes(want + ' ') || l.endsWith(want)).length;
}

// ranOnce waits for the Host's log of a run of call with key and checks there is one. (The log
// reaches this process through a pipe, which may come after the page has the reply.)
async function ranOnce(host, call, key) {
  await waitFor(() => runs(host, call, key) >= 1, { what: `a run of ${call} with key "${key}" in the Host's log` });
  expect(runs(host, call, key), `runs of ${call} with key "${key}"`).toBe(1);
}

// callIn makes a call in the page and returns its index; settled(page, i) waits for its outcome.
async function callIn(page, name, data, opts) {
  return page.evaluate(([name, data, opts]) => {
    window.__calls = window.__calls || [];
    const o = { state: 'pending' };
    window.__calls.push(o);
    globalThis.lifeline.call(name, data, opts).then(
      (value) => Object.assign(o, { state: 'resolved', value, at: Date.now() }),
      (e) => Object.assign(o, { state: 'rejected', kind: e.kind, sent: e.sent, code: e.code, message: e.message, at: Date.now() }));
    return window.__calls.length - 1;
  }, [name, data, opts]);
}

// started waits for the Host's log of the first run of call with key, made in the page as
// call i. A call that ends before its handler ran fails the wait with its outcome, and a wait
// that times out says what the page and the Host were doing.
async function started(page, host, i, call, key) {
  try {
    await waitFor(async () => {
      if (runs(host, call, key) >= 1) return true;
      const o = await page.evaluate((i) => window.__calls[i], i);
      if (o.state !== 'pending') throw new Error(`call ${i} ended before its handler ran: ${JSON.stringify(o)}`);
      return false;
    }, { what: `the ${call} handler to start (key "${key}")` });
  } catch (e) {
    const seen = await page.evaluate(() => ({ state: globalThis.lifeline.state(), calls: window.__calls })).catch((err) => String(err));
    throw new Error(`${e.message}\nthe page: ${JSON.stringify(seen)}\nthe Host's last lines:\n${host.logs.slice(-40).join('\n')}`);
  }
  expect(runs(host, call, key)).toBe(1);
}

async function settled(page, i, timeout = 10_000) {
  return waitFor(async () => {
    const o = await page.evaluate((i) => window.__calls[i], i);
    return o.state !== 'pending' ? o : null;
  }, { timeout, interval: 20, what: `call ${i} to settle` });
}

// postFromForm types text into the board's form and sends it; it returns the message's entry
// (the page puts the newest first, and each entry carries its key).
async function postFromForm(page, text) {
  await page.fill('#board-text', text);
  await page.click('#board-send');
  const key = await page.locator('#board-mine li').first().getAttribute('data-key');
  return page.locator(`#board-mine li[data-key="${key}"]`);
}

// consoleErrors keeps every console.error line of the page.
function consoleErrors(page) {
  const lines = [];
  page.on('console', (m) => { if (m.type() === 'error') lines.push(m.text()); });
  return lines;
}

const fast = { recovery: { initialDelayMs: 200, maxDelayMs: 500 } };

test('the form\'s message is posted once, online and after an outage; meanwhile it says it will be sent when connected', async ({ page, hosts }) => {
  const host = await hosts.start(fast);
  await page.goto(host.url('/'));
  await waitState(page, 'connected');

  const online = await postFromForm(page, 'hello online');
  await expect(online).toHaveAttribute('data-status', 'posted');
  const id = await online.getAttribute('data-id');
  await expect(online.locator('.board-status')).toHaveText(new RegExp(`^posted #${id} at `));
  await expect(page.locator(`#board-list li[data-id="${id}"]`)).toHaveCount(1);
  await ranOnce(host, 'board.post', await online.getAttribute('data-key'));

  // The Host's refusal is shown, with its kind; nothing ran.
  const empty = await postFromForm(page, '   ');
  await expect(empty).toHaveAttribute('data-status', 'failed');
  await expect(empty).toHaveAttribute('data-kind', 'app');
  await expect(empty.locator('.board-status')).toContainText('board: the message is empty');
  expect(runs(host, 'board.post', await empty.getAttribute('data-key'))).toBe(0);

  await host.fault('outage');
  await waitState(page, 'reconnecting');
  const later = [await postFromForm(page, 'first after the outage'), await postFromForm(page, 'second after the outage')];
  for (const li of later) {
    await expect(li).toHaveAttribute('data-status', 'waiting');
    await expect(li.locator('.board-status')).toHaveText('will be sent when connected');
    expect(runs(host, 'board.post', await li.getAttribute('data-key'))).toBe(0);
  }
  await host.fault('up');
  const seqs = [];
  for (const li of later) {
    await expect(li).toHaveAttribute('data-status', 'posted');
    await expect(page.locator(`#board-list li[data-id="${await li.getAttribute('data-id')}"]`)).toHaveCount(1);
    await ranOnce(host, 'board.post', await li.getAttribute('data-key'));
    seqs.push(Number(await li.getAttribute('data-seq')));
  }
  expect(seqs[1]).toBe(seqs[0] + 1); // in the order made

  // The same in Simplified Chinese.
  await page.goto(host.url('/?lang=zh'));
  await waitState(page, 'connected');
  await expect(page.locator('#board-send')).toHaveText('发送');
  await host.fault('outage');
  await waitState(page, 'reconnecting');
  const zh = await postFromForm(page, '你好');
  await expect(zh.locator('.board-status')).toHaveText('连接后发送');
  await host.fault('up');
  await expect(zh).toHaveAttribute('data-status', 'posted');
  await expect(zh.locator('.board-status')).toHaveText(/^已发布 #[0-9a-f]{8}，/);
  await ranOnce(host, 'board.post', await zh.getAttribute('data-key'));
});

test('calls cut off by an outage after they were sent: the unkeyed one rejects not-run once the Host is back, the keyed one is sent again and runs once', async ({ page, hosts }) => {
  const host = await hosts.start(fast);
  await page.goto(host.url('/'));
  await waitState(page, 'connected');
  // A session's calls run one at a time: the keyed one runs when the outage comes, the
  // unkeyed one waits behind it at the Host, which drops it with the session.
  const keyed = await callIn(page, 'board.slow', { text: 'keyed through the outage', ms: 1000 }, { key: 'outage-1' });
  const unkeyed = await callIn(page, 'board.post', { text: 'unkeyed through the outage' });
  await started(page, host, keyed, 'board.slow', 'outage-1');
  await host.fault('outage');
  await waitState(page, 'reconnecting');
  // Told nothing while no Host can say whether it may still start: its session is fenced
  // from the next one, which says it never started.
  expect(await page.evaluate((i) => window.__calls[i].state, unkeyed)).toBe('pending');
  await host.fault('up');
  const u = await settled(page, unkeyed);
  expect(u).toMatchObject({ state: 'rejected', kind: 'not-run', sent: true });
  const k = await settled(page, keyed);
  expect(k).toMatchObject({ state: 'resolved', value: { text: 'keyed through the outage' } });
  await ranOnce(host, 'board.slow', 'outage-1');
  expect(runs(host, 'board.post', '')).toBe(0);
});

test('calls over a flapping link: every keyed one resolves and runs once; an unkeyed one resolves or rejects interrupted or not-run, and none runs twice', async ({ page, hosts }) => {
  const host = await hosts.start(fast);
  await page.goto(host.url('/'));
  await waitState(page, 'connected');
  await host.fault('flap=300'); // every session dropped 300 ms after its ready frame
  await waitState(page, 'reconnecting');
  const keyed = [];
  const unkeyed = [];
  const attempt = () => page.evaluate(() => globalThis.lifeline.state().attempt);
  for (let i = 0; i < 3; i++) {
    keyed.push(await callIn(page, 'board.post', { text: `keyed ${i}` }, { key: `flap-${i}` }));
    unkeyed.push(await callIn(page, 'board.post', { text: `unkeyed ${i}` }));
    const a = await attempt();
    await waitFor(async () => (await attempt()) > a, { interval: 20, what: 'the next session' }); // spread over sessions
  }
  // Longer than a session lives: its first run is cut off, and its re-send finds the outcome.
  keyed.push(await callIn(page, 'board.slow', { text: 'slow through the flaps', ms: 500 }, { key: 'flap-slow' }));
  for (const i of keyed) expect(await settled(page, i, 20_000), `keyed call ${i}`).toMatchObject({ state: 'resolved' });
  let resolved = 0;
  let notRun = 0;
  for (const i of unkeyed) {
    const o = await settled(page, i, 20_000);
    if (o.state === 'resolved') resolved++;
    else if (o.kind === 'not-run') notRun++;
    else expect(o, `unkeyed call ${i}`).toMatchObject({ kind: 'interrupted', sent: true });
  }
  await host.fault('up');
  await ranOnce(host, 'board.slow', 'flap-slow');
  for (let i = 0; i < 3; i++) await ranOnce(host, 'board.post', `flap-${i}`);
  await waitFor(() => runs(host, 'board.post', '') >= resolved, { what: 'the runs of the resolved unkeyed calls in the log' });
  const unkeyedRuns = runs(host, 'board.post', '');
  console.log(`[${mode || 'default'}] over the flaps: ${resolved} of ${unkeyed.length} unkeyed calls resolved, ${notRun} not run (the others interrupted), ${unkeyedRuns} unkeyed runs`);
  expect(unkeyedRuns).toBeGreaterThanOrEqual(resolved);
  expect(unkeyedRuns).toBeLessThanOrEqual(unkeyed.length - notRun);
});

test('a keyed call in flight across a graceful restart (SIGUSR2) resolves, and its handler ran once', async ({ page, hosts }) => {
  const host = await hosts.start({});
  await recordStates(page);
  await page.goto(host.url('/'));
  await waitState(page, 'connected');
  // In flight when the old process starts to drain: the keyed one running, the unkeyed one
  // waiting behind it at the Host.
  const slow = await callIn(page, 'board.slow', { text: 'across the handoff', ms: 1500 }, { key: 'handoff-1' });
  const behind = await callIn(page, 'board.post', { text: 'behind it' });
  await started(page, host, slow, 'board.slow', 'handoff-1');
  const t0 = Date.now();
  const handoff = host.handoff();
  // Made while the page moves: it goes after the ones in flight, on whichever session.
  const during = await callIn(page, 'board.post', { text: 'during the handoff' }, { key: 'handoff-2' });
  const h = await handoff;
  expect(h.newPid).not.toBe(h.oldPid);

  const a = await settled(page, slow);
  expect(a).toMatchObject({ state: 'resolved', value: { text: 'across the handoff' } });
  expect(await settled(page, behind)).toMatchObject({ state: 'resolved', value: { text: 'behind it' } });
  const b = await settled(page, during);
  expect(b).toMatchObject({ state: 'resolved', value: { text: 'during the handoff' } });
  console.log(`[${mode || 'default'}] successor ready ${h.readyAt - t0} ms after SIGUSR2; the call in flight answered ${a.at - h.readyAt} ms after that`);
  // The premise: the call was still running when the old process began to drain.
  expect(a.at).toBeGreaterThan(h.readyAt);
  // Both processes log to the same output: each key ran once in all.
  await ranOnce(host, 'board.slow', 'handoff-1');
  await ranOnce(host, 'board.post', 'handoff-2');
  await ranOnce(host, 'board.post', '');
  expect(await states(page)).toEqual(['connecting', 'connected']);
});

test('an unkeyed call cut off by a SIGKILL of its Host rejects timeout, and its handler ran at most once', async ({ page, hosts }) => {
  const host = await hosts.start(fast);
  await page.goto(host.url('/'));
  await waitState(page, 'connected');
  // No Host of its dedup store (the killed process's, in memory) is left to fence its
  // session: what became of it cannot be learned, and it ends at its timeout.
  const slow = await callIn(page, 'board.slow', { text: 'never finished', ms: 10_000 }, { timeoutMs: 3000 });
  await waitFor(() => runs(host, 'board.slow', '') === 1, { what: 'the slow handler to start' });
  process.kill(host.pid, 'SIGKILL');
  const o = await settled(page, slow);
  expect(o).toMatchObject({ state: 'rejected', kind: 'timeout', sent: true });
  await waitState(page, 'reconnecting');
  await ranOnce(host, 'board.slow', '');
});

test('two tabs calling at once each get their own replies, never the other\'s', async ({ context, hosts }) => {
  const host = await hosts.start({});
  const tabs = [await context.newPage(), await context.newPage()];
  for (const p of tabs) await p.goto(host.url('/'));
  for (const p of tabs) await waitState(p, 'connected');
  if (mode !== 'in-page') expect((await host.health()).sessions).toBe(1); // shared: one hub, one session
  const n = 10;
  // Both tabs number their calls from 1: the hub tells them apart by tab.
  const replies = await Promise.all(tabs.map((p, t) => p.evaluate(([t, n]) => Promise.all(Array.from({ length: n }, (_, i) =>
    globalThis.lifeline.call('board.post', { text: `tab ${t} message ${i}` }, i % 2 ? { key: `tab-${t}-${i}` } : undefined))), [t, n])));
  for (const [t, list] of replies.entries()) {
    expect(list.map((m) => m.text)).toEqual(Array.from({ length: n }, (_, i) => `tab ${t} message ${i}`));
  }
  const ids = replies.flat().map((m) => m.id);
  expect(new Set(ids).size).toBe(2 * n);
  // Each tab's board shows every message, its own and the other tab's.
  for (const p of tabs) {
    await waitFor(async () => (await p.$$eval('#board-list li', (lis) => lis.map((li) => li.dataset.id))).length === 2 * n, { what: 'every message on the board' });
    expect(new Set(await p.$$eval('#board-list li', (lis) => lis.map((li) => li.dataset.id)))).toEqual(new Set(ids));
  }
  for (let t = 0; t < 2; t++) {
    for (let i = 1; i < n; i += 2) await ranOnce(host, 'board.post', `tab-${t}-${i}`);
  }
});

test('bad input from the page rejects invalid with a console error, and nothing is sent', async ({ page, hosts }) => {
  const host = await hosts.start({});
  const errors = consoleErrors(page);
  await page.goto(host.url('/'));
  await waitState(page, 'connected');
  const got = await page.evaluate(async () => {
    const circular = {};
    circular.self = circular;
    const tries = {
      'no name': () => globalThis.lifeline.call('', {}),
      'a name that is no string': () => globalThis.lifeline.call(42, {}),
      'a name the protocol cannot carry': () => globalThis.lifeline.call('board post!', {}),
      'a BigInt': () => globalThis.lifeline.call('board.post', { text: 1n }),
      'a circular object': () => globalThis.lifeline.call('board.post', circular),
      'a function': () => globalThis.lifeline.call('board.post', () => 1),
      'an empty key': () => globalThis.lifeline.call('board.post', { text: 'x' }, { key: '' }),
      'a key the protocol cannot carry': () => globalThis.lifeline.call('board.post', { text: 'x' }, { key: 'a\u0007b' }),
    };
    const out = {};
    for (const [what, f] of Object.entries(tries)) {
      try {
        out[what] = { resolved: await f() };
      } catch (e) {
        out[what] = { kind: e.kind, sent: e.sent };
      }
    }
    return out;
  });
  for (const [what, o] of Object.entries(got)) {
    expect(o, what).toEqual({ kind: 'invalid', sent: false });
  }
  const log = errors.join('\n');
  expect(log).toContain('lifeline.call(name, …): name must be a non-empty string');
  expect(log).toContain('data cannot be sent as JSON');
  expect(log).toContain('a function or a symbol?');
  // The protocol's rules, which the Go side holds, are reported the same way.
  expect(log).toContain('lifeline.call("board post!", …): refused: wire: bad call name');
  expect(log).toContain('lifeline.call("board.post", …): refused: wire: bad call key');
  // A name no handler has is sent, and answered unknown; the session lives on.
  const unknown = await settled(page, await callIn(page, 'board.nothing', {}));
  expect(unknown).toMatchObject({ state: 'rejected', kind: 'unknown', sent: true });
  const ok = await settled(page, await callIn(page, 'board.post', { text: 'still fine' }));
  expect(ok).toMatchObject({ state: 'resolved', value: { text: 'still fine' } });
  await ranOnce(host, 'board.post', '');
  expect(host.logs.filter((l) => l.includes('demo: board call ran')).length).toBe(1); // that one only
});

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
