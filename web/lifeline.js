// Lifeline in the page: the JS API (globalThis.lifeline), the lifeline:ready and lifeline:state
// events, and the start of the hub that keeps the connection (the Go program, lifeline.wasm:
// see wasm/main.go), to which it talks over a MessagePort.
//
//   lifeline.state()               the current status: {state, slow, attempt, failures,
//                                  nextAttempt, error, kind, reason, retryAfter, at, carrier,
//                                  blocked} (reason: the Host app's words when it refused or
//                                  ended the page's access)
//   lifeline.onState(fn)           fn(status) now and on every change; returns a remover
//   lifeline.reconnectNow()        attempt at once, from the first cap
//   lifeline.stop(), .start()      end everything / begin a fresh sequence
//   lifeline.subscribe(stream, fn) fn(delivery) for each event or baseline of stream, and a last
//                                  fn({stream, error, denied, reason}) if the subscription ends
//                                  (reason: the Host's words when it denied it); returns a remover
//   lifeline.presence(stream, fn)  who is on stream: fn(p) once the members are known and after
//                                  each change, p = {stream, members: [{id, count, meta}] by id,
//                                  total, limit, beyond, joined, updated, left, reason}; a last
//                                  fn({stream, error, denied, reason}) if it ends (as subscribe);
//                                  following it makes this browser a member; returns a remover
//   lifeline.call(name, data, {timeoutMs, key})
//                                  a Promise of the Host's reply to data (any JSON value); it
//                                  rejects with an Error whose kind says what happened and whose
//                                  sent says whether the call had gone out (docs/calls.md)
//   lifeline.onRenew(fn)           fn() → a Promise of a token (a string), asked before the
//                                  Host's credential expires, sent with the renewal (the
//                                  Host's Authenticate sees "Authorization: Bearer <token>");
//                                  returns a remover (docs/access.md)
//
// The API exists as soon as this script has run: calls made before the hub is up are queued.
// Embedder code can never break the page: a listener or handler that throws is logged and the
// page carries on; a wrong call is reported on the console with the call and the value; a
// remover called twice does nothing. If the hub's program ever ends, the state becomes
// `failed`, never a connection that is gone.
//
// globalThis.lifelineOptions = {recovery, endpoint, mode}, set before the boot runs (in the
// head, before the tags the Host injects at its end: web/boot.js reads it), overrides the
// bootstrap; the hub resolves it the same way.
//
// Two modes, the same API and behaviour. Shared (the default where the browser has
// SharedWorker): one hub per origin in a SharedWorker serves every tab over one socket; this
// script then loads no wasm at all. In-page (where SharedWorker is missing, or with
// lifelineOptions.mode = "in-page"): the hub runs in this page. A shared hub is named after
// the page's bootstrap and options, so a tab of another config (a Host whose config changed)
// gets a hub of its own; if the hub's program ends, every tab moves to a fresh one, and after
// repeated failures this page falls back to in-page.
//
// Data attributes of this script's tag (and of the inline boot's, web/boot.js, which starts
// the hub's load before this script has come): data-wasm (the wasm URL, default
// /lifeline.wasm), data-run (the runner with wasm_exec.js, loaded when the page has no Go yet),
// data-worker (the shared hub's worker script; without it, in-page mode).
(function () {
  'use strict';

  if (globalThis.lifeline && globalThis.lifeline.__client) return; // loaded twice

  let boot = null; // globalThis.__lifelineBoot(), once the page has its bootstrap (web/boot.js)
  let seen = false; // boot.seen() was called
  const MAX_STREAM = 256; // bytes of UTF-8 (internal/wire.MaxStreamName)

  let status = { state: 'connecting', slow: false, attempt: 0, failures: 0, nextAttempt: 0, error: '', kind: '', reason: '', retryAfter: 0, at: Date.now(), carrier: '', blocked: false };
  let port = null;
  let dead = false;
  const outbox = []; // messages for the hub before its port exists
  const listeners = new Set();
  // id → {stream, fn, presence (a presence subscription's Map id → member), epoch, seq (its
  // cursor: the last delivery's log and seq, where it resumes in a hub that replaces one)}
  const subs = new Map();
  let nextID = 1;
  // Calls not yet answered: id → {name, data (JSON text), key, deadline, sent, epoch, who,
  // session, wid, sentAt, resolve, reject, timer}. sent, epoch, who, session and wid are what
  // the hub said before the call's write (and sentAt when it first said so): a call the hub never said it sent never went out, so after
  // a lost hub it is made again as new.
  const calls = new Map();
  let nextCallID = 1;
  let defaultCallTimeout = 30000; // the bootstrap's callTimeoutMs, read at hello
  const MAX_CALL_TIMEOUT = 3600000;
  const encoder = new TextEncoder();

  // ---- containing embedder code and reporting misuse

  function report(what, e) {
    console.error('lifeline: ' + what + ' threw; Lifeline carries on:', e);
  }

  function misuse(call, value) {
    console.error('lifeline: ' + call, value);
  }

  // once makes a remover: the first call acts, later ones do nothing.
  function once(f) {
    let done = false;
    return function remove() {
      if (done) return;
      done = true;
      f();
    };
  }
  const noop = () => {};

  function short(s) {
    const b = encoder.encode(s);
    if (b.length <= 32) return s;
    let n = 32;
    while (n > 0 && (b[n] & 0xc0) === 0x80) n--;
    return new TextDecoder().decode(b.subarray(0, n)) + '…';
  }

  // ---- talking to the hub

  function send(m) {
    if (dead) return;
    if (port) port.postMessage(m);
    else outbox.push(m);
  }

  function setStatus(s) {
    status = s;
    for (const fn of Array.from(listeners)) {
      try { fn(s); } catch (e) { report('an onState listener', e); }
    }
    // dispatchEvent reports a throwing listener to the window's error handler and returns.
    window.dispatchEvent(new CustomEvent('lifeline:state', { detail: s }));
  }

  function onHubMessage(e) {
    heardAt = Date.now();
    const m = e.data;
    if (!m || typeof m !== 'object') return;
    switch (m.t) {
      case 'status': {
        const s = {
          state: m.state, slow: !!m.slow, attempt: m.attempt, failures: m.failures,
          nextAttempt: m.nextAttempt, error: m.error || '', kind: m.kind || '', reason: m.reason || '', retryAfter: m.retryAfter || 0,
          at: m.at || Date.now(), carrier: m.carrier || '', blocked: !!m.blocked,
        };
        remember(s);
        if (mode === 'shared' && !seen) {
          seen = true;
          boot.seen(); // a hub ran: the wasm is cached (see web/boot.js)
        }
        if (s.state === 'misconfigured') console.error('lifeline: connection settings are invalid: ' + s.error);
        else if (mode === 'shared' && s.error && s.error !== status.error) {
          // The shared hub logs to its worker's console, which the page's developer does not
          // see: each new failure is logged here too.
          console.warn('lifeline: the shared connection failed: attempt=' + s.attempt + ' failures=' + s.failures + ' err=' + s.error);
        }
        setStatus(s);
        break;
      }
      case 'delivery': {
        const sub = subs.get(m.id);
        if (!sub) return; // unsubscribed meanwhile
        if (m.reset) sub.epoch = typeof m.epoch === 'string' ? m.epoch : '';
        sub.seq = m.seq;
        const d = { stream: m.stream, seq: m.seq, reset: !!m.reset };
        try {
          if (m.reset) {
            d.epoch = m.epoch;
            if (m.baseline !== undefined) d.baseline = JSON.parse(m.baseline);
          } else {
            d.data = JSON.parse(m.data);
          }
        } catch (err) {
          console.error('lifeline: a delivery of "' + m.stream + '" is not JSON; dropped:', err);
          return;
        }
        try { sub.fn(d); } catch (err) { report('the lifeline.subscribe("' + short(sub.stream) + '") handler', err); }
        break;
      }
      case 'pong': // shared mode: the hub is alive (the ping's round, below)
        break;
      case 'alive': // shared mode: the hub's worker holds its lock (watchHub, below)
        watchHub(port, m.lock, m.instance);
        break;
      case 'presence': {
        const sub = subs.get(m.id);
        if (!sub || !sub.presence) return; // unsubscribed meanwhile
        const p = applyPresence(sub, m);
        if (!p) return;
        try { sub.fn(p); } catch (err) { report('the lifeline.presence("' + short(sub.stream) + '") handler', err); }
        break;
      }
      case 'renew': // the hub asks the page's renewer for a token (onRenew)
        askRenewer(m.id);
        break;
      case 'exited': // shared mode: the hub's program ended; every tab moves to a fresh hub
        hubFailed(m.error, m.next);
        break;
      case 'dropped': // shared mode: the hub took this tab for gone (it was silent too long)
        disconnect();
        startShared();
        break;
      case 'sent': {
        const c = calls.get(m.id);
        if (c) {
          if (!c.sent) c.sentAt = Date.now(); // its first send: a keyed re-send is bounded by the Host's dedup window from it
          c.sent = true;
          c.epoch = m.epoch || '';
          c.who = m.who || '';
          c.session = m.session || '';
          c.wid = m.wid || 0;
        }
        break;
      }
      case 'reply': {
        const c = calls.get(m.id);
        if (!c) return; // given up on meanwhile
        if (typeof m.kind === 'string') {
          // What this script cannot check itself (the protocol's rules for a name or a key,
          // which the Go side holds) is a wrong call all the same: reported like the others.
          if (m.kind === 'invalid') misuse('lifeline.call(' + JSON.stringify(short(c.name)) + ', …): refused:', m.error);
          settleCall(c, undefined, callError(m.kind, m.error, !!m.sent, m.code || '', m.retryAfter || 0));
          return;
        }
        let data;
        try { data = JSON.parse(m.data); } catch (err) {
          settleCall(c, undefined, callError('internal', 'the reply is not JSON: ' + err, true, '', 0));
          return;
        }
        settleCall(c, data);
        break;
      }
      case 'ended': {
        const sub = subs.get(m.id);
        if (!sub) return;
        subs.delete(m.id);
        try { sub.fn({ stream: sub.stream, error: m.error, denied: !!m.denied, reason: m.reason || '' }); } catch (err) {
          report('the lifeline.' + (sub.presence ? 'presence' : 'subscribe') + '("' + short(sub.stream) + '") handler', err);
        }
        break;
      }
    }
  }

  // applyPresence applies the hub's report m (what changed; everything at first) to the
  // members sub keeps, and returns what the page's fn is told, or null if m is not readable.
  function applyPresence(sub, m) {
    const read = (list) => {
      const out = [];
      for (const x of list || []) {
        let meta = null;
        if (x.meta) {
          try { meta = JSON.parse(x.meta); } catch (err) {
            console.error('lifeline: a presence member of "' + m.stream + '" has metadata that is not JSON; shown without:', err);
          }
        }
        out.push(Object.freeze({ id: x.id, count: x.count, meta }));
      }
      return out;
    };
    const joined = read(m.joined), updated = read(m.updated), left = (m.left || []).slice();
    if (m.first) sub.presence.clear();
    for (const id of left) sub.presence.delete(id);
    for (const x of joined) sub.presence.set(x.id, x);
    for (const x of updated) sub.presence.set(x.id, x);
    const members = Array.from(sub.presence.values()).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    return Object.freeze({
      stream: m.stream, members: Object.freeze(members), total: m.total || 0, limit: m.limit || 0,
      beyond: Math.max(0, (m.total || 0) - members.length), joined: Object.freeze(joined),
      updated: Object.freeze(updated), left: Object.freeze(left), reason: m.reason || '',
    });
  }

  // connect makes p the port to the hub: the hello goes first, then every subscription still
  // wanted, each at its cursor (a hub that replaced another resumes it there: the events
  // this tab missed, no baseline; a baseline only where neither the hub nor the Host still
  // holds them), then what waited.
  //
  // The calls not yet answered go to it too, by the rule of calls after a lost hub (this is
  // the first hub, or the last one crashed, dropped this tab, or was left on pagehide): a
  // call the old hub never said it sent is made as new (it never went out); a keyed one it
  // sent goes again, under the dedup epoch and identity it went out under (the new hub sends
  // it only to a Host of that store, as that identity); an unkeyed one it sent is never sent
  // twice: the new hub fences the session it went out on, and tells it not-run or
  // interrupted by what started there.
  function connect(p) {
    port = p;
    pingAt = 0;
    heardAt = 0;
    port.onmessage = onHubMessage;
    if (helloMsg) port.postMessage(helloMsg);
    if (renewer) port.postMessage({ t: 'renewer', on: true });
    for (const [id, sub] of subs) {
      const m = { t: 'subscribe', id, stream: sub.stream, presence: !!sub.presence };
      if (!sub.presence && sub.epoch) Object.assign(m, { epoch: sub.epoch, after: sub.seq });
      port.postMessage(m);
    }
    for (const c of Array.from(calls.values())) {
      if (c.sent && !c.key && !c.session) { // nothing names the session to fence: it cannot be learned
        settleCall(c, undefined, callError('timeout', 'the hub that sent it was lost before its reply; it may have run, or still run, at most once', true, '', 0));
        continue;
      }
      port.postMessage(callMessage(c));
    }
    for (const m of outbox.splice(0)) port.postMessage(m);
  }

  // ---- the network's carrier, remembered
  //
  // A network that did not carry a WebSocket is remembered for a day, so that the next visit
  // starts on the HTTP carrier at once instead of finding it out again; it is forgotten as
  // soon as a WebSocket works (PROTOCOL.md §11.4). localStorage is per origin, as the network
  // rule is per network seen from this origin.
  const CARRIER = 'lifeline:carrier';
  const REMEMBER_MS = 24 * 3600 * 1000;

  function remembered() {
    try {
      const v = JSON.parse(localStorage.getItem(CARRIER) || 'null');
      if (v && (v.kind === 'stream' || v.kind === 'poll') && typeof v.until === 'number' && v.until > Date.now()) return v.kind;
    } catch (_) { /* no storage, or not ours: start on a WebSocket */ }
    return '';
  }

  function remember(s) {
    if (s.state !== 'connected' || !s.carrier) return;
    try {
      if (s.carrier === 'websocket') localStorage.removeItem(CARRIER);
      else if (s.blocked) localStorage.setItem(CARRIER, JSON.stringify({ kind: s.carrier, until: Date.now() + REMEMBER_MS }));
    } catch (_) { /* no storage: found again next time */ }
  }

  // ---- renewals
  //
  // A Host whose credential expires renews the session before then (PROTOCOL.md §13.3), with
  // the page's cookies and, where the page's code hands one over, a token: the renewer set
  // with onRenew. Its Promise is bounded, so a renewer that never settles cannot hold the
  // renewal up past its expiry.
  let renewer = null;
  const RENEW_WAIT = 3500; // under the hub's 4 s for a tab's answer

  function askRenewer(id) {
    const answer = (m) => send(Object.assign({ t: 'token', id }, m));
    const fn = renewer;
    if (!fn) return answer({ failure: 'this page has no renewer' });
    let settled = false;
    const timer = setTimeout(() => {
      if (!settled) { settled = true; answer({ failure: 'the renewer did not settle within ' + RENEW_WAIT + ' ms' }); }
    }, RENEW_WAIT);
    const done = (m) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      answer(m);
    };
    let p;
    try { p = Promise.resolve(fn()); } catch (e) {
      report('the lifeline.onRenew renewer', e);
      return done({ failure: 'the renewer threw: ' + e });
    }
    p.then((token) => {
      if (typeof token !== 'string' || token === '') {
        misuse('lifeline.onRenew(fn): fn must resolve to a non-empty string token, got', token);
        done({ failure: 'the renewer gave no token' });
        return;
      }
      done({ token });
    }, (e) => done({ failure: 'the renewer failed: ' + e }));
  }

  // ---- calls

  function callError(kind, message, sent, code, retryAfter) {
    const e = new Error('lifeline: call ' + kind + (sent ? ' (sent)' : ' (not sent)') + ': ' + message);
    e.kind = kind;
    e.sent = sent;
    e.code = code || '';
    e.retryAfter = retryAfter || 0;
    return e;
  }

  function callMessage(c) {
    return {
      t: 'call', id: c.id, name: c.name, data: c.data, key: c.key,
      timeoutMs: Math.max(1, Math.ceil(c.deadline - Date.now())), epoch: c.sent ? c.epoch : '',
      who: c.sent ? c.who : '', sentAgoMs: c.sent ? Math.max(0, Date.now() - c.sentAt) : 0,
      session: c.sent && !c.key ? c.session : '', wid: c.sent && !c.key ? c.wid : 0,
    };
  }

  function settleCall(c, data, err) {
    if (!calls.delete(c.id)) return;
    clearTimeout(c.timer);
    // A then/catch that throws is the Promise's own business: it never reaches Lifeline.
    if (err) c.reject(err);
    else c.resolve(data);
  }

  // rejectCalls ends every call once the program has ended: those sent may have run, or still
  // run (nothing is left to fence their session), which is what timeout says of a sent call.
  function rejectCalls(why) {
    for (const c of Array.from(calls.values())) {
      if (c.sent) settleCall(c, undefined, callError('timeout', why + '; it may have run, or still run, at most once', true, '', 0));
      else settleCall(c, undefined, callError('failed', why, false, '', 0));
    }
  }

  function disconnect() {
    if (watching) {
      watching.abort();
      watching = null;
    }
    if (!port) return;
    port.onmessage = null;
    port = null;
  }

  // ---- a hub the browser ended
  //
  // WebKit ends a SharedWorker without a word when one of several windows closes (the
  // worker runs in the process of the window that made it, which WebKit caches when that
  // window closes and shuts down at the next close: https://bugs.webkit.org/show_bug.cgi?id=318873).
  // The worker holds a Web Lock for its life and says which once it does ({t:"alive"},
  // web/worker.js); the tab asks for that lock and is granted it only once the worker is
  // gone: within milliseconds, where the ping's round takes 10–20 s. The tab then rejoins
  // the hub of the same name, which the browser restarts (or which starts afresh), as every
  // tab of the ended one does, and resumes its streams at their cursors: nothing is lost
  // and nothing given twice; keyed calls in flight go again, by the rule of connect.
  //
  // WebKitGTK can also let go of the worker's lock while the worker lives on (seen once in
  // some 80 runs: a grant, and the rejoined hub was the same worker, its socket lost with it),
  // and can start another worker of the name meanwhile, which later tabs are given. Each
  // worker names itself in {t:"alive"}: a tab that finds the same worker after a grant joins
  // the name again, SAME_TRIES times SAME_WAIT apart, to meet the others wherever the browser
  // now sends a tab; still the same, that worker is the name's, and the tab stays, watching it
  // by the ping's round only (its lock says no more), and takes back the failure it counted.
  const SAME_WAIT = 500, SAME_TRIES = 2;
  let watching = null; // the AbortController of this tab's request for its hub's lock
  let endedInstance = ''; // the worker this tab took for ended last, until it hears from its successor
  let sameTries = 0; // how often this tab found endedInstance again since

  function watchHub(p, lock, instance) {
    if (watching || p !== port || typeof lock !== 'string' || !(navigator.locks && typeof navigator.locks.request === 'function')) return;
    if (endedInstance && instance === endedInstance) {
      clearTimeout(rejoinTimer); // it answered
      if (sameTries < SAME_TRIES) {
        sameTries++;
        rejoinTimer = setTimeout(() => {
          if (port !== p) return;
          leave(p);
          rejoin(0);
        }, SAME_WAIT);
        return;
      }
      endedInstance = '';
      sameTries = 0;
      failures.pop();
      console.info('lifeline: the shared hub\'s worker lives on after all (the browser let go of its lock); this tab watches it by its pings');
      return;
    }
    endedInstance = '';
    sameTries = 0;
    const ac = new AbortController();
    watching = ac;
    navigator.locks.request(lock, { signal: ac.signal }, () => {
      if (watching !== ac || port !== p) return; // this tab left that hub meanwhile
      watching = null;
      hubEnded(p, instance);
    }).catch(() => { /* aborted: this tab left that hub */ });
  }

  function hubEnded(p, instance) {
    console.warn('lifeline: the browser ended the shared hub\'s worker; this tab rejoins it and resumes its streams where they were');
    endedInstance = typeof instance === 'string' ? instance : '';
    leave(p);
    if (keepsFailing()) return;
    rejoin(0);
  }

  // leave lets go of the port p of a hub this tab is done with.
  function leave(p) {
    if (port === p) disconnect();
    try {
      p.postMessage({ t: 'bye' }); // a hub that is still there after all lets this tab go
      p.close();
    } catch (_) { /* a port of a worker that is gone */ }
  }

  // rejoin joins the hub of the same name again. WebKit restarts the ended worker itself, and
  // a tab that joins it while it restarts can be given a port that nothing ever reaches
  // (seen in WebKitGTK 2.50: twice in some 40 runs, the first tab to rejoin): a hub says
  // {t:"alive"} as soon as its worker runs and holds its lock (web/worker.js), so one that
  // says nothing in ALIVE_WAIT is joined again, and after REJOINS such tries this tab moves on
  // as from a silent hub. ALIVE_WAIT covers a worker that is starting: its thread is busy
  // with the wasm for a while (a second in Chromium on a busy machine), and a port it has not
  // answered yet is not a port nothing reaches; joining again costs no socket either way.
  const ALIVE_WAIT = 3000, REJOINS = 3;
  let rejoinTimer = 0;

  function rejoin(tries) {
    clearTimeout(rejoinTimer);
    startShared();
    const p = port;
    if (mode !== 'shared' || !p) return;
    rejoinTimer = setTimeout(() => {
      if (port !== p || heardAt) return;
      if (tries + 1 >= REJOINS) {
        leave(p);
        hubFailed('it did not answer after the browser restarted it (' + REJOINS + ' tries)', nextGeneration());
        return;
      }
      console.warn('lifeline: the restarted shared hub did not answer this tab in ' + ALIVE_WAIT + ' ms; joining it again');
      leave(p);
      rejoin(tries + 1);
    }, ALIVE_WAIT);
  }

  // ---- the API

  const api = {
    __client: true,
    state() { return status; },
    onState(fn) {
      if (typeof fn !== 'function') {
        misuse('lifeline.onState(fn): fn must be a function, got', fn);
        return noop;
      }
      const entry = (s) => fn(s);
      listeners.add(entry);
      try { fn(status); } catch (e) { report('an onState listener', e); }
      return once(() => listeners.delete(entry));
    },
    reconnectNow() { send({ t: 'command', command: 'reconnect' }); },
    onRenew(fn) {
      if (typeof fn !== 'function') {
        misuse('lifeline.onRenew(fn): fn must be a function returning a Promise of a token, got', fn);
        return noop;
      }
      renewer = fn;
      send({ t: 'renewer', on: true });
      return once(() => {
        if (renewer !== fn) return; // replaced meanwhile: the newer one stays
        renewer = null;
        send({ t: 'renewer', on: false });
      });
    },
    stop() { send({ t: 'command', command: 'stop' }); },
    start() { send({ t: 'command', command: 'start' }); },
    subscribe(stream, fn) { return follow('subscribe', stream, fn, false); },
    presence(stream, fn) { return follow('presence', stream, fn, true); },
    call(name, data, opts) {
      const refuse = (message, value) => {
        misuse('lifeline.call(' + (typeof name === 'string' ? JSON.stringify(short(name)) : 'name') + ', …): ' + message, value);
        return Promise.reject(callError('invalid', message, false, '', 0));
      };
      if (typeof name !== 'string' || name === '') return refuse('name must be a non-empty string, got', name);
      if (opts !== undefined && (opts === null || typeof opts !== 'object')) return refuse('options must be an object, got', opts);
      const o = opts || {};
      if (o.key !== undefined && (typeof o.key !== 'string' || o.key === '')) return refuse('options.key must be a non-empty string, got', o.key);
      if (o.timeoutMs !== undefined && !(typeof o.timeoutMs === 'number' && o.timeoutMs > 0 && o.timeoutMs <= MAX_CALL_TIMEOUT)) {
        return refuse('options.timeoutMs must be a number in (0, ' + MAX_CALL_TIMEOUT + '], got', o.timeoutMs);
      }
      let text;
      try { text = JSON.stringify(data === undefined ? null : data); } catch (e) {
        return refuse('data cannot be sent as JSON: ' + e, data);
      }
      if (text === undefined) return refuse('data cannot be sent as JSON (a function or a symbol?), got', data);
      if (dead) return Promise.reject(callError('failed', 'the Lifeline program has stopped; reload the page', false, '', 0));
      return new Promise((resolve, reject) => {
        const timeoutMs = o.timeoutMs || defaultCallTimeout;
        const c = { id: nextCallID++, name, data: text, key: o.key || '', deadline: Date.now() + timeoutMs, sent: false, epoch: '', who: '', session: '', wid: 0, sentAt: 0, resolve, reject };
        // The hub times the call; this timer, a little later, covers a hub that went silent.
        c.timer = setTimeout(() => {
          send({ t: 'cancel', id: c.id });
          settleCall(c, undefined, callError('timeout', 'no reply within ' + timeoutMs + ' ms', c.sent, '', 0));
        }, timeoutMs + 1000);
        calls.set(c.id, c);
        if (port) port.postMessage(callMessage(c)); // else connect sends it
      });
    },
  };
  globalThis.lifeline = api;

  // follow is subscribe and presence: a subscription of the hub's, for events or for who is
  // on the stream (following it makes this browser a member of it, as following its events does).
  function follow(call, stream, fn, presence) {
    if (typeof stream !== 'string') {
      misuse('lifeline.' + call + '(stream, fn): stream must be a string, got', stream);
      return noop;
    }
    const bytes = encoder.encode(stream).length;
    if (bytes < 1 || bytes > MAX_STREAM) {
      misuse('lifeline.' + call + '(' + JSON.stringify(short(stream)) + ', fn): the protocol cannot carry this stream name (1..' +
        MAX_STREAM + ' bytes of UTF-8, got ' + bytes + '):', stream);
      return noop;
    }
    if (typeof fn !== 'function') {
      misuse('lifeline.' + call + '(' + JSON.stringify(short(stream)) + ', fn): fn must be a function, got', fn);
      return noop;
    }
    if (dead) return noop;
    const id = nextID++;
    subs.set(id, { stream, fn, presence: presence ? new Map() : null });
    if (port) port.postMessage({ t: 'subscribe', id, stream, presence }); // else connect sends it
    return once(() => {
      if (subs.delete(id)) send({ t: 'unsubscribe', id });
    });
  }

  // ---- when the program ends

  function failed(why) {
    if (dead) return;
    dead = true;
    const error = 'the Lifeline program stopped: ' + why + '; reload the page to reconnect';
    console.error('lifeline: ' + error);
    const gone = () => console.error('lifeline: the Lifeline program has stopped; reload the page');
    api.reconnectNow = gone;
    api.stop = gone;
    api.start = gone;
    rejectCalls(error);
    setStatus({ state: 'failed', slow: false, attempt: status.attempt, failures: status.failures, nextAttempt: 0, error, kind: 'failed', reason: '', retryAfter: 0, at: Date.now(), carrier: status.carrier, blocked: status.blocked });
  }

  // ---- the browser's events

  // The network and the page's lifecycle. Whenever the world may have changed while the page
  // was not looking (shown again, resumed after a freeze, a new network, a machine that
  // slept), the hub probes its link: a dead one is found in seconds, not at the watchdog.
  const life = (event) => send({ t: 'life', event });
  //
  // Offline, the hub dials nothing until the browser says it is online again. A browser that
  // fires no online/offline events would never say so: there the page takes itself as online
  // whatever navigator.onLine says (a wrong "offline" would hold it off the Host for good; a
  // wrong "online" costs only the ladder's retries), and says so once.
  const onlineEvents = 'ononline' in window && 'onoffline' in window;
  const isOnline = () => !onlineEvents || navigator.onLine !== false;
  if (onlineEvents) {
    window.addEventListener('online', () => send({ t: 'online', online: true }));
    window.addEventListener('offline', () => send({ t: 'online', online: false }));
  }
  // On hide the page lets go, so it can enter the back-forward cache: in-page it stops its
  // connection; shared, it leaves the hub (the other tabs keep it). Shown again, it starts a
  // fresh sequence, or rejoins the hub (its streams resume at their cursors).
  window.addEventListener('pagehide', () => {
    if (mode === 'shared') {
      send({ t: 'bye' });
      disconnect();
    } else {
      // The stop reaches the hub a moment later; a browser that closes the page's sockets
      // itself meanwhile (Firefox, with 1001) must not be taken for the Host: the hub reads
      // this before it blames anyone (gateway/carrier_js.go).
      globalThis.__lifelinePageLeaving = true;
      send({ t: 'command', command: 'stop' });
    }
  });
  window.addEventListener('pageshow', (e) => {
    globalThis.__lifelinePageLeaving = false;
    if (!e.persisted) life('pageshow');
    else if (mode === 'shared') startShared();
    else send({ t: 'command', command: 'start' });
  });
  document.addEventListener('visibilitychange', () => life(document.visibilityState === 'visible' ? 'visible' : 'hidden'));
  document.addEventListener('freeze', () => life('freeze'));
  document.addEventListener('resume', () => life('resume'));
  if (navigator.connection && navigator.connection.addEventListener) {
    navigator.connection.addEventListener('change', () => life('network'));
  }
  // A timer that fires far later than due means the machine slept (or the page was frozen).
  // Only while visible: a hidden tab's timers are throttled on purpose, and it adds no dials.
  const TICK = 5000, LATE = 10000;
  let lastTick = Date.now();
  setInterval(() => {
    const now = Date.now();
    if (now - lastTick > TICK + LATE && document.visibilityState === 'visible') life('late');
    lastTick = now;
  }, TICK);
  // Shared mode: a tab that closes without a word (a crash) is dropped by the hub once it
  // has been silent long enough (wasm/scope.go); a live one says so every 10 s, and the hub
  // answers at once (pong). A hub that has answered this tab before and leaves a ping
  // unanswered for a whole round is gone without a word (a program that hangs; a worker the
  // browser ended where there are no Web Locks to say so, watchHub). The tab moves to a fresh
  // hub rather than show a connection nobody serves. Not before the hub's first word (a worker
  // still loading its wasm cannot answer), and not on a round that fired late (a frozen or
  // throttled tab: the answer may be queued behind the timer).
  const PING = 10000;
  let pingAt = 0; // when the unanswered ping went, 0 for none
  let heardAt = 0; // when this port last heard from its hub, 0 for not yet
  let lastRound = Date.now();
  setInterval(() => {
    const now = Date.now();
    const onTime = now - lastRound < PING * 1.5;
    lastRound = now;
    if (mode !== 'shared' || !port) return;
    if (pingAt && heardAt && heardAt < pingAt && onTime) {
      hubFailed('it stopped answering (no reply to a ping in ' + Math.round((now - pingAt) / 1000) + ' s)', nextGeneration());
      return;
    }
    if (!pingAt || heardAt >= pingAt || !onTime) pingAt = now;
    port.postMessage({ t: 'ping' });
  }, PING);

  // ---- start

  let helloMsg = null;
  let mode = 'in-page';

  function hello() {
    boot = globalThis.__lifelineBoot();
    if (boot.bootstrap === null) {
      dead = true;
      const error = 'lifeline: no #lifeline-bootstrap element in the page (is the Host plugin installed?)';
      console.error(error);
      setStatus({ state: 'misconfigured', slow: false, attempt: 0, failures: 0, nextAttempt: 0, error, kind: 'misconfigured', reason: '', retryAfter: 0, at: Date.now(), carrier: '', blocked: false });
      return false;
    }
    if (boot.optionsError) misuse('lifelineOptions cannot be read as JSON; ignored:', boot.optionsError);
    if (!onlineEvents) console.info('lifeline: this browser fires no online/offline events; the page takes itself as online and retries on its ladder while the network is down');
    helloMsg = { t: 'hello', bootstrap: boot.bootstrap, options: boot.options, href: location.href, online: isOnline(), carrier: remembered() };
    try {
      const ms = JSON.parse(boot.bootstrap).callTimeoutMs;
      if (typeof ms === 'number' && ms > 0 && ms <= MAX_CALL_TIMEOUT) defaultCallTimeout = ms;
    } catch (_) { /* the hub reads the bootstrap strictly and says what is wrong with it */ }
    return true;
  }

  function startInPage() {
    mode = 'in-page';
    const channel = new MessageChannel();
    connect(channel.port1);
    // The boot started the compile and the runner's load (at once, or when this script began):
    // the bytes stream into the compiler as they arrive, not after run.js has come and gone.
    const started = boot.take() || {};
    const module = started.module || boot.compile();
    (started.runner || boot.loadRunner()).then(() => {
      globalThis.__lifelineConnect(channel.port2);
      globalThis.__lifelineRun({ module, wasm: boot.wasm, onExit: failed });
    }, (err) => failed(err.message));
  }

  // The shared hub's generation: a hub that ended names the fresh one (boot.hubName).
  let generation = '';
  // nextGeneration names the successor of a hub that ended without naming one, alike in
  // every tab it served, so that they meet in one fresh hub.
  const nextGeneration = () => (generation ? generation + '.' : '') + 'silent';
  const failures = []; // when shared hubs ended, for the fallback to in-page
  let saidNoLinger = false; // the console has been told the hub ends with its last tab

  function startShared() {
    mode = 'shared';
    let worker;
    const started = generation === '' ? boot.take() : null;
    try {
      if (started && started.error) throw started.error;
      worker = started && started.worker ? started.worker : boot.newWorker(generation);
    } catch (e) {
      console.warn('lifeline: no shared hub (' + e + '); this page keeps its own connection');
      startInPage();
      return;
    }
    worker.onerror = (e) => {
      if (port !== worker.port) return;
      disconnect();
      hubFailed('the shared worker failed to start: ' + (e.message || 'error'), '');
    };
    connect(worker.port);
    if (started && started.failed) worker.onerror(started.failed);
    if (boot.lingers === false && !saidNoLinger) {
      saidNoLinger = true;
      console.info('lifeline: this browser ends the shared hub with its last tab (no SharedWorker extendedLifetime); a reload of the only tab opens a new connection');
    }
  }

  // hubFailed moves this tab to a fresh shared hub (the one the ended hub named, so that
  // every tab meets in it), or to in-page at the third failure within a minute.
  function hubFailed(why, next) {
    console.error('lifeline: the shared hub stopped: ' + why);
    disconnect();
    if (keepsFailing()) return;
    generation = next || Math.random().toString(36).slice(2, 10);
    startShared();
  }

  // keepsFailing counts a shared hub that ended, and at the third within a minute moves this
  // page to in-page (and says so): a hub that cannot stay up must not be started forever.
  function keepsFailing() {
    const now = Date.now();
    failures.push(now);
    while (failures.length && failures[0] < now - 60000) failures.shift();
    if (failures.length <= 2) return false;
    console.warn('lifeline: the shared hub keeps failing; this page keeps its own connection');
    startInPage();
    return true;
  }

  function start() {
    if (boot.mode === 'shared') {
      startShared();
      return;
    }
    // A browser without SharedWorker (Chrome on Android, some embedded engines) is no other
    // product: the page keeps a connection of its own, the same API and the same behaviour,
    // and says so once, so that a developer who expected one connection per browser knows why.
    const asked = globalThis.lifelineOptions && typeof globalThis.lifelineOptions === 'object' && globalThis.lifelineOptions.mode === 'in-page';
    if (!asked && boot.worker && typeof SharedWorker !== 'function') {
      console.info('lifeline: this browser has no SharedWorker; this page keeps a connection of its own (in-page mode)');
    }
    startInPage();
  }

  // lifeline:ready fires once the document has parsed, so that every page script has had
  // the chance to listen for it; globalThis.lifeline is usable before.
  function ready() {
    const fire = () => window.dispatchEvent(new CustomEvent('lifeline:ready'));
    if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', fire, { once: true });
    else queueMicrotask(fire);
  }

  function begin() {
    if (hello()) start();
    ready();
  }

  // The bootstrap sits in the head, before this script when the Host injects both; a page
  // that loads this script earlier than its bootstrap is read once it has parsed.
  if (document.getElementById('lifeline-bootstrap') || document.readyState !== 'loading') begin();
  else document.addEventListener('DOMContentLoaded', begin, { once: true });
})();
