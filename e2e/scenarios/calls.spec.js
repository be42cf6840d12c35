// Calls across a reconnect, in every engine: the Host's log says how often a handler ran
// (tests/calls.js). An unkeyed call cut off is told only once the Host has fenced its session
// (not-run or interrupted), or at its timeout when no Host of its dedup store is left to.
const { test, expect, mode, waitFor } = require('./fixtures');
const { waitState, waitPage, recordStates, states } = require('./page');
const { runs, ranOnce, callIn, started, settled } = require('../tests/calls');

const fast = { recovery: { initialDelayMs: 200, maxDelayMs: 500 } };

test('calls cut off by an outage after they were sent: the unkeyed one rejects not-run once the Host is back, the keyed one is sent again and runs once', async ({ browse, hosts }) => {
  const host = await hosts.start(fast);
  const tab = await browse.tab();
  await tab.goto(host.url('/'));
  await waitState(tab, 'connected');
  // A session's calls run one at a time: the keyed one runs when the outage comes, the
  // unkeyed one waits behind it at the Host, which drops it with the session. The keyed one
  // runs 5 s, for the outage must come while it runs: from its start to the outage took over
  // a second in a WebKit run on a loaded machine (the second call and the log's check are
  // driver round trips), and with 1 s it had finished and the unkeyed one ran.
  const keyed = await callIn(tab, 'board.slow', { text: 'keyed through the outage', ms: 5000 }, { key: 'outage-1' });
  const unkeyed = await callIn(tab, 'board.post', { text: 'unkeyed through the outage' });
  await started(tab, host, keyed, 'board.slow', 'outage-1');
  await host.fault('outage');
  await waitState(tab, 'reconnecting');
  // Told nothing while no Host can say whether it may still start: its session is fenced
  // from the next one, which says it never started.
  expect(await tab.evaluate((i) => window.__calls[i].state, unkeyed)).toBe('pending');
  await host.fault('up');
  expect(await settled(tab, unkeyed)).toMatchObject({ state: 'rejected', kind: 'not-run', sent: true });
  expect(await settled(tab, keyed)).toMatchObject({ state: 'resolved', value: { text: 'keyed through the outage' } });
  await ranOnce(host, 'board.slow', 'outage-1');
  expect(runs(host, 'board.post', '')).toBe(0);
});

test('a keyed call in flight across a graceful restart (SIGUSR2) resolves, and its handler ran once', async ({ browse, hosts }) => {
  const host = await hosts.start({});
  const tab = await browse.tab();
  await recordStates(tab);
  await tab.goto(host.url('/'));
  await waitState(tab, 'connected');
  // Held at the Host until its process begins to drain to the successor (10 s at the most),
  // however long the successor takes to start.
  const slow = await callIn(tab, 'board.slow', { text: 'across the handoff', ms: 10000, untilDrain: true }, { key: 'handoff-1' });
  const behind = await callIn(tab, 'board.post', { text: 'behind it' });
  await started(tab, host, slow, 'board.slow', 'handoff-1');
  const handoff = host.handoff();
  const during = await callIn(tab, 'board.post', { text: 'during the handoff' }, { key: 'handoff-2' });
  const h = await handoff;
  expect(h.newPid).not.toBe(h.oldPid);
  const a = await settled(tab, slow);
  expect(a).toMatchObject({ state: 'resolved', value: { text: 'across the handoff' } });
  expect(await settled(tab, behind)).toMatchObject({ state: 'resolved', value: { text: 'behind it' } });
  expect(await settled(tab, during)).toMatchObject({ state: 'resolved', value: { text: 'during the handoff' } });
  // The premise: still running when the old process began to drain (not ended by its 10 s).
  await waitFor(() => host.logs.some((l) => l.includes('demo: board.slow held until the drain') && l.includes('handoff-1')), { what: "the old process's log that the call was held until the drain" });
  await ranOnce(host, 'board.slow', 'handoff-1');
  await ranOnce(host, 'board.post', 'handoff-2');
  await ranOnce(host, 'board.post', '');
  expect(await states(tab)).toEqual(['connecting', 'connected']);
});

// postFromForm types text into the board's form and sends it; it returns the message's key
// (the page puts the newest first, and each entry carries its key).
async function postFromForm(tab, text) {
  const before = await tab.evaluate(() => document.querySelectorAll('#board-mine li').length);
  await tab.evaluate((t) => { document.getElementById('board-text').value = t; }, text);
  await tab.click('#board-send');
  // A driver's click may return before the page has handled it (WebKitWebDriver does): the key
  // is read once the form has listed the message, newest first.
  return waitPage(tab, (n) => {
    const all = document.querySelectorAll('#board-mine li');
    return all.length > n ? all[0].dataset.key : false;
  }, before, { what: 'the form to list the message' });
}
// entry reads a message of the form's by its key, once fn(entry) holds.
function entry(tab, key, want, what) {
  return waitPage(tab, ([k, w]) => {
    const li = document.querySelector(`#board-mine li[data-key="${k}"]`);
    if (!li) return false;
    const e = { status: li.dataset.status, kind: li.dataset.kind, id: li.dataset.id, seq: li.dataset.seq, text: li.querySelector('.board-status').textContent };
    return Object.entries(w).every(([f, v]) => (v instanceof Object ? new RegExp(v.re).test(e[f]) : e[f] === v)) ? e : false;
  }, [key, want], { what: `${what}: ${JSON.stringify(want)}` });
}
const onBoard = (tab, id) => waitPage(tab, (i) => document.querySelectorAll(`#board-list li[data-id="${i}"]`).length === 1, id, { what: `message ${id} on the board` });

test('the form\'s message is posted once, online and after an outage; meanwhile it says it will be sent when connected', async ({ browse, hosts }) => {
  const host = await hosts.start(fast);
  const tab = await browse.tab();
  await tab.goto(host.url('/'));
  await waitState(tab, 'connected');

  const online = await postFromForm(tab, 'hello online');
  const posted = await entry(tab, online, { status: 'posted' }, 'the message posted');
  expect(posted.text).toMatch(new RegExp(`^posted #${posted.id} at `));
  await onBoard(tab, posted.id);
  await ranOnce(host, 'board.post', online);

  // The Host's refusal is shown, with its kind; nothing ran.
  const empty = await postFromForm(tab, '   ');
  const refused = await entry(tab, empty, { status: 'failed', kind: 'app' }, 'the empty message refused');
  expect(refused.text).toContain('board: the message is empty');
  expect(runs(host, 'board.post', empty)).toBe(0);

  await host.fault('outage');
  await waitState(tab, 'reconnecting');
  const later = [await postFromForm(tab, 'first after the outage'), await postFromForm(tab, 'second after the outage')];
  for (const key of later) {
    await entry(tab, key, { status: 'waiting', text: 'will be sent when connected' }, 'a message waiting');
    expect(runs(host, 'board.post', key)).toBe(0);
  }
  await host.fault('up');
  const seqs = [];
  for (const key of later) {
    const e = await entry(tab, key, { status: 'posted' }, 'a message posted after the outage');
    await onBoard(tab, e.id);
    await ranOnce(host, 'board.post', key);
    seqs.push(Number(e.seq));
  }
  expect(seqs[1]).toBe(seqs[0] + 1); // in the order made

  // The same in Simplified Chinese.
  await tab.goto(host.url('/?lang=zh'));
  await waitState(tab, 'connected');
  expect(await tab.evaluate(() => document.getElementById('board-send').textContent)).toBe('发送');
  await host.fault('outage');
  await waitState(tab, 'reconnecting');
  const zh = await postFromForm(tab, '你好');
  await entry(tab, zh, { text: '连接后发送' }, 'the Chinese message waiting');
  await host.fault('up');
  await entry(tab, zh, { status: 'posted', text: { re: '^已发布 #[0-9a-f]{8}，' } }, 'the Chinese message posted');
  await ranOnce(host, 'board.post', zh);
});

// sendTops runs first in the page: it keeps every distinct top of the form's Send button, each
// frame from the first paint on (a frame or 50 ms, as a page in the background gets none).
function sendTops() {
  window.__sendTops = [];
  const look = () => {
    const b = document.getElementById('board-send');
    if (b) {
      const top = Math.round(b.getBoundingClientRect().top + window.scrollY);
      if (!window.__sendTops.includes(top)) window.__sendTops.push(top);
    }
    requestAnimationFrame(look);
  };
  setInterval(look, 50);
  requestAnimationFrame(look);
}

test('the form stays where it is as the page connects, fills in, and loses and regains the Host', async ({ browse, hosts }) => {
  const host = await hosts.start(fast);
  const tab = await browse.tab();
  await tab.addInitScript(sendTops);
  await tab.goto(host.url('/'));
  await waitState(tab, 'connected');
  await waitPage(tab, () => !!document.getElementById('host-id').dataset.host && document.getElementById('ticks-note').textContent !== '', undefined, { what: 'the Host\'s id and the stream\'s note' });
  await host.fault('outage');
  await waitState(tab, 'reconnecting');
  await host.fault('up');
  await waitState(tab, 'connected');
  // Every line above the form that fills in or empties keeps its room: a form that moves is
  // missed by a hand (or a test's click) that aimed at it a moment before.
  expect(await tab.evaluate(() => window.__sendTops)).toHaveLength(1);
});

test('calls over a flapping link: every keyed one resolves and runs once; an unkeyed one resolves or rejects interrupted or not-run, and none runs twice', async ({ browse, hosts }) => {
  const host = await hosts.start(fast);
  const tab = await browse.tab();
  await tab.goto(host.url('/'));
  await waitState(tab, 'connected');
  await host.fault('flap=300'); // every session dropped 300 ms after its ready frame
  await waitState(tab, 'reconnecting');
  const keyed = [];
  const unkeyed = [];
  const attempt = () => tab.evaluate(() => globalThis.lifeline.state().attempt);
  for (let i = 0; i < 3; i++) {
    keyed.push(await callIn(tab, 'board.post', { text: `keyed ${i}` }, { key: `flap-${i}` }));
    unkeyed.push(await callIn(tab, 'board.post', { text: `unkeyed ${i}` }));
    const a = await attempt();
    await waitFor(async () => (await attempt()) > a, { interval: 20, what: 'the next session' }); // spread over sessions
  }
  // Longer than a session lives: its first run is cut off, and its re-send finds the outcome.
  keyed.push(await callIn(tab, 'board.slow', { text: 'slow through the flaps', ms: 500 }, { key: 'flap-slow' }));
  for (const i of keyed) expect(await settled(tab, i, 20_000), `keyed call ${i}`).toMatchObject({ state: 'resolved' });
  let resolved = 0;
  let notRun = 0;
  for (const i of unkeyed) {
    const o = await settled(tab, i, 20_000);
    if (o.state === 'resolved') resolved++;
    else if (o.kind === 'not-run') notRun++;
    else expect(o, `unkeyed call ${i}`).toMatchObject({ kind: 'interrupted', sent: true });
  }
  await host.fault('up');
  await ranOnce(host, 'board.slow', 'flap-slow');
  for (let i = 0; i < 3; i++) await ranOnce(host, 'board.post', `flap-${i}`);
  await waitFor(() => runs(host, 'board.post', '') >= resolved, { what: 'the runs of the resolved unkeyed calls in the log' });
  const unkeyedRuns = runs(host, 'board.post', '');
  console.log(`[${browse.engine.name} ${mode || 'default'}] over the flaps: ${resolved} of ${unkeyed.length} unkeyed calls resolved, ${notRun} not run (the others interrupted), ${unkeyedRuns} unkeyed runs`);
  expect(unkeyedRuns).toBeGreaterThanOrEqual(resolved);
  expect(unkeyedRuns).toBeLessThanOrEqual(unkeyed.length - notRun);
});

test('an unkeyed call cut off by a SIGKILL of its Host rejects timeout, and its handler ran at most once', async ({ browse, hosts }) => {
  const host = await hosts.start(fast);
  const tab = await browse.tab();
  await tab.goto(host.url('/'));
  await waitState(tab, 'connected');
  // No Host of its dedup store (the killed process's, in memory) is left to fence its
  // session: what became of it cannot be learned, and it ends at its timeout.
  const slow = await callIn(tab, 'board.slow', { text: 'never finished', ms: 10_000 }, { timeoutMs: 3000 });
  await waitFor(() => runs(host, 'board.slow', '') === 1, { what: 'the slow handler to start' });
  process.kill(host.pid, 'SIGKILL');
  expect(await settled(tab, slow)).toMatchObject({ state: 'rejected', kind: 'timeout', sent: true });
  await waitState(tab, 'reconnecting');
  await ranOnce(host, 'board.slow', '');
});

test('two tabs calling at once each get their own replies, never the other\'s', async ({ browse, hosts }) => {
  const host = await hosts.start({});
  const session = await browse.session();
  const tabs = [await session.newTab(), await session.newTab()];
  for (const t of tabs) await t.goto(host.url('/'));
  for (const t of tabs) await waitState(t, 'connected');
  const shared = mode !== 'in-page' && (await tabs[0].evaluate(() => typeof SharedWorker === 'function'));
  if (shared) expect((await host.health()).sessions).toBe(1); // shared: one hub, one session
  // Each tab's board follows the stream from its subscription on: wait until both subscriptions
  // have their baseline (a second subscriber of the stream in the tab gets its reset once the
  // one on the wire has it), or a post made before one of them would rightly not reach it.
  for (const t of tabs) {
    const based = await t.evaluate(() => new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), 5000);
      const off = globalThis.lifeline.subscribe('board', (d) => {
        if (!d.reset) return;
        clearTimeout(timer);
        setTimeout(off);
        resolve(true);
      });
    }));
    expect(based).toBe(true);
  }
  const n = 10;
  // Both tabs number their calls from 1: the hub tells them apart by tab.
  const replies = await Promise.all(tabs.map((t, i) => t.evaluate(([t, n]) => Promise.all(Array.from({ length: n }, (_, i) =>
    globalThis.lifeline.call('board.post', { text: `tab ${t} message ${i}` }, i % 2 ? { key: `tab-${t}-${i}` } : undefined))), [i, n])));
  for (const [t, list] of replies.entries()) {
    expect(list.map((m) => m.text)).toEqual(Array.from({ length: n }, (_, i) => `tab ${t} message ${i}`));
  }
  const ids = replies.flat().map((m) => m.id);
  expect(new Set(ids).size).toBe(2 * n);
  const board = (t) => t.evaluate(() => Array.from(document.querySelectorAll('#board-list li'), (li) => li.dataset.id));
  for (const t of tabs) {
    await waitFor(async () => (await board(t)).length === 2 * n, { what: 'every message on the board' });
    expect(new Set(await board(t))).toEqual(new Set(ids));
  }
  for (let t = 0; t < 2; t++) {
    for (let i = 1; i < n; i += 2) await ranOnce(host, 'board.post', `tab-${t}-${i}`);
  }
});

test('bad input from the page rejects invalid with a console error, and nothing is sent', async ({ browse, hosts }) => {
  const host = await hosts.start({});
  const tab = await browse.tab();
  await tab.goto(host.url('/'));
  await waitState(tab, 'connected');
  const got = await tab.evaluate(async () => {
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
  for (const [what, o] of Object.entries(got)) expect(o, what).toEqual({ kind: 'invalid', sent: false });
  const want = [
    'lifeline.call(name, …): name must be a non-empty string',
    'data cannot be sent as JSON',
    'a function or a symbol?',
    // The protocol's rules, which the Go side holds, are reported the same way.
    'lifeline.call("board post!", …): refused: wire: bad call name',
    'lifeline.call("board.post", …): refused: wire: bad call key',
  ];
  const errors = async () => (await tab.console()).filter((l) => l.type === 'error').map((l) => l.text).join('\n');
  await waitFor(async () => {
    const e = await errors();
    return want.every((w) => e.includes(w));
  }, { timeout: 5000, what: 'the console errors' });
  const log = await errors();
  for (const w of want) expect(log).toContain(w);
  // A name no handler has is sent, and answered unknown; the session lives on.
  expect(await settled(tab, await callIn(tab, 'board.nothing', {}))).toMatchObject({ state: 'rejected', kind: 'unknown', sent: true });
  expect(await settled(tab, await callIn(tab, 'board.post', { text: 'still fine' }))).toMatchObject({ state: 'resolved', value: { text: 'still fine' } });
  await ranOnce(host, 'board.post', '');
  expect(host.logs.filter((l) => l.includes('demo: board call ran')).length).toBe(1); // that one only
});
