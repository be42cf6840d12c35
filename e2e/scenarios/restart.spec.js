// Host restarts as the page lives through them, in every engine: a graceful handoff (SIGUSR2)
// and a planned drain to another Host, which the page never sees, with its stream resumed by
// cursor; a plain restart (stop, start again), which the page sees as the Host restarting
// (1012, "service restart") whatever close code its engine reports, and Reconnect now during it.
const { test, expect, mode, waitFor, gapsIn } = require('./fixtures');
const { waitState, recordStates, states, recordStatuses, statuses, collectTicks, ticks, events } = require('./page');

test('a graceful restart (SIGUSR2), twice: the page stays connected, its ticks have no gap, one reset per new log', async ({ browse, hosts }) => {
  const host = await hosts.start({});
  const tab = await browse.tab();
  await recordStates(tab);
  await tab.goto(host.url('/'));
  await waitState(tab, 'connected');
  await collectTicks(tab);
  const resets = async () => (await ticks(tab)).filter((d) => d.reset);
  await waitFor(async () => (await events(tab)) >= 2, { what: 'two ticks from the first process' });
  for (let round = 1; round <= 2; round++) {
    const h = await host.handoff();
    expect(h.newPid).not.toBe(h.oldPid);
    console.log(`[${browse.engine.name} ${mode || 'default'}] handoff ${round}: the old process left ${h.goneAt - h.readyAt} ms after the new one was ready`);
    expect(h.goneAt - h.readyAt).toBeLessThan(2000); // the old process leaves once its page moved
    await waitFor(async () => (await resets()).length === round + 1, { what: `the reset from process ${h.newPid}'s new log` });
    const n = await events(tab);
    await waitFor(async () => (await events(tab)) >= n + 2, { what: `ticks from process ${h.newPid}` });
    const health = await host.health();
    expect(health.sessions).toBe(1);
    expect(health.draining).toBe(false);
  }
  const got = await ticks(tab);
  expect(gapsIn(got)).toEqual([]);
  const epochs = got.filter((d) => d.reset).map((d) => d.epoch);
  expect(epochs.length).toBe(3);
  expect(new Set(epochs).size).toBe(3);
  expect(await states(tab)).toEqual(['connecting', 'connected']);
});

test('a planned drain to a second Host: never leaves connected, ticks continue through a reset', async ({ browse, hosts }) => {
  const first = await hosts.start({});
  const second = await hosts.start({ allowedOrigins: [first.origin] });
  const tab = await browse.tab();
  await recordStates(tab);
  await tab.goto(first.url('/'));
  await waitState(tab, 'connected');
  await collectTicks(tab);
  await waitFor(async () => (await ticks(tab)).some((d) => !d.reset), { what: 'a first tick' });
  await first.fault(`drain=ws://127.0.0.1:${second.port}/_lifeline/events`);
  await waitFor(async () => (await second.health()).sessions === 1 && (await first.health()).sessions === 0, { what: 'the page moved to the second Host' });
  await first.stop();
  const resets = async () => (await ticks(tab)).filter((d) => d.reset).length;
  await waitFor(async () => (await resets()) === 2, { what: 'the second log\'s reset' });
  const n = (await ticks(tab)).length;
  await waitFor(async () => (await ticks(tab)).length >= n + 2, { what: 'ticks from the second Host' });
  expect(gapsIn(await ticks(tab))).toEqual([]);
  expect(await states(tab)).toEqual(['connecting', 'connected']);
});

// After a 1012 the page holds its ladder at the first cap (initialDelayMs, 500 ms) for maxDelay:
// once the Host answers again the page is back within that wait and a handshake.
const backWithinMs = 500 + 1000;
const downMs = 2000; // the restart's length: several of the first cap's waits

// restartAndReturn restarts host plainly while the page is connected and resolves with how
// long after the Host answered again the page was connected, and the statuses of the restart.
// click: press Reconnect now every 300 ms while the Host is down.
async function restartAndReturn(tab, host, { click = false } = {}) {
  await waitState(tab, 'connected');
  const mark = (await statuses(tab)).length;
  let clicking = click;
  const clicks = (async () => {
    while (clicking) {
      await tab.evaluate(() => globalThis.lifeline.reconnectNow()).catch(() => {});
      await new Promise((r) => setTimeout(r, 300));
    }
  })();
  let r;
  try {
    r = await host.restart(downMs);
  } finally {
    clicking = false;
    await clicks;
  }
  await waitState(tab, 'connected', 15_000);
  const seen = (await statuses(tab)).slice(mark);
  const connectedAt = seen.filter((s) => s.state === 'connected').pop().at;
  return { back: connectedAt - r.upAt, seen };
}

test('a plain restart (stop, start): the page sees the Host restarting and is back at the first cap', async ({ browse, hosts }) => {
  const host = await hosts.start({});
  const tab = await browse.tab();
  await recordStatuses(tab);
  await tab.goto(host.url('/'));
  const { back, seen } = await restartAndReturn(tab, host);
  console.log(`[${browse.engine.name} ${mode || 'default'}] plain restart: back ${back} ms after the Host answered again`);
  // The first failure is the Host's own word, whatever close code the engine reports for it
  // (1012, or 1006 after the Host's error frame).
  const failed = seen.find((s) => s.error);
  expect(failed, JSON.stringify(seen.map((s) => [s.state, s.kind, s.error]))).toMatchObject({ kind: 'restarting' });
  expect(failed.error).toContain('the host is restarting');
  expect(back).toBeLessThan(backWithinMs);
});

// Two pages, each in a session of its own on a Host of its own, restarted at once: one page is
// left alone, the other presses Reconnect now throughout; each session has lived as long, so
// the two returns compare.
test('Reconnect now while the Host restarts does not make its return slower than not pressing it', async ({ browse, hosts }) => {
  const [h1, h2] = [await hosts.start({}), await hosts.start({})];
  const tabs = [];
  for (const h of [h1, h2]) {
    const tab = await (await browse.session()).newTab();
    await recordStatuses(tab);
    await tab.goto(h.url('/'));
    tabs.push(tab);
  }
  const [plain, clicked] = await Promise.all([restartAndReturn(tabs[0], h1), restartAndReturn(tabs[1], h2, { click: true })]);
  console.log(`[${browse.engine.name} ${mode || 'default'}] back after a restart: ${plain.back} ms without Reconnect now, ${clicked.back} ms pressing it`);
  expect(plain.back).toBeLessThan(backWithinMs);
  expect(clicked.back).toBeLessThan(backWithinMs);
});
