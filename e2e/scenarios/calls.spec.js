// Calls across a reconnect, in every engine: the Host's log says how often a handler ran
// (tests/calls.js).
const { test, expect, mode } = require('./fixtures');
const { waitState, recordStates, states } = require('./page');
const { runs, ranOnce, callIn, started, settled } = require('../tests/calls');

const fast = { recovery: { initialDelayMs: 200, maxDelayMs: 500 } };

test('calls cut off by an outage after they were sent: the unkeyed one rejects interrupted, the keyed one is sent again and runs once', async ({ browse, hosts }) => {
  const host = await hosts.start(fast);
  const tab = await browse.tab();
  await tab.goto(host.url('/'));
  await waitState(tab, 'connected');
  // A session's calls run one at a time: the keyed one runs when the outage comes, the
  // unkeyed one waits behind it at the Host, which drops it with the session.
  const keyed = await callIn(tab, 'board.slow', { text: 'keyed through the outage', ms: 1000 }, { key: 'outage-1' });
  const unkeyed = await callIn(tab, 'board.post', { text: 'unkeyed through the outage' });
  await started(tab, host, keyed, 'board.slow', 'outage-1');
  await host.fault('outage');
  expect(await settled(tab, unkeyed)).toMatchObject({ state: 'rejected', kind: 'interrupted', sent: true });
  await host.fault('up');
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
  const slow = await callIn(tab, 'board.slow', { text: 'across the handoff', ms: 1500 }, { key: 'handoff-1' });
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
  expect(a.at).toBeGreaterThan(h.readyAt); // the premise: still running when the old process began to drain
  await ranOnce(host, 'board.slow', 'handoff-1');
  await ranOnce(host, 'board.post', 'handoff-2');
  await ranOnce(host, 'board.post', '');
  expect(await states(tab)).toEqual(['connecting', 'connected']);
  void mode;
});
