// A graceful restart of bin/host (SIGUSR2): the successor inherits the listening socket, the
// old process drains its page to it make-before-break and exits. The page must never leave
// `connected` and must see no gap in its ticks; the successor's in-memory log is a new one,
// so each restart costs the page exactly one explicit reset.
const { test, expect, recordStates, states, waitState, waitFor, collectTicks, ticks, gapsIn } = require('./fixtures');

test('a graceful restart (SIGUSR2), twice: the page stays connected, its ticks have no gap, one reset per new log', async ({ page, hosts }) => {
  const host = await hosts.start({});
  await recordStates(page);
  await page.goto(host.url('/'));
  await waitState(page, 'connected');
  await collectTicks(page);
  const events = async () => (await ticks(page)).filter((d) => !d.reset).length;
  const resets = async () => (await ticks(page)).filter((d) => d.reset);
  await waitFor(async () => (await events()) >= 2, { what: 'two ticks from the first process' });

  for (let round = 1; round <= 2; round++) {
    const h = await host.handoff();
    console.log(`handoff ${round}: pid ${h.oldPid} -> ${h.newPid}; the old process gone ${h.goneAt - h.readyAt} ms after the successor was ready`);
    expect(h.newPid).not.toBe(h.oldPid);
    // The old process leaves once its page has moved: well before drainTimeoutMs (10 s).
    expect(h.goneAt - h.readyAt).toBeLessThan(2000);
    await waitFor(async () => (await resets()).length === round + 1, { what: `the reset from process ${h.newPid}'s new log` });
    const n = await events();
    await waitFor(async () => (await events()) >= n + 2, { what: `ticks from process ${h.newPid}` });
    const health = await host.health(); // answered by the successor: the old one is gone
    expect(health.sessions).toBe(1);
    expect(health.draining).toBe(false);
  }

  const got = await ticks(page);
  expect(gapsIn(got)).toEqual([]);
  // The first subscription's baseline, then exactly one reset per restart, each to another log.
  const epochs = got.filter((d) => d.reset).map((d) => d.epoch);
  expect(epochs.length).toBe(3);
  expect(new Set(epochs).size).toBe(3);
  expect(await states(page)).toEqual(['connecting', 'connected']);
});
