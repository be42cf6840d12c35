// The Settings indicator: the DOM contract that tests and embedders rely on (docs/embedding.md, "The DOM contract").
//
//   #connection-status[data-state]  connecting | slow | connected | reconnecting | offline |
//                                   stopped | misconfigured | unauthorized | failed;
//                                   data-seconds while reconnecting; data-carrier: websocket,
//                                   stream or poll, what carried the last connection (none
//                                   before the first)
//   #connection-label               the state label, an aria-live="polite" region: a screen
//                                   reader announces each change of state, once
//   #connection-countdown           "in 4 s" while reconnecting, a role="timer" (implicitly
//                                   aria-live="off"): read on demand, never announced per tick
//   #connection-detail              a short sentence saying what failed and what happens next
//                                   (polite, so the reason follows the state); the raw error in
//                                   its title; for misconfigured the invalid fields and values,
//                                   for failed the cause, as code; for unauthorized the Host
//                                   app's own words first (why it refused or ended the access)
//   #reconnect-now                  enabled whenever the state is not connected; once failed
//                                   (the page's program ended) it reloads the page
//
// It listens to the `lifeline:state` CustomEvent the wasm dispatches on window, and to nothing
// else, so it works the same before the wasm has loaded (connecting) and after. It depends on
// no other file: the Host plugin can serve it on pages it did not write.
(function () {
  'use strict';

  // Each kind of failure has a cause, and what the page does about it while it retries. The
  // sentence is cause + retry while connecting or reconnecting, and the cause alone otherwise
  // (stopped: nothing is being retried). Kinds that are states of their own have one sentence.
  const TEXT = {
    en: {
      states: {
        connected: 'Connected',
        connecting: 'Connecting…',
        slow: 'Host is slow to respond',
        reconnecting: 'Reconnecting',
        offline: 'Offline',
        stopped: 'Stopped',
        misconfigured: 'Connection settings are invalid',
        unauthorized: 'Sign-in required',
        failed: 'Connection stopped working: reload the page',
      },
      reconnectNow: 'Reconnect now',
      inSeconds: (s) => `in ${s} s`,
      title: 'Connection',
      causes: {
        timeout: () => ['The Host did not answer in time', 'retrying'],
        refused: () => ['The Host cannot be reached', 'retrying'],
        busy: (s) => (s > 0
          ? [`The Host is busy and asked to wait ${s} s`, 'retrying after that']
          : ['The Host is busy', 'retrying shortly']),
        protocol: () => ['The Host’s reply was not understood', 'retrying'],
        closed: () => ['The connection was lost', 'reconnecting'],
        silent: () => ['The connection stopped responding', 'reconnecting'],
        other: () => ['The connection failed', 'retrying'],
      },
      join: (cause, retry) => (retry ? `${cause}; ${retry}.` : `${cause}.`),
      because: (reason, sentence) => (/[.!?…]$/.test(reason) ? `${reason} ${sentence}` : `${reason}. ${sentence}`),
      blocked: 'This network does not carry WebSockets; connected over HTTP instead.',
      sentences: {
        offline: 'This device is offline; the page reconnects when the network is back.',
        unauthorized: 'The Host needs you to sign in; after signing in, choose Reconnect now.',
        misconfigured: 'This site’s connection settings need fixing; the page cannot connect until then.',
        failed: 'The page’s connection program stopped; reloading the page starts it again.',
      },
    },
    zh: {
      states: {
        connected: '已连接',
        connecting: '正在连接…',
        slow: '主机响应缓慢',
        reconnecting: '自动重连中',
        offline: '离线',
        stopped: '已停止',
        misconfigured: '连接设置无效',
        unauthorized: '需要登录',
        failed: '连接已失效，请刷新页面',
      },
      reconnectNow: '立即重连',
      inSeconds: (s) => `${s} 秒后`,
      title: '连接',
      causes: {
        timeout: () => ['主机未及时响应', '正在重试'],
        refused: () => ['无法连接到主机', '正在重试'],
        busy: (s) => (s > 0 ? [`主机繁忙，要求等待 ${s} 秒`, '之后重试'] : ['主机繁忙', '稍后重试']),
        protocol: () => ['无法识别主机的应答', '正在重试'],
        closed: () => ['连接已断开', '正在重连'],
        silent: () => ['连接无响应', '正在重连'],
        other: () => ['连接失败', '正在重试'],
      },
      join: (cause, retry) => (retry ? `${cause}，${retry}。` : `${cause}。`),
      because: (reason, sentence) => (/[。！？.!?…]$/.test(reason) ? `${reason}${sentence}` : `${reason}。${sentence}`),
      blocked: '当前网络不支持 WebSocket，已改用 HTTP 连接。',
      sentences: {
        offline: '设备已离线，网络恢复后将自动重连。',
        unauthorized: '主机要求登录；登录后请点击“立即重连”。',
        misconfigured: '本网站的连接设置有误，修正之前页面无法连接。',
        failed: '页面的连接程序已停止，刷新页面即可重新启动。',
      },
    },
  };

  // ?lang= first, then <html lang>, then the browser.
  function pickLanguage() {
    const candidates = [
      new URLSearchParams(location.search).get('lang'),
      document.documentElement.getAttribute('lang'),
      ...(navigator.languages || [navigator.language]),
    ];
    for (const c of candidates) {
      if (!c) continue;
      const base = c.toLowerCase().split(/[-_]/)[0];
      if (TEXT[base]) return base;
    }
    return 'en';
  }

  const lang = pickLanguage();
  const L = TEXT[lang];
  let current = { state: 'connecting', slow: false, nextAttempt: 0, error: '' };
  let tick = null;

  function dataState(s) {
    if (s.state === 'connecting' && s.slow) return 'slow';
    if (s.state === 'idle') return 'connecting';
    return s.state;
  }

  // States that are a kind of failure of their own.
  const STATE_KINDS = new Set(['offline', 'misconfigured', 'unauthorized', 'failed']);

  // The kind of a status that carries none (from a wasm that predates the field), read from the
  // sentinel that begins its error (gateway/gateway.go, controller.ErrDeadline). The overload
  // is tested before "session closed", which it wraps.
  const ERROR_KINDS = [
    [/handshake deadline exceeded/, 'timeout'],
    [/host overloaded/, 'busy'],
    [/host broke the protocol/, 'protocol'],
    [/link silent/, 'silent'],
    [/unauthori[sz]ed|sign-in required/i, 'unauthorized'],
    [/dial failed/, 'refused'],
    [/session closed/, 'closed'],
  ];

  function kindOf(s) {
    if (typeof s.kind === 'string') return s.kind;
    if (STATE_KINDS.has(s.state)) return s.state;
    const e = s.error || '';
    if (!e) return '';
    const hit = ERROR_KINDS.find(([re]) => re.test(e));
    return hit ? hit[1] : 'other';
  }

  // retryAfterMs is what the Host asked for: the status's retryAfter, else the "(retry after
  // 4s)" that controller.RetryAfterError appends, a Go duration.
  function retryAfterMs(s) {
    if (typeof s.retryAfter === 'number') return s.retryAfter;
    const m = /\(retry after ([0-9.a-zµ]+)\)/.exec(s.error || '');
    return m ? goDurationMs(m[1]) : 0;
  }

  const UNIT_MS = { h: 3600e3, m: 60e3, s: 1e3, ms: 1, us: 1e-3, 'µs': 1e-3, ns: 1e-6 };

  function goDurationMs(text) {
    const re = /(\d+(?:\.\d+)?)(ms|us|µs|ns|h|m|s)/g;
    let ms = 0;
    let read = '';
    for (let m = re.exec(text); m; m = re.exec(text)) {
      ms += Number(m[1]) * UNIT_MS[m[2]];
      read += m[0];
    }
    return read === text ? ms : 0;
  }

  // invalidFields names each field and value of a config error ("page: recovery.deadlineMs:
  // must be …, got 0; …") as "recovery.deadlineMs, got 0"; it is the whole error when no field
  // is named (a wasm that could not load, a page without its bootstrap).
  function invalidFields(error) {
    const items = [];
    for (const part of error.split('; ')) {
      const rule = part.replace(/^(?:(?:page|gateway|controller|hostplugin|lifeline): )+/, '');
      const m = /^([A-Za-z_$][\w$]*(?:\.[\w$]+|\[\d+\])*): .*?(?:, got (.*))?$/.exec(rule);
      if (m) items.push(m[2] === undefined ? m[1] : `${m[1]}, got ${m[2]}`);
    }
    return items.length ? items.join('; ') : error;
  }

  // appWords is the Host application's own part of a reason: the plugin's words before it
  // ("hostplugin: unauthenticated: ", which an app's error wraps) are for developers.
  function appWords(reason) {
    return (reason || '').replace(/^hostplugin: (?:unauthenticated|forbidden)(?:: |$)/, '').trim();
  }

  // describe says what failed, for a person: the sentence, and the technical text the detail
  // shows as code (only where a developer must act: the settings, a program that ended).
  function describe(s, state) {
    const kind = kindOf(s);
    const error = s.error || '';
    if (state === 'connected' && s.blocked) return { sentence: L.blocked, code: '' };
    if (!kind) return { sentence: '', code: '' };
    if (L.sentences[kind]) {
      let code = '';
      if (kind === 'misconfigured' && error) code = invalidFields(error);
      if (kind === 'failed') code = error;
      const why = kind === 'unauthorized' ? appWords(s.reason) : '';
      return { sentence: why ? L.because(why, L.sentences[kind]) : L.sentences[kind], code };
    }
    const cause = (L.causes[kind] || L.causes.other)(Math.ceil(retryAfterMs(s) / 1000));
    const retrying = state === 'connecting' || state === 'slow' || state === 'reconnecting';
    return { sentence: L.join(cause[0], retrying ? cause[1] : ''), code: '' };
  }

  function setText(el, text) {
    if (el.textContent !== text) el.textContent = text;
  }

  // The default indicator, for a page that has none of its own: a small box in the bottom
  // right corner, above the page. <html data-lifeline-indicator="off"> opts out (the page then
  // shows the state itself, from lifeline:state); a page with its own #connection-status keeps
  // it and its styles.
  const DEFAULT_STYLE = `
#connection-status[data-lifeline-default] { position: fixed; right: 1rem; bottom: 1rem; z-index: 2147483000;
  max-width: min(24rem, calc(100vw - 2rem)); display: flex; flex-wrap: wrap; align-items: center; gap: .3rem .6rem;
  padding: .5rem .8rem; border-radius: 8px; background: #fff; color: #1b1f24; border: 1px solid #d0d7de;
  box-shadow: 0 2px 8px rgba(0,0,0,.12); font: 13px/1.4 system-ui, sans-serif; }
#connection-status[data-lifeline-default]::before { content: ""; width: .7rem; height: .7rem; border-radius: 50%; background: #8c959f; }
#connection-status[data-lifeline-default][data-state="connected"]::before { background: #1a7f37; }
#connection-status[data-lifeline-default][data-state="slow"]::before { background: #bf8700; }
#connection-status[data-lifeline-default][data-state="reconnecting"]::before,
#connection-status[data-lifeline-default][data-state="offline"]::before { background: #cf222e; }
#connection-status[data-lifeline-default][data-state="unauthorized"]::before { background: #0969da; }
#connection-status[data-lifeline-default][data-state="misconfigured"]::before,
#connection-status[data-lifeline-default][data-state="failed"]::before { background: #8250df; }
#connection-status[data-lifeline-default][data-state="connected"]:not([data-carrier="stream"]):not([data-carrier="poll"]) #connection-detail { display: none; }
#connection-status[data-lifeline-default] #connection-label { font-weight: 600; }
#connection-status[data-lifeline-default] #connection-detail { width: 100%; color: #57606a; }
#connection-status[data-lifeline-default] #connection-detail:empty { display: none; }
#connection-status[data-lifeline-default] #reconnect-now { font: inherit; padding: .1rem .6rem; border-radius: 6px;
  border: 1px solid #8c959f; background: #f6f8fa; color: inherit; cursor: pointer; }
#connection-status[data-lifeline-default] #reconnect-now:disabled { display: none; }`;

  function createDefaultIndicator() {
    if (document.documentElement.dataset.lifelineIndicator === 'off' || !document.body) return null;
    const style = document.createElement('style');
    style.textContent = DEFAULT_STYLE;
    document.head.appendChild(style);
    const box = document.createElement('div');
    box.id = 'connection-status';
    box.setAttribute('data-lifeline-default', '');
    box.setAttribute('role', 'status');
    box.dataset.state = 'connecting';
    document.body.appendChild(box);
    return box;
  }

  // ensureIndicator returns the indicator's parts, adding the ones an older markup lacks and
  // the attributes the contract promises; create makes the default indicator when the page
  // has none (only once the document has parsed: the page's own may come later in it).
  function ensureIndicator(create) {
    const box = document.getElementById('connection-status') || (create ? createDefaultIndicator() : null);
    if (!box) return null;
    const part = (id, tag, after) => {
      let el = document.getElementById(id);
      if (!el) {
        el = document.createElement(tag);
        el.id = id;
        if (after) after.after(el);
        else box.append(el);
      }
      return el;
    };
    const label = part('connection-label', 'span', null);
    const countdown = part('connection-countdown', 'span', label);
    const button = part('reconnect-now', 'button', countdown);
    const detail = part('connection-detail', 'span', button);
    if (button.type !== 'button') button.type = 'button';
    for (const [el, name, value] of [
      [label, 'aria-live', 'polite'], [label, 'aria-atomic', 'true'],
      [countdown, 'role', 'timer'],
      [detail, 'aria-live', 'polite'], [detail, 'aria-atomic', 'true'],
    ]) {
      if (el.getAttribute(name) !== value) el.setAttribute(name, value);
    }
    return { box, label, countdown, button, detail };
  }

  // What each detail element shows, so that a render that changes nothing touches nothing.
  const shownDetail = new WeakMap();

  function renderDetail(detail, error, { sentence, code }) {
    const key = sentence + '\n' + code;
    // One replacement per change, so the live region announces each sentence once.
    if (shownDetail.get(detail) !== key) {
      shownDetail.set(detail, key);
      const nodes = [];
      if (sentence) {
        const s = document.createElement('span');
        s.className = 'connection-sentence';
        s.textContent = sentence;
        nodes.push(s);
      }
      if (code) {
        // Errors and setting names are the developers' English, whatever the page's language.
        const c = document.createElement('code');
        c.className = 'connection-code';
        c.lang = 'en';
        c.textContent = code;
        nodes.push(c);
      }
      detail.replaceChildren(...nodes);
    }
    if (error) {
      if (detail.title !== error) detail.title = error;
    } else if (detail.hasAttribute('title')) {
      detail.removeAttribute('title');
    }
  }

  function render() {
    const parts = ensureIndicator();
    if (!parts) return;
    const { box, label, countdown, button, detail } = parts;
    const state = dataState(current);
    if (box.dataset.state !== state) box.dataset.state = state;
    if (current.carrier && box.dataset.carrier !== current.carrier) box.dataset.carrier = current.carrier;
    const tag = lang === 'zh' ? 'zh-CN' : 'en';
    if (box.getAttribute('lang') !== tag) box.setAttribute('lang', tag);
    setText(label, L.states[state] || state);

    clearTimeout(tick);
    tick = null;
    if (state === 'reconnecting' && current.nextAttempt > 0) {
      const left = current.nextAttempt - Date.now();
      const secs = Math.max(0, Math.ceil(left / 1000));
      box.dataset.seconds = String(secs);
      setText(countdown, L.inSeconds(secs));
      countdown.hidden = false;
      // The next tick falls just after the shown number goes stale, so it reaches 0 when the
      // attempt is due rather than up to a second late.
      if (left > 0) tick = setTimeout(render, (left % 1000 || 1000) + 20);
    } else {
      delete box.dataset.seconds;
      setText(countdown, '');
      countdown.hidden = true;
    }

    renderDetail(detail, current.error || '', describe(current, state));
    setText(button, L.reconnectNow);
    button.disabled = state === 'connected';
  }

  window.addEventListener('lifeline:state', (e) => {
    current = Object.assign({ slow: false, nextAttempt: 0, error: '' }, e.detail);
    render();
  });

  function init() {
    const title = document.getElementById('connection-title');
    if (title) title.textContent = L.title;
    const parts = ensureIndicator(true);
    if (parts) {
      parts.button.addEventListener('click', () => {
        if (dataState(current) === 'failed') location.reload();
        else if (globalThis.lifeline) globalThis.lifeline.reconnectNow();
      });
    }
    render();
  }

  if (document.readyState === 'loading') {
    document.addEventListener('DOMContentLoaded', init);
  } else {
    init();
  }
})();
// Lifeline's boot: it starts loading the hub as early as the page allows. hostplugin injects it
// inline at the end of the head, right after the bootstrap element, so it runs as soon as the
// page is parsed that far, before the tab script (web/lifeline.js) has arrived: in shared mode it
// starts the SharedWorker (web/worker.js, which fetches the wasm at its first line); in-page it
// starts the wasm's streaming compile and the runner's load. Nothing of the page's waits for it.
//
// The tab script begins with this same code and boots from it when the page ran no inline boot
// (a Content-Security-Policy that allows neither inline scripts nor this script's hash, or a page
// that loads the tab script itself): the hub then starts when the tab script runs, as early as
// the tab script alone can start it. Either way globalThis.__lifelineBoot() returns the one boot:
//   bootstrap, options      the bootstrap element's text (null without one) and the page's
//                           lifelineOptions as JSON ('' without; optionsError if it is not JSON)
//   mode                    'shared' or 'in-page'
//   wasm, run, worker       the client's URLs, from the script tag's data-wasm, data-run,
//                           data-worker
//   hubName(generation)     the shared hub's name: one hub per config (FNV-1a of the bootstrap
//                           and the options) and generation, which a hub that ended names for
//                           the fresh one ('' at first)
//   newWorker(generation)   a SharedWorker for that hub (throws where the browser refuses one)
//   compile()               the wasm's streaming compile, or undefined where the browser cannot
//                           stream (the runner then instantiates from the URL)
//   loadRunner()            a Promise that the runner (Go's wasm_exec.js and web/runner.js) is
//                           loaded
//   seen()                  notes that a shared hub ran here with this wasm: it is cached, and
//                           later boots do not fetch it ahead of the worker
//   take()                  what the boot started, once: {worker, failed} (failed: the worker's
//                           error event, if it came) or {error} in shared mode, {module,
//                           runner} in-page; null afterwards, or without a bootstrap
//   events(mode)            the URL the hub dials first: the events endpoint (lifelineOptions'
//                           or the bootstrap's, resolved against the page) as ws: or wss:, with
//                           the page's mode ('' if it cannot say)
//
// The Host's socket opens here too, while the wasm loads (openEarly): the hub's first dial
// takes it (gateway/carrier_js.go, takeEarly), so that on a first visit over a slow link the
// handshake's round trips overlap the download instead of following it. In-page the boot opens
// it; a shared hub's worker opens its own at the start (web/worker.js, the same openEarly).
(function () {
  'use strict';

  if (globalThis.__lifelineBoot) return; // the inline boot ran: the tab script keeps its boot
  const SEEN = 'lifeline:wasm'; // localStorage: the wasm a shared hub last ran here (see warm)
  const data = (document.currentScript && document.currentScript.dataset) || {};
  let boot = null;
  globalThis.__lifelineBoot = () => boot || (boot = start());
  // Inline, the bootstrap is in the page already; a tab script that runs before it boots once
  // the page is parsed.
  if (document.getElementById('lifeline-bootstrap')) globalThis.__lifelineBoot();

  function start() {
    const el = document.getElementById('lifeline-bootstrap');
    const b = {
      bootstrap: el ? el.textContent : null, options: '', optionsError: null,
      wasm: data.wasm || '/lifeline.wasm', run: data.run || '', worker: data.worker || '',
    };
    const o = globalThis.lifelineOptions;
    if (o !== undefined) {
      try { b.options = JSON.stringify(o); } catch (e) { b.optionsError = e; }
    }
    const want = o && typeof o === 'object' ? o.mode : undefined;
    // The hub checks the option's value and names a bad one.
    b.mode = want === 'in-page' || !b.worker || typeof SharedWorker !== 'function' ? 'in-page' : 'shared';

    // gateway/gateway.go's normalise and dialURL make the same of it; where they do not, the
    // hub leaves the early socket and opens its own.
    b.events = (mode) => {
      try {
        let endpoint = o && typeof o === 'object' && typeof o.endpoint === 'string' ? o.endpoint : '';
        if (!endpoint) endpoint = JSON.parse(b.bootstrap).endpoint || '/_lifeline/events';
        const u = new URL(endpoint, location.href);
        if (u.protocol === 'http:' || u.protocol === 'ws:') u.protocol = 'ws:';
        else if (u.protocol === 'https:' || u.protocol === 'wss:') u.protocol = 'wss:';
        else return '';
        u.hash = '';
        return u.href + (u.search ? '&' : '?') + 'lifeline-mode=' + encodeURIComponent(mode);
      } catch (_) { return ''; } // the hub says what is wrong with the config
    };
    // One hub per config and per events URL: a relative endpoint names another Host from
    // another page, and the worker's URL carries it.
    b.hubName = (generation) => {
      let h = 0x811c9dc5;
      for (const c of b.bootstrap + '\u0000' + b.options + '\u0000' + b.events('shared')) h = Math.imul(h ^ c.codePointAt(0), 0x01000193) >>> 0;
      return 'lifeline:' + h.toString(16) + (generation ? ':' + generation : '');
    };
    b.newWorker = (generation) => {
      const url = new URL(b.worker, location.href);
      url.searchParams.set('run', new URL(b.run, location.href).href);
      url.searchParams.set('wasm', new URL(b.wasm, location.href).href);
      url.searchParams.set('events', b.events('shared'));
      // extendedLifetime keeps the hub, and its socket, through a reload of the only tab. An
      // engine reads the options it knows (WebIDL reads each member of the dictionary), so the
      // getter runs only where the engine has it; b.lingers tells the tab script (Firefox and
      // WebKit end a hub with its last tab: a reload there opens a new connection).
      let lingers = false;
      const w = new SharedWorker(url.href, { name: b.hubName(generation), get extendedLifetime() { lingers = true; return true; } });
      b.lingers = lingers;
      return w;
    };
    // A compile's failure is the runner's to report, when it awaits the module; until then it
    // is not an unhandled rejection.
    b.compile = () => {
      if (typeof WebAssembly !== 'object' || typeof WebAssembly.compileStreaming !== 'function') return undefined;
      const m = WebAssembly.compileStreaming(fetch(b.wasm));
      m.catch(() => {});
      return m;
    };
    let runner = null;
    b.loadRunner = () => runner || (runner = new Promise((resolve, reject) => {
      if (globalThis.__lifelineRun) return resolve();
      if (!b.run) return reject(new Error('no runner in the page (load runner.js, or set data-run)'));
      const s = document.createElement('script');
      s.src = b.run;
      s.onload = () => resolve();
      s.onerror = () => reject(new Error('its runner ' + b.run + ' could not be loaded'));
      document.head.appendChild(s);
    }));

    let started = null;
    if (b.bootstrap !== null) {
      if (b.mode === 'shared') {
        try {
          const w = b.newWorker('');
          started = { worker: w };
          // A worker that fails to start may say so before the tab script has come.
          w.onerror = (e) => { started.failed = e; };
          warm();
        } catch (e) { started = { error: e }; }
      } else {
        openEarly(b.events('in-page'));
        started = { module: b.compile(), runner: b.loadRunner() };
        started.runner.catch(() => {}); // the tab script reports it
      }
    }
    // The worker fetches the wasm at its first line, but its script must come first: on a first
    // visit the page starts the bytes moving now, and the worker's fetch joins this one in the
    // HTTP cache; the page's copy is dropped as it comes. Not once a hub has run here with this
    // wasm (the tab script notes it, seen): it is cached, and a tab of a running hub needs none.
    // Not in Apple's WebKit (Safari, every browser on iOS, WebKitGTK): its HTTP cache joins no
    // request to one in flight, so the worker would fetch the wasm a second time beside this
    // copy, the two sharing the link (bench/RESULTS.md, engines: WebKit's shared first visit
    // over 4G).
    function warm() {
      let seen = null;
      try { seen = localStorage.getItem(SEEN); } catch (_) { /* no storage: warm */ }
      if (seen === b.wasm || navigator.vendor === 'Apple Computer, Inc.') return;
      if (typeof fetch !== 'function' || typeof WritableStream !== 'function') return;
      fetch(b.wasm).then((r) => r.body && r.body.pipeTo(new WritableStream()).catch(() => {}), () => {});
    }
    // openEarly BEGIN: web/boot.js and web/worker.js have this same function (hostplugin/internal/client's
    // tests hold them alike)
    // openEarly opens the Host's socket at url and keeps every event of it, in order, for the
    // hub's first dial, which takes it with globalThis.__lifelineEarly.take() once it has
    // checked that url is the one it dials (or leaves it with drop()). A socket not taken in
    // EARLY_MS (a config the hub refuses, a page that never starts it) is closed: the Host
    // keeps no session nobody reads. The socket carries a random dialer id
    // (lifeline-dialer), which the hub adopts for its own dials (gateway's earlyDialer): a
    // later dial of the hub ends this socket's handshake at the Host even where the browser
    // cannot (Firefox leaves a connecting socket's upgrade pending when it is closed).
    function openEarly(url) {
      const EARLY_MS = 30000;
      if (!url || typeof WebSocket !== 'function' || (typeof navigator === 'object' && navigator.onLine === false)) return;
      let ws;
      try {
        const id = Array.from(crypto.getRandomValues(new Uint8Array(16)), (x) => x.toString(16).padStart(2, '0')).join('');
        url += (url.includes('?') ? '&' : '?') + 'lifeline-dialer=' + id;
      } catch (_) { /* no crypto: the hub's dials have their own id */ }
      try {
        ws = new WebSocket(url, 'lifeline.v1');
      } catch (_) { return; } // the hub's own dial says why
      ws.binaryType = 'arraybuffer';
      const events = [];
      const keep = (e) => events.push(e);
      const types = ['open', 'message', 'error', 'close'];
      for (const t of types) ws.addEventListener(t, keep);
      const release = () => {
        clearTimeout(timer);
        for (const t of types) ws.removeEventListener(t, keep);
        if (globalThis.__lifelineEarly === early) delete globalThis.__lifelineEarly;
      };
      const drop = () => {
        release();
        try { ws.close(1000, 'not taken'); } catch (_) { /* closed already */ }
      };
      const timer = setTimeout(drop, EARLY_MS);
      const early = {
        url,
        ws,
        take() {
          release();
          if (globalThis.__lifelineSockets) globalThis.__lifelineSockets.add(ws); // web/runner.js
          return { ws, events };
        },
        drop,
      };
      globalThis.__lifelineEarly = early;
    }
    // openEarly END

    b.seen = () => { try { localStorage.setItem(SEEN, b.wasm); } catch (_) { /* no storage: warm again */ } };
    b.take = () => {
      const s = started;
      started = null;
      return s;
    };
    return b;
  }
})();
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
