(function () {
'use strict';

if (globalThis.__lifelineBoot) return; // the inline boot ran: the tab script keeps its boot
const SEEN = 'lifeline:wasm'; // localStorage: the wasm a shared hub last ran here (see warm)
const data = (document.currentScript && document.currentScript.dataset) || {};
let boot = null;
globalThis.__lifelineBoot = () => boot || (boot = start());
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
b.mode = want === 'in-page' || !b.worker || typeof SharedWorker !== 'function' ? 'in-page' : 'shared';

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
let lingers = false;
const w = new SharedWorker(url.href, { name: b.hubName(generation), get extendedLifetime() { lingers = true; return true; } });
b.lingers = lingers;
return w;
};
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
w.onerror = (e) => { started.failed = e; };
warm();
} catch (e) { started = { error: e }; }
} else {
openEarly(b.events('in-page'));
started = { module: b.compile(), runner: b.loadRunner() };
started.runner.catch(() => {}); // the tab script reports it
}
}
function warm() {
let seen = null;
try { seen = localStorage.getItem(SEEN); } catch (_) { /* no storage: warm */ }
if (seen === b.wasm || navigator.vendor === 'Apple Computer, Inc.') return;
if (typeof fetch !== 'function' || typeof WritableStream !== 'function') return;
fetch(b.wasm).then((r) => r.body && r.body.pipeTo(new WritableStream()).catch(() => {}), () => {});
}
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

b.seen = () => { try { localStorage.setItem(SEEN, b.wasm); } catch (_) { /* no storage: warm again */ } };
b.take = () => {
const s = started;
started = null;
return s;
};
return b;
}
})();
