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
