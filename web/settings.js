// The Settings indicator: the DOM contract that tests and embedders rely on (SPEC section 6).
//
//   #connection-status[data-state]  connecting | slow | connected | reconnecting | offline |
//                                   stopped | misconfigured | failed
//   #connection-label               the aria-live="polite" label, with the countdown while
//                                   reconnecting
//   #connection-detail              the last error, or the invalid field and value
//   #reconnect-now                  enabled whenever the state is not connected; once failed
//                                   (the page's program ended) it reloads the page
//
// It listens to the `lifeline:state` CustomEvent the wasm dispatches on window, and to nothing
// else, so it works the same before the wasm has loaded (connecting) and after.
(function () {
  'use strict';

  const LABELS = {
    en: {
      connected: 'Connected',
      connecting: 'Connecting…',
      slow: 'Host is slow to respond',
      reconnecting: 'Reconnecting',
      offline: 'Offline',
      stopped: 'Stopped',
      misconfigured: 'Connection settings are invalid',
      failed: 'Connection stopped working: reload the page',
      reconnectNow: 'Reconnect now',
      inSeconds: (s) => `in ${s} s`,
      title: 'Connection',
    },
    zh: {
      connected: '已连接',
      connecting: '正在连接…',
      slow: '主机响应缓慢',
      reconnecting: '自动重连中',
      offline: '离线',
      stopped: '已停止',
      misconfigured: '连接设置无效',
      failed: '连接已失效，请刷新页面',
      reconnectNow: '立即重连',
      inSeconds: (s) => `${s} 秒后`,
      title: '连接',
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
      if (LABELS[base]) return base;
    }
    return 'en';
  }

  const lang = pickLanguage();
  const L = LABELS[lang];
  let current = { state: 'connecting', slow: false, nextAttempt: 0, error: '' };
  let countdown = null;

  function dataState(s) {
    if (s.state === 'connecting' && s.slow) return 'slow';
    if (s.state === 'idle') return 'connecting';
    return s.state;
  }

  function render() {
    const box = document.getElementById('connection-status');
    if (!box) return;
    const label = document.getElementById('connection-label');
    const detail = document.getElementById('connection-detail');
    const button = document.getElementById('reconnect-now');
    const state = dataState(current);
    box.dataset.state = state;
    box.setAttribute('lang', lang === 'zh' ? 'zh-CN' : 'en');
    let text = L[state] || state;
    if (state === 'reconnecting' && current.nextAttempt > 0) {
      const secs = Math.max(0, Math.ceil((current.nextAttempt - Date.now()) / 1000));
      text += ' ' + L.inSeconds(secs);
      box.dataset.seconds = String(secs);
    } else {
      delete box.dataset.seconds;
    }
    if (label.textContent !== text) label.textContent = text;
    detail.textContent = current.error || '';
    button.textContent = L.reconnectNow;
    button.disabled = state === 'connected';

    // The countdown ticks once a second only while it is shown.
    if (state === 'reconnecting' && countdown === null) {
      countdown = setInterval(render, 1000);
    } else if (state !== 'reconnecting' && countdown !== null) {
      clearInterval(countdown);
      countdown = null;
    }
  }

  window.addEventListener('lifeline:state', (e) => {
    current = Object.assign({ slow: false, nextAttempt: 0, error: '' }, e.detail);
    render();
  });

  function init() {
    const title = document.getElementById('connection-title');
    if (title) title.textContent = L.title;
    document.getElementById('reconnect-now').addEventListener('click', () => {
      if (dataState(current) === 'failed') location.reload();
      else if (globalThis.lifeline) globalThis.lifeline.reconnectNow();
    });
    render();
  }

  if (document.readyState === 'loading') {
    document.addEventListener('DOMContentLoaded', init);
  } else {
    init();
  }
})();
