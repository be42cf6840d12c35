//go:build !js

package testserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/lifeline-go/lifeline/internal/wire"
	"github.com/lifeline-go/lifeline/internal/wsheader"
)

// Defaults of a new scenario.
const (
	DefaultHeartbeat = time.Second
	DefaultRing      = 1 << 20
)

// Server serves scenarios; it is an http.Handler. Close ends them all.
type Server struct {
	paths     paths
	mu        sync.Mutex
	next      int
	scenarios map[string]*scenario
	closed    bool
}

// New returns a server with no scenario.
func New() *Server { return &Server{scenarios: make(map[string]*scenario)} }

// Close ends every scenario and refuses new ones.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	all := make([]*scenario, 0, len(s.scenarios))
	for _, sc := range s.scenarios {
		all = append(all, sc)
	}
	s.mu.Unlock()
	for _, sc := range all {
		sc.close()
	}
	s.paths.close()
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == ControlPath {
		s.control(w, r)
		return
	}
	if strings.HasPrefix(r.URL.Path, PathPrefix) {
		s.paths.serve(w, r)
		return
	}
	// /s/<id>/<host>/_lifeline/events
	rest, ok := strings.CutPrefix(r.URL.Path, "/s/")
	parts := strings.SplitN(rest, "/", 3)
	if !ok || len(parts) != 3 || "/"+parts[2] != wire.DefaultPath {
		http.NotFound(w, r)
		return
	}
	s.mu.Lock()
	sc := s.scenarios[parts[0]]
	s.mu.Unlock()
	if sc == nil {
		http.Error(w, "testserver: no scenario "+parts[0], http.StatusNotFound)
		return
	}
	sc.events(parts[1], w, r)
}

func (s *Server) control(w http.ResponseWriter, r *http.Request) {
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		return
	}
	defer c.CloseNow()
	c.SetReadLimit(1 << 20)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		c.Close(websocket.StatusGoingAway, "testserver: closed")
		return
	}
	s.next++
	sc := newScenario(strconv.Itoa(s.next))
	s.scenarios[sc.id] = sc
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.scenarios, sc.id)
		s.mu.Unlock()
		sc.close()
	}()
	ctx := sc.ctx
	send := func(rep Reply) error {
		b, _ := json.Marshal(rep)
		return c.Write(ctx, websocket.MessageText, b)
	}
	if send(Reply{ID: sc.id}) != nil {
		return
	}
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			return
		}
		var req Request
		rep := Reply{}
		if err := json.Unmarshal(b, &req); err != nil {
			rep.Error = "testserver: bad request: " + err.Error()
		} else {
			rep = sc.do(req)
		}
		if send(rep) != nil {
			return
		}
	}
}

type scenario struct {
	id     string
	start  time.Time
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every change of a counter
	hb      time.Duration
	ring    int
	epochs  int
	hosts   map[string]*host
	logs    map[string]*streamLog
	pumps   map[string]context.CancelFunc
}

type host struct {
	name     string
	auth     authRule
	queue    [][]Step
	def      []Step
	stats    HostStats
	sessions map[*session]struct{}
	release  chan struct{}
	expires  map[string]int64 // the sessions whose ready frame said they expire, by name: ExpiresMs
}

// authRule is a host's Authenticate: status 0 lets everyone in.
type authRule struct {
	status int
	reason string
	cookie string
	noCORS bool
}

// refuses reports whether the rule refuses r.
func (a authRule) refuses(r *http.Request) bool {
	if a.status == 0 {
		return false
	}
	if a.cookie == "" {
		return true
	}
	name, value, _ := strings.Cut(a.cookie, "=")
	c, err := r.Cookie(name)
	return err != nil || c.Value != value
}

// refusal is the JSON body that goes with the rule's status.
func (a authRule) refusal() []byte {
	kind := wire.RefusalForbidden
	if a.status == http.StatusUnauthorized {
		kind = wire.RefusalUnauthorized
	}
	return wire.Refusal{Error: kind, Reason: a.reason}.Encode()
}

type streamLog struct {
	epoch  string
	first  uint64 // seq of events[0]; last+1 when empty
	last   uint64
	events []json.RawMessage
	subs   map[*session]struct{}
}

func newScenario(id string) *scenario {
	ctx, cancel := context.WithCancel(context.Background())
	return &scenario{
		id: id, start: time.Now(), ctx: ctx, cancel: cancel,
		changed: make(chan struct{}),
		hb:      DefaultHeartbeat, ring: DefaultRing,
		hosts: make(map[string]*host), logs: make(map[string]*streamLog),
		pumps: make(map[string]context.CancelFunc),
	}
}

func (sc *scenario) close() {
	sc.cancel()
	sc.wg.Wait()
}

// touch wakes waiters. sc.mu must be held.
func (sc *scenario) touch() {
	close(sc.changed)
	sc.changed = make(chan struct{})
}

// host returns the named host, creating it. sc.mu must be held.
func (sc *scenario) host(name string) *host {
	h := sc.hosts[name]
	if h == nil {
		h = &host{
			name:     name,
			def:      []Step{{Ready: true}, {Serve: true}},
			sessions: make(map[*session]struct{}),
			release:  make(chan struct{}),
			expires:  make(map[string]int64),
		}
		sc.hosts[name] = h
	}
	return h
}

// log returns the named stream log, creating it. sc.mu must be held.
func (sc *scenario) log(stream string) *streamLog {
	l := sc.logs[stream]
	if l == nil {
		sc.epochs++
		l = &streamLog{epoch: fmt.Sprintf("%s-e%d", sc.id, sc.epochs), first: 1, subs: make(map[*session]struct{})}
		sc.logs[stream] = l
	}
	return l
}

func (sc *scenario) do(req Request) Reply {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	switch req.Op {
	case "script":
		h := sc.host(req.Host)
		h.queue = append(h.queue, req.Sessions...)
		if req.Default != nil {
			h.def = req.Default
		}
	case "config":
		if req.HeartbeatMs > 0 {
			sc.hb = time.Duration(req.HeartbeatMs) * time.Millisecond
		}
		if req.Ring > 0 {
			sc.ring = req.Ring
		}
	case "publish":
		sc.publish(req.Stream, max(req.N, 1))
	case "pump":
		if stop := sc.pumps[req.Stream]; stop != nil {
			stop()
			delete(sc.pumps, req.Stream)
		}
		if req.EveryMs > 0 {
			sc.startPump(req.Stream, time.Duration(req.EveryMs)*time.Millisecond)
		}
	case "newEpoch":
		l := sc.log(req.Stream)
		sc.epochs++
		l.epoch = fmt.Sprintf("%s-e%d", sc.id, sc.epochs)
		l.events, l.last, l.first = nil, 0, 1
		for sess := range l.subs {
			sess.enqueue(true, resetFrame(req.Stream, l))
		}
	case "auth":
		sc.host(req.Host).auth = authRule{status: req.Code, reason: req.Reason, cookie: req.Cookie, noCORS: req.NoCORS}
	case "release":
		h := sc.host(req.Host)
		close(h.release)
		h.release = make(chan struct{})
	case "kick":
		for sess := range sc.host(req.Host).sessions {
			go sess.end(req.Code, req.Reason)
		}
	case "goaway":
		b, _ := wire.HostFrame{T: wire.TypeGoAway, URI: req.URI}.Encode()
		for sess := range sc.host(req.Host).sessions {
			sess.enqueue(false, b)
		}
	case "stats":
	case "wait":
		return sc.wait(req)
	default:
		return Reply{Error: fmt.Sprintf("testserver: unknown op %q", req.Op)}
	}
	return sc.stats()
}

// stats snapshots every counter. sc.mu must be held.
func (sc *scenario) stats() Reply {
	rep := Reply{Hosts: make(map[string]HostStats), Last: make(map[string]uint64), Epoch: make(map[string]string)}
	for name, h := range sc.hosts {
		st := h.stats
		st.DialMs = append([]int64(nil), st.DialMs...)
		st.RefusalQueries = append([]RefusalQuery(nil), st.RefusalQueries...)
		st.Received = append([]wire.PageFrame(nil), st.Received...)
		rep.Hosts[name] = st
	}
	for name, l := range sc.logs {
		rep.Last[name], rep.Epoch[name] = l.last, l.epoch
	}
	return rep
}

// wait blocks until the condition holds or the timeout passes. sc.mu is held on entry and exit.
func (sc *scenario) wait(req Request) Reply {
	timeout := time.Duration(req.TimeoutMs) * time.Millisecond
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		v := sc.host(req.Host).stats.Field(req.Field)
		if v < 0 {
			return Reply{Error: fmt.Sprintf("testserver: unknown field %q", req.Field)}
		}
		ok := false
		switch req.Cmp {
		case "", "==":
			ok = v == req.Value
		case ">=":
			ok = v >= req.Value
		case "<=":
			ok = v <= req.Value
		default:
			return Reply{Error: fmt.Sprintf("testserver: unknown comparison %q", req.Cmp)}
		}
		if ok {
			return sc.stats()
		}
		ch := sc.changed
		sc.mu.Unlock()
		select {
		case <-ch:
			sc.mu.Lock()
		case <-t.C:
			sc.mu.Lock()
			rep := sc.stats()
			rep.Error = fmt.Sprintf("testserver: after %v host %q has %s = %d, want %s %d",
				timeout, req.Host, req.Field, sc.host(req.Host).stats.Field(req.Field), req.Cmp, req.Value)
			return rep
		case <-sc.ctx.Done():
			sc.mu.Lock()
			return Reply{Error: "testserver: scenario ended"}
		}
	}
}

// publish appends n events to stream and forwards them. sc.mu must be held.
func (sc *scenario) publish(stream string, n int) {
	l := sc.log(stream)
	for range n {
		l.last++
		data, _ := json.Marshal(Data{V: l.last})
		l.events = append(l.events, data)
		if len(l.events) > sc.ring {
			l.events = l.events[len(l.events)-sc.ring:]
		}
		l.first = l.last - uint64(len(l.events)) + 1
		b, _ := wire.HostFrame{T: wire.TypeEvent, Stream: stream, Seq: l.last, Data: data}.Encode()
		for sess := range l.subs {
			sess.enqueue(true, b)
		}
	}
}

func (sc *scenario) startPump(stream string, every time.Duration) {
	ctx, stop := context.WithCancel(sc.ctx)
	sc.pumps[stream] = stop
	sc.wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				sc.mu.Lock()
				sc.publish(stream, 1)
				sc.mu.Unlock()
			}
		}
	})
}

func resetFrame(stream string, l *streamLog) []byte {
	baseline, _ := json.Marshal(Data{V: l.last})
	b, _ := wire.HostFrame{T: wire.TypeReset, Stream: stream, Epoch: l.epoch, Seq: l.last, Baseline: baseline}.Encode()
	return b
}

// events serves one upgrade request on host hname by the next script.
func (sc *scenario) events(hname string, w http.ResponseWriter, r *http.Request) {
	sc.wg.Add(1)
	defer sc.wg.Done()
	if !wsheader.IsUpgrade(r.Header) {
		if r.URL.Query().Has(wire.RenewParam) {
			sc.renewal(hname, w, r)
			return
		}
		sc.refusalQuery(hname, w, r)
		return
	}
	sc.mu.Lock()
	h := sc.host(hname)
	h.stats.Dials++
	h.stats.DialMs = append(h.stats.DialMs, time.Since(sc.start).Milliseconds())
	if auth := h.auth; auth.refuses(r) {
		h.stats.Refused++
		sc.touch()
		sc.mu.Unlock()
		writeRefusal(w, auth.status, auth.refusal())
		return
	}
	script := h.def
	if len(h.queue) > 0 {
		script, h.queue = h.queue[0], h.queue[1:]
	}
	sc.touch()
	sc.mu.Unlock()

	i := 0
	for ; i < len(script); i++ {
		st := script[i]
		if st.Reject != 0 {
			http.Error(w, "testserver: rejected by script", st.Reject)
			return
		}
		if !st.Hold {
			break
		}
		sc.mu.Lock()
		h.stats.Held++
		release := h.release
		sc.touch()
		sc.mu.Unlock()
		var gone bool
		select {
		case <-release:
		case <-r.Context().Done():
			gone = true
		case <-sc.ctx.Done():
			gone = true
		}
		sc.mu.Lock()
		h.stats.Held--
		sc.touch()
		sc.mu.Unlock()
		if gone {
			return
		}
	}
	opts := &websocket.AcceptOptions{InsecureSkipVerify: true, Subprotocols: []string{wire.Subprotocol}}
	if i < len(script) && script[i].NoSubprotocol {
		opts.Subprotocols = nil
		i++
	}
	c, err := websocket.Accept(w, r, opts)
	if err != nil {
		return
	}
	c.SetReadLimit(1 << 20)
	sess := &session{sc: sc, h: h, c: c, hb: sc.hb, signal: make(chan struct{}, 1), subs: make(map[string]bool)}
	sess.ctx, sess.cancel = context.WithCancel(sc.ctx)
	defer sess.cancel()
	sc.mu.Lock()
	h.stats.Accepted++
	h.stats.Live++
	h.sessions[sess] = struct{}{}
	sc.touch()
	sc.mu.Unlock()
	defer func() {
		sc.mu.Lock()
		delete(h.sessions, sess)
		for name := range sess.subs {
			delete(sc.log(name).subs, sess)
		}
		h.stats.Live--
		sc.touch()
		sc.mu.Unlock()
	}()
	defer c.CloseNow()

	deaf := false
	for _, st := range script[i:] {
		deaf = deaf || st.Deaf
	}
	var bg sync.WaitGroup
	defer bg.Wait()
	if !deaf {
		bg.Go(sess.reader)
	}
	bg.Go(sess.writer)
	sess.steps(script[i:])
	<-sess.ctx.Done()
}

// refusalQuery answers a request that is no upgrade as hostplugin does (its doc.go, "The
// refusal query"):
// the host's refusal, or 426; CORS for every origin (the test Host allows them all) unless
// the rule says noCORS.
func (sc *scenario) refusalQuery(hname string, w http.ResponseWriter, r *http.Request) {
	sc.mu.Lock()
	h := sc.host(hname)
	auth := h.auth
	status, body := http.StatusUpgradeRequired, wire.Refusal{Error: wire.RefusalUpgradeRequired}.Encode()
	if auth.refuses(r) {
		status, body = auth.status, auth.refusal()
	}
	h.stats.RefusalQueries = append(h.stats.RefusalQueries, RefusalQuery{
		Method: r.Method, Origin: r.Header.Get("Origin"), Cookie: r.Header.Get("Cookie"), Status: status,
	})
	sc.touch()
	sc.mu.Unlock()
	hd := w.Header()
	hd.Add("Vary", "Origin")
	if origin := r.Header.Get("Origin"); origin != "" && !auth.noCORS {
		hd.Set("Access-Control-Allow-Origin", origin)
		hd.Set("Access-Control-Allow-Credentials", "true")
	}
	if status == http.StatusUpgradeRequired {
		hd.Set("Upgrade", "websocket")
	}
	writeRefusal(w, status, body)
}

// renewal answers a page's renewal (access.go in internal/wire) as the host's auth rule says:
// a session's secret is its name's (secretOf), and the answer's expiry the one its ready frame
// said.
func (sc *scenario) renewal(hname string, w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(io.LimitReader(r.Body, wire.MaxRenewal))
	rn, err := wire.DecodeRenewal(b)
	sc.mu.Lock()
	h := sc.host(hname)
	status, body := http.StatusOK, wire.Renewed{ExpiresMs: h.expires[rn.Session]}.Encode()
	switch {
	case err != nil:
		status, body = http.StatusBadRequest, wire.Refusal{Error: wire.RefusalRenewal, Reason: err.Error()}.Encode()
	case rn.Secret != secretOf(rn.Session) || h.expires[rn.Session] == 0:
		status, body = http.StatusNotFound, wire.Refusal{Error: wire.RefusalSession}.Encode()
	case h.auth.refuses(r):
		status, body = h.auth.status, h.auth.refusal()
	}
	h.stats.Renewals = append(h.stats.Renewals, Renewal{Session: rn.Session, Secret: rn.Secret, Token: rn.Token,
		Cookie: r.Header.Get("Cookie"), Origin: r.Header.Get("Origin"), Status: status})
	noCORS := h.auth.noCORS
	sc.touch()
	sc.mu.Unlock()
	if origin := r.Header.Get("Origin"); origin != "" && !noCORS {
		w.Header().Set("Access-Control-Allow-Origin", origin)
		w.Header().Set("Access-Control-Allow-Credentials", "true")
	}
	writeRefusal(w, status, body)
}

// secretOf is the secret of the session named name.
func secretOf(name string) string { return "secret-of-" + name }

func writeRefusal(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(body)
}

// session is one accepted WebSocket.
type session struct {
	sc     *scenario
	h      *host
	c      *websocket.Conn
	ctx    context.Context
	cancel context.CancelFunc
	signal chan struct{}
	hb     time.Duration

	mu      sync.Mutex
	out     []outFrame
	ready   bool
	silent  bool
	noPing  bool
	serving bool
	waiting []wire.PageFrame // subs received before Serve

	subs map[string]bool // guarded by sc.mu
}

type outFrame struct {
	b       []byte
	log     bool          // an event or reset from a stream log: suppressed while silent
	flushed chan struct{} // a marker, not a frame: closed once every frame before it is written
}

func (sess *session) enqueue(log bool, b []byte) { sess.push(outFrame{b: b, log: log}) }

// push queues f for the writer and wakes it.
func (sess *session) push(f outFrame) {
	sess.mu.Lock()
	sess.out = append(sess.out, f)
	sess.mu.Unlock()
	select {
	case sess.signal <- struct{}{}:
	default:
	}
}

// end closes the session with code and reason; code 0 drops the TCP connection.
func (sess *session) end(code int, reason string) {
	if code == 0 {
		sess.c.CloseNow()
	} else {
		sess.c.Close(websocket.StatusCode(code), reason)
	}
	sess.cancel()
}

func (sess *session) steps(steps []Step) {
	for _, st := range steps {
		switch {
		case st.Ready:
			hb := sess.hb
			if st.HeartbeatMs > 0 {
				hb = time.Duration(st.HeartbeatMs) * time.Millisecond
			}
			rf := wire.HostFrame{T: wire.TypeReady, Session: fmt.Sprintf("%s-%p", sess.h.name, sess), HeartbeatMs: hb.Milliseconds()}
			if st.ExpiresMs > 0 {
				rf.ExpiresMs, rf.Secret = st.ExpiresMs, secretOf(rf.Session)
				sess.sc.mu.Lock()
				sess.h.expires[rf.Session] = st.ExpiresMs
				sess.sc.mu.Unlock()
			}
			b, _ := rf.Encode()
			sess.mu.Lock()
			sess.ready, sess.hb = true, hb
			sess.mu.Unlock()
			sess.enqueue(false, b)
		case st.Serve:
			sess.mu.Lock()
			sess.serving = true
			waiting := sess.waiting
			sess.waiting = nil
			sess.mu.Unlock()
			for _, f := range waiting {
				sess.serve(f)
			}
		case st.Silent:
			sess.mu.Lock()
			sess.silent = true
			sess.mu.Unlock()
		case st.NoPing:
			sess.mu.Lock()
			sess.noPing = true
			sess.mu.Unlock()
		case st.Send != "":
			sess.enqueue(false, []byte(st.Send))
		case st.SendBinary != "":
			sess.c.Write(sess.ctx, websocket.MessageBinary, []byte(st.SendBinary))
		case st.GoAway != nil:
			b, _ := wire.HostFrame{T: wire.TypeGoAway, URI: *st.GoAway}.Encode()
			sess.enqueue(false, b)
		case st.SleepMs > 0:
			select {
			case <-time.After(time.Duration(st.SleepMs) * time.Millisecond):
			case <-sess.ctx.Done():
				return
			}
		case st.Close != 0:
			sess.flush()
			sess.end(st.Close, st.Reason)
			return
		case st.Drop:
			sess.flush()
			sess.end(0, "")
			return
		}
	}
}

// flush waits, briefly, until the writer has written every frame queued before it, so that
// a scripted close follows the frames scripted before it. It waits for a marker the writer
// reaches only after those writes returned: an empty queue is not enough, since the writer
// takes a batch before writing it, and a Close racing that Write could put the close frame
// first (the frame was then lost: a refusal's error frame, in a CI run).
func (sess *session) flush() {
	done := make(chan struct{})
	sess.push(outFrame{flushed: done})
	t := time.NewTimer(time.Second) // a peer that stopped reading blocks the writer: close all the same
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	case <-sess.ctx.Done():
	}
}

func (sess *session) reader() {
	defer sess.cancel()
	for {
		_, b, err := sess.c.Read(sess.ctx)
		if err != nil {
			return
		}
		f, err := wire.DecodePage(b)
		if err != nil {
			sess.c.Close(websocket.StatusProtocolError, "testserver: "+err.Error())
			return
		}
		sess.sc.mu.Lock()
		sess.h.stats.Received = append(sess.h.stats.Received, f)
		sess.sc.touch()
		sess.sc.mu.Unlock()
		sess.mu.Lock()
		serving := sess.serving
		if !serving {
			sess.waiting = append(sess.waiting, f)
		}
		sess.mu.Unlock()
		if serving {
			sess.serve(f)
		}
	}
}

// serve answers a sub (replay from the cursor, or a reset) or an unsub.
func (sess *session) serve(f wire.PageFrame) {
	sc := sess.sc
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if f.T == wire.TypePing {
		sess.mu.Lock()
		old := sess.noPing
		sess.mu.Unlock()
		if old {
			b, _ := wire.HostFrame{T: wire.TypeError, Message: `wire: bad frame: unknown type "ping"`}.Encode()
			sess.enqueue(false, b)
			return
		}
		b, _ := wire.HostFrame{T: wire.TypeHeartbeat}.Encode()
		sess.enqueue(true, b) // a silent session does not answer: that is what a liveness probe finds out
		return
	}
	l := sc.log(f.Stream)
	if f.T == wire.TypeUnsub {
		delete(l.subs, sess)
		delete(sess.subs, f.Stream)
		return
	}
	if f.Epoch == l.epoch && f.After <= l.last && f.After+1 >= l.first {
		for i := f.After + 1; i <= l.last; i++ {
			b, _ := wire.HostFrame{T: wire.TypeEvent, Stream: f.Stream, Seq: i, Data: wire.RawJSON(l.events[i-l.first])}.Encode()
			sess.enqueue(true, b)
		}
	} else {
		sess.enqueue(true, resetFrame(f.Stream, l))
	}
	l.subs[sess] = struct{}{}
	sess.subs[f.Stream] = true
}

// writer sends queued frames in order, and a heartbeat when a serving session was idle.
func (sess *session) writer() {
	defer sess.cancel()
	hb := time.NewTimer(time.Hour)
	defer hb.Stop()
	for {
		sess.mu.Lock()
		batch := sess.out
		sess.out = nil
		silent, beat, period := sess.silent, sess.ready && sess.serving && !sess.silent, sess.hb
		sess.mu.Unlock()
		for _, f := range batch {
			if f.flushed != nil {
				close(f.flushed)
				continue
			}
			if f.log && silent {
				continue
			}
			if err := sess.c.Write(sess.ctx, websocket.MessageText, f.b); err != nil {
				return
			}
		}
		if len(batch) > 0 {
			continue
		}
		hb.Reset(period)
		select {
		case <-sess.ctx.Done():
			return
		case <-sess.signal:
		case <-hb.C:
			if beat {
				b, _ := wire.HostFrame{T: wire.TypeHeartbeat}.Encode()
				if err := sess.c.Write(sess.ctx, websocket.MessageText, b); err != nil {
					return
				}
			}
		}
	}
}
