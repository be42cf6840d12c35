// TypeScript declarations of Lifeline's JS API in the page: the global `lifeline` (web/lifeline.js),
// `lifelineOptions`, and the `lifeline:ready` and `lifeline:state` events on window. The Host
// plugin injects the script that defines them; these declarations only describe it.
//
// Use: copy this file into your project and add it to your tsconfig's "files" (or reference it
// with /// <reference path="lifeline.d.ts" />). It declares globals only; it exports nothing.
// web/lifeline.usage.ts uses every part of it, and `make test` type-checks that file.

declare namespace Lifeline {
  /**
   * Where the connection stands (`status.state`).
   *
   * - `idle`: before the first attempt (the indicator shows it as connecting).
   * - `connecting`: a handshake is in flight; `slow` says when it is pending for long.
   * - `connected`: the Host said ready; subscriptions deliver.
   * - `reconnecting`: waiting for the next attempt, due at `nextAttempt`.
   * - `offline`: the browser is offline; nothing is attempted until it is back online.
   * - `stopped`: `lifeline.stop()` was called (or the page was hidden into the back-forward
   *   cache); nothing runs until `lifeline.start()`.
   * - `unauthorized`: the Host refused the page's credentials (HTTP 401/403 from the app's
   *   Authenticate), or its application ended the page's access (a sign-out, a revocation, a
   *   credential that expired: `reason` says why); retried at the top cap only, due at
   *   `nextAttempt`, each time through the Host's Authenticate. Sign in, then
   *   `lifeline.reconnectNow()`.
   * - `misconfigured`: the connection settings are invalid (`error` names the fields and the
   *   values seen); the page does not connect.
   * - `failed`: the page's connection program ended; only a reload starts it again.
   */
  type State =
    | 'idle'
    | 'connecting'
    | 'connected'
    | 'reconnecting'
    | 'offline'
    | 'stopped'
    | 'unauthorized'
    | 'misconfigured'
    | 'failed';

  /**
   * What kind of failure `status.error` is, for a person: `''` for none, `timeout` (the Host did
   * not answer in time), `refused` (it could not be reached), `busy` (overloaded; see
   * `retryAfter`), `protocol` (it broke the protocol), `unauthorized` (it refused the page's
   * credentials), `restarting` (it is restarting), `silent` (the link went silent), `closed`
   * (the connection was closed or dropped), `offline`, `misconfigured`, `failed`, `other`.
   */
  type Kind =
    | ''
    | 'timeout'
    | 'refused'
    | 'busy'
    | 'protocol'
    | 'unauthorized'
    | 'restarting'
    | 'silent'
    | 'closed'
    | 'offline'
    | 'misconfigured'
    | 'failed'
    | 'other';

  /**
   * What carries the connection (`#connection-status[data-carrier]`): a WebSocket, or, where the
   * network does not carry one (a proxy that refuses it), the HTTP carrier's `stream` (one
   * streaming response) or `poll` (long polls, where a proxy holds a stream back); `''` before
   * the first connection.
   */
  type Carrier = '' | 'websocket' | 'stream' | 'poll';

  /** The `data-state` of `#connection-status`: the state, with a slow `connecting` as `slow`. */
  type IndicatorState = Exclude<State, 'idle'> | 'slow';

  /** One status of the connection: `lifeline.state()`, `onState` and `lifeline:state`. */
  interface Status {
    readonly state: State;
    /** Set while `connecting` once the handshake has been pending for `recovery.slowAfterMs`. */
    readonly slow: boolean;
    /** The number of the current or last attempt: 1 for the first, +1 for each. */
    readonly attempt: number;
    /** Consecutive failures since the last stable connection, `reconnectNow()` or `start()`. */
    readonly failures: number;
    /** When the next attempt is due (ms since the epoch) while `reconnecting` or `unauthorized`; else 0. */
    readonly nextAttempt: number;
    /** The last failure, for developers (English); `''` once connected. */
    readonly error: string;
    readonly kind: Kind;
    /**
     * The Host application's own words, while `unauthorized`: why it refused the credential,
     * or why it ended the page's access (`EndSessions`' reason, or that the sign-in expired);
     * `''` otherwise. Show it as text.
     */
    readonly reason: string;
    /** The wait (ms) the Host asked for with its refusal (busy, restarting); else 0. */
    readonly retryAfter: number;
    /**
     * When the connection took this status (ms since the epoch): the status may reach the page
     * later (in shared mode it crosses from the worker).
     */
    readonly at: number;
    /** What carried the last connection; it may change while `connected` (back to a WebSocket). */
    readonly carrier: Carrier;
    /**
     * The network does not carry a WebSocket (found now, or remembered from a recent visit):
     * the connection is on the HTTP carrier, and a WebSocket is tried again now and then.
     */
    readonly blocked: boolean;
  }

  /** One event of a stream, in order: `seq` is the previous event's + 1. */
  interface Event<T = unknown> {
    readonly stream: string;
    readonly seq: number;
    readonly reset: false;
    /** The event's JSON value, parsed. */
    readonly data: T;
  }

  /**
   * A fresh start of a stream: drop what you hold of it and start from `baseline` (when the
   * Host has one), which stands at `seq` in log `epoch`; the next event has `seq` + 1. Every
   * subscription begins with one; another comes when the page was away longer than the Host's
   * log reaches back, or the log changed.
   */
  interface Reset<B = unknown> {
    readonly stream: string;
    readonly seq: number;
    readonly reset: true;
    readonly epoch: string;
    /** The stream's state at `seq`, parsed; absent when the Host sets no baseline for it. */
    readonly baseline?: B;
  }

  /**
   * The last message of a subscription that ended on its own: `denied` when the Host's
   * application refused it (its Authorize), with the Host's words in `reason`. It is never
   * retried.
   */
  interface End {
    readonly stream: string;
    /** Why it ended, for developers: `gateway: the host denied stream "user.bob": not yours`. */
    readonly error: string;
    readonly denied: boolean;
    /** The reason the Host's Authorize gave, as it gave it (may be empty); `""` unless `denied`. */
    readonly reason: string;
  }

  /** A delivery (`Event` or `Reset`), or the `End`; tell them apart with `'error' in m`, then `m.reset`. */
  type Delivery<T = unknown, B = unknown> = Event<T> | Reset<B>;
  type Message<T = unknown, B = unknown> = Delivery<T, B> | End;

  /**
   * One member of a stream: an identity (what the Host's `Authenticate` returned), with every
   * session it has on the stream across the fleet (tabs of one browser are one session), and
   * the metadata the Host's app gives it (`null` for none).
   */
  interface Member<M = unknown> {
    readonly id: string;
    readonly count: number;
    readonly meta: M | null;
  }

  /**
   * Who is on a stream (`lifeline.presence`): the members now, and what changed since the last
   * call. A reconnect, a move to another Host or a Host's restart within the Host's grace window
   * changes nothing here: nobody is seen to leave and join again.
   */
  interface Presence<M = unknown> {
    readonly stream: string;
    /** The members listed now, ordered by `id`: at most `limit` of them when the Host caps its lists. */
    readonly members: readonly Member<M>[];
    /** Every member of the stream, listed or not. */
    readonly total: number;
    /** The Host's cap on the members it lists when the stream is over it; 0 when all are listed. */
    readonly limit: number;
    /** Members counted and not listed (`total` − `members.length`). */
    readonly beyond: number;
    /** Listed now and not at the last call (all of them at the first). */
    readonly joined: readonly Member<M>[];
    /** Listed at the last call too, with another count or metadata. */
    readonly updated: readonly Member<M>[];
    /** The ids listed at the last call and not now. */
    readonly left: readonly string[];
    /** Why the stream shows no presence (the Host refused it, or carries none); `''` when it does. */
    readonly reason: string;
  }

  /**
   * What happened to a call that did not get the Host's reply (`CallError.kind`):
   *
   * - `app`: the Host's handler returned an error; `message` is its first line. Sent.
   * - `internal`: the handler failed unexpectedly (it panicked). Sent.
   * - `unknown`: no handler on the Host has this name. Sent.
   * - `bad-request`: the Host could not read the call; the handler never ran. Sent.
   * - `busy`: over the Host's call rate or queue (`retryAfter` says when to try again), or over
   *   the page's queue of unsent calls (not sent). Never run.
   * - `not-run`: the connection ended after the call was sent and before its reply, and the
   *   Host has since fenced that connection's session before the call started there: it never
   *   ran, and never will. Safe to make again. Sent.
   * - `interrupted`: the call had started on the Host, and its reply was lost (the connection
   *   ended, and the Host has fenced its session; or the Host running a keyed call died): it ran,
   *   or runs to its end, once, and nothing of it starts after this. Check, then decide. Sent.
   * - `timeout`: what became of the call cannot be learned, or not in time; `sent` says whether
   *   it had gone out (then it may have run, or still run, at most once). No reply within
   *   `timeoutMs`; or the Host ran it past its `callTimeoutMs`; or a call cut off could neither be
   *   sent again nor its session fenced (a Host of another dedup store, half the Host's dedup
   *   window past, the page's program ended).
   * - `identity-changed`: a keyed call cut off and not sent again because the page's identity
   *   changed since (the user signed in as someone else): it may have run as the identity it
   *   was made as, at most once, and never runs as the new one. Sent.
   * - `too-big`: the call is over what the Host reads. Not sent.
   * - `invalid`: a name, key, timeout or data Lifeline cannot send. Not sent.
   * - `unsupported`: the Host takes no calls. Not sent.
   * - `closed`: the connection was closed for good; `sent` says whether it had gone out.
   * - `access-ended`: the Host ended the page's access (a sign-out, a revocation, an expiry)
   *   before the call ran: the Host refused it (sent) or it was never sent; it never ran, and
   *   it is not sent on a later connection, which may be another user's.
   * - `failed`: the page's connection program ended; `sent` calls say `timeout` instead.
   */
  type CallErrorKind =
    | 'app'
    | 'internal'
    | 'unknown'
    | 'bad-request'
    | 'busy'
    | 'not-run'
    | 'interrupted'
    | 'timeout'
    | 'identity-changed'
    | 'too-big'
    | 'invalid'
    | 'unsupported'
    | 'closed'
    | 'access-ended'
    | 'failed';

  /** Why `lifeline.call` rejected. */
  interface CallError extends Error {
    readonly kind: CallErrorKind;
    /** Whether the call had been written to the connection: one never sent has certainly not run. */
    readonly sent: boolean;
    /** The Host's code for a failed reply (`app`, `busy`, …), `''` when the Host said nothing. */
    readonly code: string;
    /** The wait (ms) the Host asked for (`busy`); else 0. */
    readonly retryAfter: number;
  }

  /** The options of one call. */
  interface CallOptions {
    /**
     * The call's timeout (ms), waiting to be sent and for the reply, at most 3600000. Default:
     * the Host's `callTimeoutMs` (30000).
     */
    timeoutMs?: number;
    /**
     * The app's idempotency key (1 to 128 bytes of UTF-8, no control characters). With it, a
     * call whose connection ended before its reply is sent again once connected, and the Host
     * runs it at most once per user and key; without it, such a call rejects `interrupted`.
     */
    key?: string;
  }

  /** Undoes what returned it; calling it again does nothing. */
  type Remove = () => void;

  /**
   * The page's timing (milliseconds), each field optional; the Host's config file has the same
   * section. An invalid value makes the state `misconfigured`, naming the field.
   */
  interface Recovery {
    /** A handshake pending this long is shown as slow. Default 3000. */
    slowAfterMs?: number;
    /** A handshake pending this long is cancelled. Default 15000. */
    deadlineMs?: number;
    /** The first cap of the retry ladder. Default 500. */
    initialDelayMs?: number;
    /** The top cap; failures at it retry forever. Default 10000. */
    maxDelayMs?: number;
    /** Cap growth per failure; 1 is a fixed cap. Default 2. */
    factor?: number;
    /** Each delay is cap × (1 − jitter × random), jitter in [0, 1]. Default 0.5. */
    jitter?: number;
    /** How long a connection must stay up before the ladder restarts at its first cap. Default 10000. */
    stableAfterMs?: number;
  }

  /** `globalThis.lifelineOptions`: set before the injected script runs; overrides the bootstrap. */
  interface Options {
    recovery?: Recovery;
    /** The events endpoint's URL path (default: the Host's, from the bootstrap). */
    endpoint?: string;
    /**
     * Where the connection runs: `shared` (one per origin, in a SharedWorker, for every tab:
     * the default where the browser has SharedWorker) or `in-page` (this page's own).
     */
    mode?: 'shared' | 'in-page';
    /**
     * On the HTTP carrier (a network that does not carry WebSockets), how soon a WebSocket is
     * first tried again, in ms; each failed try doubles it, up to 10 min. An integer in
     * 1000..3600000. Default 15000.
     */
    upgradeAfterMs?: number;
  }

  /**
   * `globalThis.lifeline`. It exists once the injected script has run; calls made before the
   * connection program is up are queued. A listener or handler that throws is logged and the
   * page carries on; a wrong call is reported on the console and returns a harmless remover.
   */
  interface API {
    /** The current status. */
    state(): Status;
    /** Calls `fn` with the current status now and on every change. */
    onState(fn: (status: Status) => void): Remove;
    /** Attempts at once, from the first cap of the ladder (also after `unauthorized`). */
    reconnectNow(): void;
    /** Ends the connection and every attempt, until `start()`. */
    stop(): void;
    /** Begins a fresh sequence of attempts after `stop()`. */
    start(): void;
    /**
     * Follows `stream` (1 to 256 bytes of UTF-8): `fn` gets a reset first, then every event in
     * order, across reconnects (resumed by cursor, or a new reset when that cannot be), and a
     * last `End` if the subscription ends on its own. The remover unsubscribes.
     */
    subscribe<T = unknown, B = unknown>(stream: string, fn: (message: Message<T, B>) => void): Remove;
    /**
     * Who is on `stream`: `fn` gets a `Presence` once the members are known and after each
     * batch of changes, and a last `End` if the subscription ends on its own (the Host's
     * Authorize refused it: the same rule as for its events). Following it makes this browser a
     * member of the stream, as `subscribe` does: in shared mode every tab of the browser is one
     * session, which leaves the grace window after its last tab closed. The remover stops it.
     */
    presence<M = unknown>(stream: string, fn: (update: Presence<M> | End) => void): Remove;
    /**
     * Asks the Host's handler `name` (1 to 128 of letters, digits and `. _ : / -`) for its
     * reply to `data` (any JSON value; `undefined` is `null`). A call made while not connected
     * waits to be sent; calls reach the Host in the order made. Rejects with a `CallError`.
     */
    call<R = unknown>(name: string, data?: unknown, opts?: CallOptions): Promise<R>;
    /**
     * Sets the renewer: before a credential the Host said expires runs out, the connection
     * renews it with the page's cookies and asks `fn` for a token to send along (the Host's
     * Authenticate reads it as `Authorization: Bearer <token>`). `fn` resolves to the token
     * within 3.5 s, or rejects. In shared mode every tab's connection is one: a tab with a
     * renewer is asked. A later `onRenew` replaces it; the remover unsets it.
     */
    onRenew(fn: () => Promise<string> | string): Remove;
  }
}

// eslint-disable-next-line no-var
declare var lifeline: Lifeline.API;
// eslint-disable-next-line no-var
declare var lifelineOptions: Lifeline.Options | undefined;

interface WindowEventMap {
  /** Fires once, when the document has parsed and `lifeline` is usable. */
  'lifeline:ready': CustomEvent<null>;
  /** Fires on every change of status, with the status as detail. */
  'lifeline:state': CustomEvent<Lifeline.Status>;
}
