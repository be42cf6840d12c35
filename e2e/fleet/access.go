//go:build !js

package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/lifeline-go/lifeline/internal/swarmline"
	"github.com/lifeline-go/lifeline/internal/test/testbed"
)

// The access step: pages of one user on all three Hosts behind nginx (native clients pinned to
// each Host through nginx's /h1/, /h2/, /h3/, and Chromium pages through its round robin), and
// pages of another user; a sign-out asked of one Host (bin/host -signouts: the credential
// first, then Host.EndSessions, which the fleet's bus carries to the other Hosts) must show
// every page of the user unauthorized within accessWithin, and nothing of the ticks stream may
// reach them after; the other user's pages carry on.

const (
	accessUser    = "alice"
	accessOther   = "bob"
	accessPerHost = 4               // alice's native clients on each Host
	accessPages   = 2               // alice's Chromium pages
	accessWithin  = time.Second     // the bound, from the call to the last page
	accessAfter   = 3 * time.Second // how long nothing may arrive after the end
	accessReason  = "Signed out on another device."
)

// accessState reads the step's clients (swarm lines, by process) and pages (pages.cjs lines).
type accessState struct {
	mu        sync.Mutex
	connected map[string]bool      // client (process/id) → connected
	ended     map[string]time.Time // client → when it became unauthorized
	after     map[string]int       // client → deliveries after it became unauthorized
	drops     int                  // the other user's disconnects
	pageState map[int]string
	pageEnded map[int]time.Time
	pageHosts map[int]string
	pagesUp   bool
	fatal     string
}

func newAccessState() *accessState {
	return &accessState{connected: map[string]bool{}, ended: map[string]time.Time{}, after: map[string]int{},
		pageState: map[int]string{}, pageEnded: map[int]time.Time{}, pageHosts: map[int]string{}}
}

// client returns the line reader of the swarm process named proc; other is the user whose pages
// must carry on.
func (s *accessState) client(proc string, other bool) func([]byte) {
	return func(b []byte) {
		l, err := swarmline.Decode(b)
		if err != nil {
			return
		}
		key := fmt.Sprintf("%s/%d", proc, l.ID)
		s.mu.Lock()
		defer s.mu.Unlock()
		switch l.Event {
		case swarmline.Connected:
			s.connected[key] = true
		case swarmline.Disconnected:
			s.connected[key] = false
			if other {
				s.drops++
			}
		case swarmline.Unauthorized:
			if _, ok := s.ended[key]; !ok && !other {
				s.ended[key] = l.At()
			}
		case swarmline.Delivery:
			if at, ok := s.ended[key]; ok && l.At().After(at) {
				s.after[key]++
			}
		}
	}
}

// page reads pages.cjs's lines.
func (s *accessState) page(b []byte) {
	var l struct {
		T     int64
		Page  int
		State string
		Host  string
		Ready bool
		Fatal string
	}
	if json.Unmarshal(b, &l) != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case l.Ready:
		s.pagesUp = true
	case l.Fatal != "":
		s.fatal = l.Fatal
	case l.State != "":
		s.pageState[l.Page] = l.State
		if l.Host != "" {
			s.pageHosts[l.Page] = l.Host
		}
		if _, ok := s.pageEnded[l.Page]; !ok && l.State == "unauthorized" {
			s.pageEnded[l.Page] = time.UnixMilli(l.T)
		}
	}
}

func (s *accessState) count(pred func(s *accessState) int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return pred(s)
}

func (f *fleet) accessStep() error {
	st := newAccessState()
	var procs []*proc
	defer func() {
		for _, p := range procs {
			_ = p.Stop(15 * time.Second)
		}
	}()
	base := "ws://127.0.0.1:" + f.proxyPort
	for i := range 3 {
		name := fmt.Sprintf("alice-h%d", i+1)
		p, err := f.start(name, &testbed.Options{Lines: st.client(name, false)}, f.bin+"/swarm",
			"-url", fmt.Sprintf("%s/h%d/_lifeline/events", base, i+1), "-n", fmt.Sprint(accessPerHost),
			"-user", accessUser, "-sub", "ticks", "-deliveries")
		if err != nil {
			return err
		}
		procs = append(procs, p)
	}
	p, err := f.start("bob", &testbed.Options{Lines: st.client("bob", true)}, f.bin+"/swarm",
		"-url", base+"/_lifeline/events", "-n", "6", "-user", accessOther, "-sub", "ticks")
	if err != nil {
		return err
	}
	procs = append(procs, p)
	p, err = f.start("alice-pages", &testbed.Options{Lines: st.page, DeathSig: syscall.SIGTERM},
		"node", "e2e/fleet/pages.cjs", "http://127.0.0.1:"+f.proxyPort+"/", fmt.Sprint(accessPages), accessUser)
	if err != nil {
		return err
	}
	procs = append(procs, p)
	if err := f.waitFor("alice's and bob's clients and alice's pages connected", 60*time.Second, func() bool {
		return st.count(func(s *accessState) int {
			n := 0
			for _, up := range s.connected {
				if up {
					n++
				}
			}
			if !s.pagesUp {
				return 0
			}
			return n
		}) == 3*accessPerHost+6
	}); err != nil {
		return err
	}
	if fatal := st.count(func(s *accessState) int { return len(s.fatal) }); fatal > 0 {
		return fmt.Errorf("access: the pages driver failed: %s", st.fatal)
	}
	time.Sleep(2 * time.Second) // ticks flowing
	logf("access: %d of alice's clients on each Host, her %d pages on %v, 6 of bob's; signing alice out at h1",
		accessPerHost, accessPages, st.pageHosts)

	called := time.Now()
	url := fmt.Sprintf("http://%s/_lifeline/signout?user=%s&reason=%s", f.hostAddr[0], accessUser, "Signed+out+on+another+device.")
	res, err := http.Post(url, "", nil)
	if err != nil {
		return fmt.Errorf("access: the sign-out: %w", err)
	}
	var ans struct {
		Ended int
		Ms    float64
		Error string
	}
	_ = json.NewDecoder(res.Body).Decode(&ans)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || ans.Error != "" {
		return fmt.Errorf("access: the sign-out answered %d %+v", res.StatusCode, ans)
	}
	total := 3*accessPerHost + accessPages
	if err := f.waitFor("every page of alice unauthorized", 10*time.Second, func() bool {
		return st.count(func(s *accessState) int { return len(s.ended) + len(s.pageEnded) }) == total
	}); err != nil {
		return err
	}
	time.Sleep(accessAfter)
	st.mu.Lock()
	defer st.mu.Unlock()
	var lat []time.Duration
	for _, at := range st.ended {
		lat = append(lat, at.Sub(called))
	}
	for _, at := range st.pageEnded {
		lat = append(lat, at.Sub(called))
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	p99 := lat[len(lat)*99/100]
	logf("access: h1 ended %d of alice's sessions itself in %.1f ms; all %d of her pages on 3 Hosts unauthorized: median %v, p99 %v, last %v after the call",
		ans.Ended, ans.Ms, total, lat[len(lat)/2].Round(time.Millisecond), p99.Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond))
	if last := lat[len(lat)-1]; last > accessWithin {
		return fmt.Errorf("access: the last page of alice was unauthorized %v after the call, over %v", last, accessWithin)
	}
	for k, n := range st.after {
		if n > 0 {
			return fmt.Errorf("access: client %s received %d deliveries after its end", k, n)
		}
	}
	for page, state := range st.pageState {
		if state != "unauthorized" {
			return fmt.Errorf("access: alice's page %d shows %s %v after the end, want unauthorized", page, state, accessAfter)
		}
	}
	for k, up := range st.connected {
		if up && k[:5] == "alice" {
			return fmt.Errorf("access: alice's client %s connected again after signing out", k)
		}
	}
	if st.drops > 0 {
		return fmt.Errorf("access: bob's clients saw %d disconnects", st.drops)
	}
	return nil
}
