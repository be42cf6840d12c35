// Presence in the browser: lifeline.presence against bin/host, whose room.* streams
// carry presence and whose pages are who the cookie lifeline-demo-user says (cmd/host/presence.go).
// Each browser context is a browser of its own: its own cookie, its own shared hub.
const { test, expect, mode, withMode, waitState, waitFor } = require('./fixtures');

const ROOM = 'room.e2e';
const GRACE_MS = 2000; // the Host's presenceGraceMs: short, so the leave is seen soon

// browserAs opens a browser (a context) whose pages are user's.
async function browserAs(browser, host, user) {
  const context = await withMode(await browser.newContext());
  await context.addCookies([{ name: 'lifeline-demo-user', value: user, url: host.url('/') }]);
  return context;
}

// watch opens a tab of context that follows ROOM's presence, keeping every report with the time
// it came (ms since the epoch).
async function watch(context, host) {
  const page = await context.newPage();
  await page.goto(host.url('/'));
  await waitState(page, 'connected');
  await page.evaluate((room) => {
    window.__presence = [];
    globalThis.lifeline.presence(room, (p) => window.__presence.push({ at: Date.now(), p }));
  }, ROOM);
  return page;
}

const reports = (page) => page.evaluate(() => window.__presence.slice());

// members is the last report's members as "id×count".
async function members(page) {
  const r = await reports(page);
  if (r.length === 0) return null;
  const p = r[r.length - 1].p;
  return p.members.map((m) => m.id + '×' + m.count).join(' ');
}

async function waitMembers(page, want, timeout = 10_000) {
  await waitFor(async () => (await members(page)) === want, { timeout, what: `members "${want}" (have "${await members(page)}")` });
}

test('two browsers see each other join, with their metadata', async ({ browser, hosts }) => {
  const host = await hosts.start({ presenceGraceMs: GRACE_MS });
  const alice = await browserAs(browser, host, 'alice');
  const bob = await browserAs(browser, host, 'bob');
  try {
    const a = await watch(alice, host);
    await waitMembers(a, 'alice×1');
    const b = await watch(bob, host);
    await waitMembers(a, 'alice×1 bob×1');
    await waitMembers(b, 'alice×1 bob×1');
    const last = (await reports(a)).at(-1).p;
    expect(last.joined.map((m) => [m.id, m.meta])).toEqual([['bob', { name: 'bob' }]]);
    expect([last.total, last.limit, last.beyond, last.reason]).toEqual([2, 0, 0, '']);
    // bob's first report lists everyone as joined.
    expect((await reports(b))[0].p.joined.map((m) => m.id)).toEqual(['alice', 'bob']);
  } finally {
    await alice.close();
    await bob.close();
  }
});

test('a tab closed keeps its browser a member while another tab lives; the last tab closed leaves within the grace window and a second', async ({ browser, hosts }) => {
  test.setTimeout(60_000);
  const host = await hosts.start({ presenceGraceMs: GRACE_MS });
  const alice = await browserAs(browser, host, 'alice');
  const bob = await browserAs(browser, host, 'bob');
  try {
    const b = await watch(bob, host);
    const a1 = await watch(alice, host);
    const a2 = await watch(alice, host);
    // Shared: the browser's tabs are one session of alice's; in-page each tab is one.
    const count = mode === 'in-page' ? 2 : 1;
    await waitMembers(b, `alice×${count} bob×1`);
    await waitMembers(a2, `alice×${count} bob×1`);

    // One of alice's tabs closes: past the grace window, alice is still there for bob.
    const seen = (await reports(b)).length;
    await a1.close();
    await new Promise((r) => setTimeout(r, GRACE_MS + 1500));
    const after = (await reports(b)).slice(seen).map((x) => x.p);
    expect(after.flatMap((p) => p.left)).toEqual([]);
    expect(await members(b)).toBe('alice×1 bob×1'); // in-page: one session less, shown after the window
    if (mode !== 'in-page') expect(after).toEqual([]); // one session all along: nothing to tell

    // The last tab closes: bob sees alice leave within the grace window and a second.
    const closed = Date.now();
    await a2.close();
    await waitMembers(b, 'bob×1', GRACE_MS + 5000);
    const left = (await reports(b)).find((x) => x.p.left.includes('alice'));
    expect(left).toBeTruthy();
    const took = left.at - closed;
    console.log(`presence: the last tab of alice closed; bob saw her leave ${took} ms later (grace ${GRACE_MS} ms)`);
    expect(took).toBeGreaterThanOrEqual(GRACE_MS - 100); // not before the grace window
    expect(took).toBeLessThanOrEqual(GRACE_MS + 1000);
  } finally {
    await alice.close();
    await bob.close();
  }
});
