// The embedding example (examples/embed, bin/embed) in Chromium: an application of its own whose
// page has no Lifeline markup, a cookie sign-in stub, and one private stream per user guarded by
// Authorize. What an embedder gets from hostplugin.New and h.Handler(mux), and nothing else.
const fs = require('fs');
const path = require('path');
const crypto = require('crypto');
const { test, expect, waitFor, mode, withMode, sharedWorker } = require('./fixtures');

const box = '#connection-status';

// recordStatuses keeps every lifeline:state detail the page receives, from the first one on.
async function recordStatuses(page) {
  await page.addInitScript(() => {
    window.__statuses = [];
    window.addEventListener('lifeline:state', (e) => window.__statuses.push(e.detail));
  });
}

async function statuses(page) {
  return page.evaluate(() => window.__statuses.slice());
}

// events returns the seqs of the events the page shows, oldest first, and their texts.
async function shown(page) {
  return page.$$eval('#events li', (lis) => lis.map((li) => ({ seq: Number(li.dataset.seq), text: li.textContent })).reverse());
}

test('a page with no Lifeline markup connects with the injected default indicator and shows its user\'s stream', async ({ page, hosts }) => {
  const app = await hosts.startEmbed({});
  // The page as the application wrote it carries no indicator and no script of Lifeline's;
  // what the Host adds is the bootstrap and the tab script, in the head (no preload of the wasm:
  // a preloaded module never enters V8's code cache).
  const html = await (await fetch(app.url('/'))).text();
  const head = html.slice(0, html.indexOf('</head>'));
  expect(html).not.toContain('connection-status');
  expect(head.match(/<script type="application\/json" id="lifeline-bootstrap">/g)).toHaveLength(1);
  expect(head).not.toContain('rel="preload"');
  expect(head).toMatch(/<script src="\/_lifeline\/client\/lifeline\.[0-9a-f]{16}\.js" [^>]*async><\/script>/);

  await recordStatuses(page);
  await page.goto(app.url('/login?user=alice'));
  await expect(page).toHaveURL(app.url('/'));
  await expect(page.locator(`${box}[data-lifeline-default]`)).toHaveAttribute('data-state', 'connected');
  await expect(page.locator(box)).toHaveCount(1);
  expect(await page.$eval(box, (el) => el.parentElement === document.body)).toBe(true);
  await expect(page.locator('#connection-label')).toHaveText('Connected');
  await expect(page.locator('#reconnect-now')).toBeDisabled();

  // alice's events arrive once a second, consecutive, and addressed to her.
  await waitFor(async () => (await shown(page)).length >= 3, { what: 'three of alice\'s events' });
  const got = await shown(page);
  for (const [i, e] of got.entries()) {
    expect(e.text).toMatch(/^hello alice, this is your event \d+$/);
    if (i > 0) expect(e.seq).toBe(got[i - 1].seq + 1);
  }
  const states = (await statuses(page)).map((s) => s.state);
  expect(states).not.toContain('reconnecting');
  expect(states[states.length - 1]).toBe('connected');
});

test('a user cannot read another user\'s stream: denied ends that subscription, the handler sees it, their own stream flows on', async ({ page, browser, hosts }) => {
  const app = await hosts.startEmbed({});
  // bob is signed in elsewhere, so his stream is real and has events.
  const bobs = await withMode(await browser.newContext());
  try {
    const bob = await bobs.newPage();
    await bob.goto(app.url('/login?user=bob'));
    await waitFor(async () => (await shown(bob)).length >= 1, { what: 'bob\'s own events' });

    await recordStatuses(page);
    await page.goto(app.url('/login?user=alice'));
    await expect(page.locator(box)).toHaveAttribute('data-state', 'connected');
    await waitFor(async () => (await shown(page)).length >= 1, { what: 'alice\'s own events' });

    await page.evaluate(() => {
      window.__bob = [];
      globalThis.lifeline.subscribe('user.bob', (m) => window.__bob.push(m));
    });
    await waitFor(() => page.evaluate(() => window.__bob.length > 0), { what: 'the end of the subscription to user.bob' });
    const before = (await shown(page)).length;
    await waitFor(async () => (await shown(page)).length >= Math.min(before + 3, 10), { what: 'alice\'s events after the denial' });

    // One message, the end, and none of bob's events before or after it.
    const msgs = await page.evaluate(() => window.__bob.slice());
    expect(msgs).toEqual([{ stream: 'user.bob', denied: true, reason: 'this stream belongs to another user', error: 'gateway: the host denied stream "user.bob": this stream belongs to another user' }]);
    // The session carried on: alice never left connected, and her events have no gap.
    const states = (await statuses(page)).map((s) => s.state).filter((s, i, all) => s !== all[i - 1]);
    expect(states.slice(states.indexOf('connected'))).toEqual(['connected']);
    const got = await shown(page);
    for (let i = 1; i < got.length; i++) expect(got[i].seq).toBe(got[i - 1].seq + 1);
    expect(got.every((e) => e.text.startsWith('hello alice,'))).toBe(true);
  } finally {
    await bobs.close();
  }
});

test('an unauthenticated page shows unauthorized, retries at the top cap only, and connects after signing in and Reconnect now', async ({ page, hosts }) => {
  test.setTimeout(90_000);
  const maxDelayMs = 6000;
  const jitter = 0.5;
  const app = await hosts.startEmbed({ recovery: { maxDelayMs, jitter } });
  await recordStatuses(page);
  // Every attempt the hub makes, stamped: a socket, or the plain GET that checks the Host first
  // (after a refusal that GET is the whole attempt: it is refused as the socket would be, and no
  // socket is dialed, PROTOCOL.md §11.5). In-page, from the page's own WebSocket constructor and
  // fetch; in shared mode the requests are the worker's, seen through DevTools once it runs.
  const shared = mode !== 'in-page';
  if (!shared) {
    await page.addInitScript(() => {
      window.__dials = [];
      const Native = window.WebSocket;
      window.WebSocket = new Proxy(Native, {
        construct(target, args, newTarget) {
          window.__dials.push({ at: performance.now(), kind: 'socket' });
          return Reflect.construct(target, args, newTarget);
        },
      });
      const nativeFetch = window.fetch;
      window.fetch = function (input, init) {
        const url = typeof input === 'string' ? input : input.url;
        if (/\/_lifeline\/events(\?|$)/.test(url) && !/lifeline-carrier=/.test(url)) window.__dials.push({ at: performance.now(), kind: 'get' });
        return nativeFetch.apply(this, arguments);
      };
    });
  }
  await page.goto(app.url('/'));
  await expect(page.locator(`${box}[data-lifeline-default]`)).toHaveAttribute('data-state', 'unauthorized');
  await expect(page.locator('#connection-label')).toHaveText('Sign-in required');
  await expect(page.locator('#connection-detail')).toHaveText('The Host needs you to sign in; after signing in, choose Reconnect now.');
  await expect(page.locator('#reconnect-now')).toBeEnabled();
  const workerDials = [];
  let worker = null;
  if (shared) {
    worker = await sharedWorker(page.context().browser());
    worker.on('Network.webSocketWillSendHandshakeRequest', (e) => workerDials.push({ at: e.timestamp * 1000, kind: 'socket' }));
    worker.on('Network.requestWillBeSent', (e) => { if (/\/_lifeline\/events(\?|$)/.test(e.request.url) && !/lifeline-carrier=/.test(e.request.url)) workerDials.push({ at: e.timestamp * 1000, kind: 'get' }); });
    await worker.send('Network.enable');
  }

  // A refused credential is retried forever, but only at the top cap: every wait the page
  // schedules is a top-cap delay (cap × (1 − jitter) .. cap), never the ladder's first steps
  // (250–500 ms, 500–1000 ms, …), and the sockets are that far apart.
  // A socket refused and the GET that then asks why are one attempt, as a GET and the socket
  // it lets through would be: a GET right after a socket is that socket's question, however
  // late a saturated machine sends it (one came 2.8 s after its socket with eight lanes
  // running, and was taken for an attempt of its own), and stamps less than a second apart
  // are one attempt (the waits are ≥ 3 s). An attempt is the time of its first stamp.
  const attemptsOf = (stamps) => stamps.slice().sort((a, b) => a.at - b.at)
    .filter((d, i, all) => i === 0 || (d.at - all[i - 1].at > 1000 && !(d.kind === 'get' && all[i - 1].kind === 'socket')))
    .map((d) => d.at);
  const dialsSoFar = async () => attemptsOf(shared ? workerDials.slice() : await page.evaluate(() => window.__dials.slice()));
  await waitFor(async () => (await dialsSoFar()).length >= 5, { timeout: 45_000, interval: 100, what: 'five attempts' });
  if (worker) await worker.detach();
  const seen = await statuses(page);
  const dials = await dialsSoFar();
  const waits = seen.filter((s) => s.state === 'unauthorized').map((s) => s.nextAttempt - s.at);
  const low = maxDelayMs * (1 - jitter);
  expect(waits.length).toBeGreaterThanOrEqual(4);
  for (const w of waits) {
    expect(w).toBeGreaterThanOrEqual(low - 50);
    expect(w).toBeLessThanOrEqual(maxDelayMs + 50);
  }
  // Between two attempts: the refusal (an upgrade answered 401 and the refusal query that says
  // so, or the check alone) and one top-cap wait.
  for (let i = 1; i < dials.length; i++) {
    expect(dials[i] - dials[i - 1]).toBeGreaterThanOrEqual(low - 20);
    expect(dials[i] - dials[i - 1]).toBeLessThanOrEqual(maxDelayMs + 1000);
  }
  // Never shown as an outage: the page only tried and was refused.
  expect([...new Set(seen.map((s) => s.state))].sort()).toEqual(['connecting', 'unauthorized']);
  expect(seen.filter((s) => s.state === 'unauthorized').every((s) => s.kind === 'unauthorized')).toBe(true);

  // Sign in (the page's own fetch sets the cookie, as a sign-in form would), right after a
  // refusal, so that the next timed attempt is seconds away: what connects is Reconnect now.
  await waitFor(() => page.evaluate(() => {
    const last = window.__statuses[window.__statuses.length - 1];
    return last.state === 'unauthorized' && last.nextAttempt - Date.now() > 2000;
  }), { timeout: 20_000, interval: 20, what: 'an unauthorized status with its next attempt > 2 s away' });
  await page.evaluate(() => fetch('/login?user=carol'));
  const mark = (await statuses(page)).length;
  await page.locator('#reconnect-now').click();
  await expect(page.locator(box)).toHaveAttribute('data-state', 'connected');
  await expect(page.locator('#connection-label')).toHaveText('Connected');
  const after = (await statuses(page)).slice(mark);
  // Reconnect now restarts the ladder: its attempt has failures 0; a timed retry would have 1.
  expect(after[0]).toMatchObject({ state: 'connecting', failures: 0 });
  expect(after[after.length - 1].state).toBe('connected');

  // The identity is the new cookie's: carol may read her own stream now.
  await page.evaluate(() => {
    window.__carol = [];
    globalThis.lifeline.subscribe('user.carol', (m) => window.__carol.push(m));
  });
  await waitFor(() => page.evaluate(() => window.__carol.some((m) => !m.reset && !('error' in m))), { what: 'an event of carol\'s stream' });
});

test('the client is served immutable, and a repeat load fetches nothing but the HTML', async ({ page, hosts }) => {
  const app = await hosts.startEmbed({});
  const client = /\/_lifeline\/client\//;
  const first = [];
  page.on('response', (r) => first.push(r));
  await page.goto(app.url('/login?user=alice'));
  await expect(page.locator(box)).toHaveAttribute('data-state', 'connected');
  page.removeAllListeners('response');

  // The tab's own requests: its script, and in-page the wasm and the runner. In shared mode
  // the worker loads its script, the runner and the wasm, and Playwright does not see a shared
  // worker's requests (the Go tests check how every asset is served); on a first visit the
  // page fetches the wasm too, ahead of the worker, whose own fetch joins it (web/boot.js),
  // and once a hub has run with it, no more.
  const assets = first.filter((r) => client.test(r.url()));
  const want = ['/_lifeline/client/lifeline.<hash>.js'];
  if (mode === 'in-page') want.push('/_lifeline/client/lifeline.<hash>.wasm', '/_lifeline/client/run.<hash>.js');
  const firstWant = mode === 'shared' ? [...want, '/_lifeline/client/lifeline.<hash>.wasm'] : want;
  expect(assets.map((r) => new URL(r.url()).pathname.replace(/\.[0-9a-f]{16}\./, '.<hash>.')).sort()).toEqual(firstWant.sort());
  for (const r of assets) {
    expect(r.status(), r.url()).toBe(200);
    expect(await r.headerValue('cache-control'), r.url()).toBe('public, max-age=31536000, immutable');
  }
  if (mode === 'in-page') {
    const wasm = assets.find((r) => r.url().endsWith('.wasm'));
    expect(await wasm.headerValue('content-encoding')).toBe('br'); // Chromium sends br even over http
  }
  const html = first.find((r) => r.url() === app.url('/'));
  expect(await html.headerValue('cache-control')).toBe('no-cache');

  // What went to the network, as Chromium's network layer says: a request answered from the
  // memory cache (requestServedFromCache) or the disk cache (fromDiskCache) did not.
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Network.enable');
  let sent = new Map(); // requestId → url
  let cached = new Set();
  cdp.on('Network.requestWillBeSent', (e) => sent.set(e.requestId, e.request.url));
  cdp.on('Network.requestServedFromCache', (e) => cached.add(e.requestId));
  cdp.on('Network.responseReceived', (e) => {
    if (e.response.fromDiskCache || e.response.fromPrefetchCache || e.response.fromServiceWorker) cached.add(e.requestId);
  });

  for (const [how, load] of [['navigating again', () => page.goto(app.url('/'))], ['reloading', () => page.reload()]]) {
    sent = new Map();
    cached = new Set();
    await load();
    await expect(page.locator(box), how).toHaveAttribute('data-state', 'connected');
    await waitFor(async () => (await shown(page)).length >= 1, { what: `an event after ${how}` });
    const network = [...sent].filter(([id]) => !cached.has(id)).map(([, url]) => url);
    expect(network, how).toEqual([app.url('/')]);
    expect([...sent.values()].filter((u) => client.test(u)).length, how).toBe(want.length);
    // The page's own view agrees: every resource came with no bytes over the wire.
    const timing = await page.evaluate(() => ({
      page: performance.getEntriesByType('navigation')[0].transferSize,
      resources: performance.getEntriesByType('resource').map((e) => ({ name: e.name, transferSize: e.transferSize })),
    }));
    expect(timing.page, how).toBeGreaterThan(0);
    // The client's assets, and the app's own script (immutable too, by its hashed name).
    expect(timing.resources.filter((r) => client.test(r.name)).length, how).toBe(want.length);
    expect(timing.resources.length, how).toBe(want.length + 1);
    for (const r of timing.resources) expect(r.transferSize, `${how}: ${r.name}`).toBe(0);
  }
});

test('<html data-lifeline-indicator="off">: no indicator is added, and the page connects all the same', async ({ page, hosts }) => {
  const app = await hosts.startEmbed({});
  // The attribute is set as the document has parsed, before the client looks for an indicator
  // (this listener is the document's first). Rewriting the HTML with page.route would not do:
  // Chromium then counts the page as public and blocks its socket to loopback.
  await page.addInitScript(() => {
    document.addEventListener('DOMContentLoaded', () => { document.documentElement.dataset.lifelineIndicator = 'off'; });
  });
  await recordStatuses(page);
  await page.goto(app.url('/login?user=alice'));
  await waitFor(async () => (await statuses(page)).some((s) => s.state === 'connected'), { what: 'connected' });
  await waitFor(async () => (await shown(page)).length >= 1, { what: 'alice\'s events' });
  expect(await page.getAttribute('html', 'data-lifeline-indicator')).toBe('off');
  expect(await page.evaluate(() => globalThis.lifeline.state().state)).toBe('connected');
  await expect(page.locator(box)).toHaveCount(0);
  expect(await page.$$eval('style', (els) => els.filter((el) => el.textContent.includes('data-lifeline-default')).length)).toBe(0);
});

// declared reads web/lifeline.d.ts: the members of an interface (name → optional) and the
// members of a string union, so that the runtime can be held to what the declarations say.
const dts = fs.readFileSync(path.join(__dirname, '..', '..', 'web', 'lifeline.d.ts'), 'utf8');
function declaredFields(name) {
  const body = new RegExp(`interface ${name}(?:<[^>]*>)? \\{([\\s\\S]*?)\\n  \\}`).exec(dts);
  if (!body) throw new Error(`lifeline.d.ts has no interface ${name}`);
  const fields = {};
  for (const m of body[1].matchAll(/^ {4}(?:readonly )?(\w+)(\??):/gm)) fields[m[1]] = m[2] === '?';
  return fields;
}
function declaredUnion(name) {
  const body = new RegExp(`type ${name} =([^;]*);`).exec(dts);
  if (!body) throw new Error(`lifeline.d.ts has no type ${name}`);
  return [...body[1].matchAll(/'([^']*)'/g)].map((m) => m[1]);
}

// conforms lists how value differs from the interface: a field it lacks that is not optional,
// or one the interface does not declare.
function conforms(value, fields) {
  const problems = [];
  for (const [k, optional] of Object.entries(fields)) if (!optional && !(k in value)) problems.push(`lacks ${k}`);
  for (const k of Object.keys(value)) if (!(k in fields)) problems.push(`has undeclared ${k}`);
  return problems;
}

test('what the page is given has the shapes web/lifeline.d.ts declares', async ({ page, hosts }) => {
  const app = await hosts.startEmbed({ recovery: { maxDelayMs: 2000 } });
  await page.addInitScript(() => {
    window.__statuses = [];
    window.__ready = [];
    window.addEventListener('lifeline:state', (e) => window.__statuses.push(e.detail));
    window.addEventListener('lifeline:ready', (e) => window.__ready.push({ detail: e.detail, first: globalThis.lifeline.state() }));
  });
  await page.goto(app.url('/'));
  await expect(page.locator(box)).toHaveAttribute('data-state', 'unauthorized');
  await page.evaluate(() => fetch('/login?user=alice'));
  await page.locator('#reconnect-now').click();
  await expect(page.locator(box)).toHaveAttribute('data-state', 'connected');
  await page.evaluate(() => {
    window.__msgs = [];
    for (const s of ['user.alice', 'user.bob']) globalThis.lifeline.subscribe(s, (m) => window.__msgs.push(m));
  });
  await waitFor(() => page.evaluate(() => window.__msgs.some((m) => m.denied) && window.__msgs.some((m) => m.reset === false)), { what: 'an event of alice and the end of bob' });
  const { statuses, ready, msgs } = await page.evaluate(() => ({ statuses: window.__statuses, ready: window.__ready, msgs: window.__msgs }));

  const status = declaredFields('Status');
  const states = declaredUnion('State');
  const kinds = declaredUnion('Kind');
  expect(ready).toHaveLength(1);
  expect(ready[0].detail).toBeNull();
  for (const s of [ready[0].first, ...statuses]) {
    expect(conforms(s, status), JSON.stringify(s)).toEqual([]);
    expect(states).toContain(s.state);
    expect(kinds).toContain(s.kind);
  }
  expect(statuses.map((s) => s.state)).toEqual(expect.arrayContaining(['connecting', 'unauthorized', 'connected']));
  expect(statuses.every((s) => typeof s.at === 'number')).toBe(true);

  const reset = msgs.find((m) => m.reset === true);
  const event = msgs.find((m) => m.reset === false);
  const end = msgs.find((m) => 'error' in m);
  expect(conforms(reset, declaredFields('Reset')), JSON.stringify(reset)).toEqual([]);
  expect(conforms(event, declaredFields('Event')), JSON.stringify(event)).toEqual([]);
  expect(conforms(end, declaredFields('End')), JSON.stringify(end)).toEqual([]);
  expect(msgs.filter((m) => m.stream === 'user.bob')).toEqual([end]);

  // lifelineOptions overrides the bootstrap's recovery and endpoint: the same fields.
  const bootstrap = JSON.parse(await page.locator('#lifeline-bootstrap').textContent());
  expect(Object.keys(declaredFields('Recovery')).sort()).toEqual(Object.keys(bootstrap.recovery).sort());
  expect(Object.keys(declaredFields('Options')).sort()).toEqual(['endpoint', 'mode', 'recovery', 'upgradeAfterMs']);
});

// The example serves its page under a Content-Security-Policy that runs no inline script but
// Lifeline's boot, by its hash, as README's "What appears in the page" advises: 'self' (the app's
// script, the tab script, the runner, the worker), 'wasm-unsafe-eval' (the wasm's compile) and
// h.BootHash(). Every test above runs under it; here, that the browser refused nothing. A policy
// that leaves the hash out costs the early start, never the connection: the browser refuses the
// boot, once, and the tab script boots instead.
async function recordViolations(page) {
  await page.addInitScript(() => {
    window.__violations = [];
    document.addEventListener('securitypolicyviolation', (e) => window.__violations.push(`${e.effectiveDirective} ${e.blockedURI}`));
  });
}

const sha = (text) => `'sha256-${crypto.createHash('sha256').update(text, 'utf8').digest('base64')}'`;

// inlineScripts returns the page's inline scripts that a policy runs (not the JSON bootstrap).
function inlineScripts(html) {
  return [...html.matchAll(/<script([^>]*)>([\s\S]*?)<\/script>/g)]
    .filter(([, attrs]) => !/\bsrc=/.test(attrs) && !/application\/json/.test(attrs))
    .map(([, , text]) => text);
}

// Signed in from here rather than through /login, so that the page's first load is the page
// itself (a route sees only the first request of a redirect chain, and /login redirects).
async function signIn(page, app, user) {
  expect((await fetch(app.url(`/login?user=${user}`), { redirect: 'manual' })).status).toBe(303);
  await page.context().addCookies([{ name: 'user', value: user, url: app.url('/') }]);
}

test('under the example\'s strict Content-Security-Policy, listing the boot\'s hash, the page connects and the browser refuses nothing', async ({ page, hosts }) => {
  const app = await hosts.startEmbed({});
  await signIn(page, app, 'alice');
  await recordViolations(page);
  const [response] = await Promise.all([page.waitForResponse(app.url('/')), page.goto(app.url('/'))]);
  const csp = await response.headerValue('content-security-policy');
  const scripts = inlineScripts(await response.text());
  expect(scripts).toHaveLength(1); // the boot alone: the app's own code is a file (/app.<hash>.js)
  expect(csp).toBe(`script-src 'self' 'wasm-unsafe-eval' ${sha(scripts[0])}`);
  await expect(page.locator(box)).toHaveAttribute('data-state', 'connected');
  await waitFor(async () => (await shown(page)).length >= 1, { what: 'one of alice\'s events' });
  expect(await page.evaluate(() => window.__violations)).toEqual([]);
});

test('a policy without the boot\'s hash costs the early start, not the connection: the tab script boots', async ({ page, hosts }) => {
  // The page is answered by page.route here, and Chromium's local network access checks block
  // a socket to 127.0.0.1 from a document Playwright fulfilled: in-page the page opens it, in
  // shared mode the worker, whose script came from the network.
  test.skip(mode === 'in-page', 'a fulfilled document may not open a loopback WebSocket (local network access)');
  const app = await hosts.startEmbed({});
  await signIn(page, app, 'alice');
  await page.route(app.url('/'), async (route) => {
    const response = await route.fetch();
    await route.fulfill({ response, headers: { ...response.headers(), 'content-security-policy': "script-src 'self' 'wasm-unsafe-eval'" } });
  });
  await recordViolations(page);
  await page.goto(app.url('/'));
  await expect(page.locator(box)).toHaveAttribute('data-state', 'connected');
  await waitFor(async () => (await shown(page)).length >= 1, { what: 'one of alice\'s events' });
  expect(await page.evaluate(() => window.__violations)).toEqual(['script-src-elem inline']);
});
