//go:build !js

package main

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/coder/websocket"

	"github.com/lifeline-go/lifeline/internal/test/testbed"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// The presence run (-presence): a 3-node NATS cluster and three bin/host processes sharing it
// (the demo: pages are who their cookie lifeline-demo-user says, room.* carries presence),
// with pages as plain lifeline.v1 sockets watching one room. It checks that
//   - pages on three Hosts see each other, and one identity on two Hosts is one member with
//     a count of 2;
//   - a Host SIGKILLed: its members leave every other Host's pages within the grace window
//     and a heartbeat of the kill (and an identity it shared with a living Host stays, its
//     count down to 1);
//   - the NATS node leading the ticks stream SIGKILLed: no one leaves, and a page that joins
//     afterwards is seen on every living Host;
//   - a rolling restart (SIGTERM with -drain-on-stop: each page told goaway moves to another
//     Host make-before-break): no one leaves or joins.
//
//	go run ./e2e/fleet -presence

const (
	presenceRoom  = "room.e2e"
	presenceGrace = 5 * time.Second // the Hosts' presenceGraceMs
	// presenceHeartbeat is the fleet's heartbeat (hostplugin's presenceHeartbeat).
	presenceHeartbeat = time.Second
	// presenceSeen bounds a join reaching every page of the fleet: the Host's batches (20 ms
	// to the fleet, 20 ms to its pages) on a loaded machine.
	presenceSeen = 2 * time.Second
)

func (f *fleet) runPresence() error {
	var err error
	if f.dir, err = os.MkdirTemp("", "lifeline-presence-"); err != nil {
		return err
	}
	f.bed = testbed.New(f.dir)
	defer f.bed.StopOnSignal("fleet -presence (logs in "+f.dir+")", 15*time.Second)()
	f.bin = filepath.Join(f.dir, "bin")
	logf("building into %s", f.bin)
	for _, pkg := range []string{"./cmd/host", "./e2e/fleet/natsnode"} {
		cmd := exec.Command("go", "build", "-tags", "lifeline_faults", "-o", f.bin+"/", pkg)
		cmd.Stderr = os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("go build %s: %w", pkg, err)
		}
	}
	var urls []string
	for i := range 3 {
		f.natsAddr[i], f.routeAddr[i], f.hostAddr[i], f.metricsAddr[i] = freeAddr(), freeAddr(), freeAddr(), freeAddr()
		urls = append(urls, "nats://"+f.natsAddr[i])
	}
	f.natsURLs = strings.Join(urls, ",")
	f.hostConfig = filepath.Join(f.dir, "host.json")
	if err := os.WriteFile(f.hostConfig, fmt.Appendf(nil, `{"presenceGraceMs":%d}`, presenceGrace.Milliseconds()), 0o644); err != nil {
		return err
	}
	for i := range 3 {
		if err := f.startNATS(i); err != nil {
			return err
		}
	}
	for i := range 3 {
		if err := waitTCP(f.natsAddr[i], 30*time.Second); err != nil {
			return err
		}
	}
	logf("NATS cluster up: %s", f.natsURLs)
	for i := range 3 {
		if err := f.startHost(i); err != nil {
			return err
		}
	}
	logf("Hosts up: %v", f.hostAddr)
	time.Sleep(2 * presenceHeartbeat) // every Host has heard the others

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	open := func(host int, user string) (*presencePage, error) {
		return dialPresence(ctx, "ws://"+f.hostAddr[host]+wire.DefaultPath, user, fmt.Sprintf("h%d", host+1))
	}
	// ann on h1, ben on h2, cat on h3; dan on h1 and h2.
	var pages []*presencePage
	for _, p := range []struct {
		host int
		user string
	}{{0, "ann"}, {1, "ben"}, {2, "cat"}, {0, "dan"}, {1, "dan"}} {
		pg, err := open(p.host, p.user)
		if err != nil {
			return err
		}
		pages = append(pages, pg)
	}
	start := time.Now()
	all := map[string]int{"ann": 1, "ben": 1, "cat": 1, "dan": 2}
	if err := waitPages("every page to show ann, ben, cat and dan (2)", presenceSeen+presenceHeartbeat, pages, all); err != nil {
		return err
	}
	logf("presence: 5 pages on 3 Hosts show the 4 members %v after they subscribed (a second session of one member shows once it has held for 1 s)", time.Since(start).Round(time.Millisecond))

	// SIGKILL h2: ben leaves, dan's count goes down to 1, everywhere else.
	survivors := []*presencePage{pages[0], pages[2], pages[3]}
	marks := make([]int, len(survivors))
	for i, p := range survivors {
		marks[i] = p.mark()
	}
	logf("presence: SIGKILL h2 (ben, and one of dan's two sessions)")
	killed := time.Now()
	f.hosts[1].signal(syscall.SIGKILL)
	if err := f.hosts[1].wait(10 * time.Second); err != nil {
		return err
	}
	after := map[string]int{"ann": 1, "cat": 1, "dan": 1}
	bound := presenceGrace + presenceHeartbeat + presenceSeen
	if err := waitPages("ben to leave and dan to count 1 on every living Host", bound, survivors, after); err != nil {
		return err
	}
	for i, p := range survivors {
		ch := p.since(marks[i])
		var leftAt time.Time
		for _, c := range ch {
			if slices.Contains(c.left, "ben") {
				leftAt = c.at
			}
			if len(c.joined) > 0 || (len(c.left) > 0 && !slices.Equal(c.left, []string{"ben"})) {
				return fmt.Errorf("%s's page on %s saw %+v after h2's SIGKILL: only ben may leave", p.user, p.where(), c)
			}
		}
		took := leftAt.Sub(killed)
		logf("  %s's page on %s: ben left %v after the kill (grace window %v, heartbeat %v)", p.user, p.where(), took.Round(time.Millisecond), presenceGrace, presenceHeartbeat)
		if took < presenceGrace-presenceHeartbeat || took > presenceGrace+presenceHeartbeat+200*time.Millisecond {
			return fmt.Errorf("ben left %s's page %v after his Host's SIGKILL; want within the grace window and a heartbeat (%v ± %v)", p.user, took, presenceGrace, presenceHeartbeat)
		}
	}

	// SIGKILL the NATS node leading the ticks stream: nobody leaves.
	info, err := ticksStream(f.natsURLs)
	if err != nil {
		return fmt.Errorf("finding the ticks stream's leader: %w", err)
	}
	victim := -1
	for i := range 3 {
		if info.leader == fmt.Sprintf("n%d", i+1) {
			victim = i
		}
	}
	if victim < 0 {
		return fmt.Errorf("the ticks stream's leader %q is none of n1–n3", info.leader)
	}
	for i, p := range survivors {
		marks[i] = p.mark()
	}
	logf("presence: SIGKILL NATS node %s, the ticks stream's leader", info.leader)
	f.nats[victim].signal(syscall.SIGKILL)
	if err := f.nats[victim].wait(10 * time.Second); err != nil {
		return err
	}
	time.Sleep(presenceGrace + 2*presenceHeartbeat) // any leave would show by now
	eve, err := open(2, "eve")
	if err != nil {
		return err
	}
	after["eve"] = 1
	if err := waitPages("eve, who joined on h3 after the NATS kill, to show on every living Host", presenceSeen+presenceHeartbeat, append(survivors, eve), after); err != nil {
		return err
	}
	for i, p := range survivors {
		for _, c := range p.since(marks[i]) {
			if len(c.left) > 0 || !slices.Equal(c.joined, []string{"eve"}) && len(c.joined) > 0 {
				return fmt.Errorf("%s's page on %s saw %+v after the NATS node's SIGKILL: only eve may join", p.user, p.where(), c)
			}
		}
	}
	logf("presence: no one left through the loss of NATS node %s; eve's join reached every living Host", info.leader)

	// A rolling restart: h2 comes back, then h1 and h3 in turn drain (SIGTERM, -drain-on-stop:
	// a goaway to each page, which moves to h2 make-before-break), stop and start again.
	live := append(survivors, eve)
	marks = make([]int, len(live))
	for i, p := range live {
		marks[i] = p.mark()
		p.moveOnGoAway(f, 1)
	}
	if err := f.startHost(1); err != nil {
		return err
	}
	time.Sleep(2 * presenceHeartbeat)
	for _, i := range []int{0, 2} {
		logf("presence: rolling restart: SIGTERM h%d (its pages move to h2), then start it again", i+1)
		f.hosts[i].signal(syscall.SIGTERM)
		if err := f.hosts[i].wait(30 * time.Second); err != nil {
			return fmt.Errorf("h%d did not stop after its SIGTERM: %w", i+1, err)
		}
		if err := f.startHost(i); err != nil {
			return err
		}
		time.Sleep(2 * presenceHeartbeat)
	}
	time.Sleep(presenceGrace + 2*presenceHeartbeat) // any leave would show by now
	if err := waitPages("every page to show the same four after the rolling restart", presenceSeen, live, after); err != nil {
		return err
	}
	for i, p := range live {
		if where := p.where(); where != "h2" {
			return fmt.Errorf("%s's page is on %s after the rolling restart, want h2: it never moved", p.user, where)
		}
		for _, c := range p.since(marks[i]) {
			if len(c.left) > 0 || len(c.joined) > 0 {
				return fmt.Errorf("%s's page saw %+v through the rolling restart: no one may leave or join", p.user, c)
			}
		}
	}
	logf("presence: through a rolling restart of h1 and h3 (their pages moved to h2) no one left or joined")
	return nil
}

// waitPages waits until every page shows want, or says what each shows after d.
func waitPages(what string, d time.Duration, pages []*presencePage, want map[string]int) error {
	ok := testbed.Poll(context.Background(), d, 20*time.Millisecond, func() bool {
		for _, p := range pages {
			if !maps.Equal(p.who(), want) {
				return false
			}
		}
		return true
	})
	if ok {
		return nil
	}
	var b strings.Builder
	for _, p := range pages {
		fmt.Fprintf(&b, "; %s on %s shows %v", p.user, p.where(), p.who())
	}
	return fmt.Errorf("timed out after %v waiting for %s%s", d, what, b.String())
}

// presencePage is a page watching presenceRoom: what it shows, and each batch that changed it.
type presencePage struct {
	user string
	ctx  context.Context

	mu       sync.Mutex
	host     string
	gen      int    // the session whose frames are applied
	moveTo   string // where a goaway sends it (""; stays)
	moveHost string
	shows    map[string]int
	batch    []wire.HostFrame
	changes  []presenceChange
	err      error
}

type presenceChange struct {
	at           time.Time
	joined, left []string
}

// dialPresence connects as user and subscribes presenceRoom with its presence.
func dialPresence(ctx context.Context, url, user, host string) (*presencePage, error) {
	p := &presencePage{user: user, shows: map[string]int{}, ctx: ctx}
	if err := p.connect(url, host); err != nil {
		return nil, err
	}
	return p, nil
}

// connect opens a session at url and subscribes it; from then on only its frames are applied.
func (p *presencePage) connect(url, host string) error {
	dctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(dctx, url, &websocket.DialOptions{
		Subprotocols: []string{wire.Subprotocol},
		HTTPHeader:   http.Header{"Cookie": {"lifeline-demo-user=" + p.user}},
	})
	if err != nil {
		return fmt.Errorf("%s dialing %s: %w", p.user, host, err)
	}
	conn.SetReadLimit(1 << 20)
	b, _ := wire.PageFrame{T: wire.TypeSub, Stream: presenceRoom, Presence: true}.Encode()
	if err := conn.Write(dctx, websocket.MessageText, b); err != nil {
		_ = conn.CloseNow()
		return fmt.Errorf("%s subscribing on %s: %w", p.user, host, err)
	}
	p.mu.Lock()
	p.gen++
	gen := p.gen
	p.host, p.batch = host, nil
	p.mu.Unlock()
	go p.read(conn, gen)
	return nil
}

// read applies the frames of one session; a goaway moves the page to moveTo, make-before-break
// (the new session is subscribed before this one closes), as a page's gateway does.
func (p *presencePage) read(conn *websocket.Conn, gen int) {
	defer conn.CloseNow()
	for {
		_, b, err := conn.Read(p.ctx)
		if err != nil {
			return
		}
		f, err := wire.DecodeHost(b)
		if err != nil {
			p.mu.Lock()
			p.err = err
			p.mu.Unlock()
			return
		}
		switch {
		case f.T == wire.TypePresence && f.Reason == "":
			p.mu.Lock()
			if p.gen == gen {
				p.applyLocked(f, time.Now())
			}
			p.mu.Unlock()
		case f.T == wire.TypeGoAway:
			p.mu.Lock()
			to, host := p.moveTo, p.moveHost
			p.mu.Unlock()
			if to == "" {
				continue
			}
			if err := p.connect(to, host); err != nil {
				p.mu.Lock()
				p.err = err
				p.mu.Unlock()
			}
			return
		}
	}
}

// applyLocked applies a presence frame as the page's gateway does: a batch once its last frame is
// in; a snapshot as a diff against what it shows.
func (p *presencePage) applyLocked(f wire.HostFrame, at time.Time) {
	p.batch = append(p.batch, f)
	if f.More {
		return
	}
	next := maps.Clone(p.shows)
	if p.batch[0].Snapshot {
		next = map[string]int{}
	}
	for _, fr := range p.batch {
		for _, m := range fr.Members {
			next[m.ID] = m.Count
		}
		for _, id := range fr.Left {
			delete(next, id)
		}
	}
	ch := presenceChange{at: at}
	for id := range next {
		if _, ok := p.shows[id]; !ok {
			ch.joined = append(ch.joined, id)
		}
	}
	for id := range p.shows {
		if _, ok := next[id]; !ok {
			ch.left = append(ch.left, id)
		}
	}
	slices.Sort(ch.joined)
	slices.Sort(ch.left)
	if len(ch.joined)+len(ch.left) > 0 {
		p.changes = append(p.changes, ch)
	}
	p.shows, p.batch = next, nil
}

func (p *presencePage) where() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.host
}

// moveOnGoAway sends the page to Host i of f when its Host says goaway.
func (p *presencePage) moveOnGoAway(f *fleet, i int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.moveTo, p.moveHost = "ws://"+f.hostAddr[i]+wire.DefaultPath, fmt.Sprintf("h%d", i+1)
}

func (p *presencePage) who() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.shows)
}

// mark is where the page's changes are now, for since.
func (p *presencePage) mark() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.changes)
}

func (p *presencePage) since(mark int) []presenceChange {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.changes[mark:])
}
