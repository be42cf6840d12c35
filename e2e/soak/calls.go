//go:build !js

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lifeline-go/lifeline/gateway"
	"github.com/lifeline-go/lifeline/internal/swarmline"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// The calls (exactly once for a keyed call, at most once otherwise, through any fault): every client makes the soak's calls, every other one keyed, through
// the faults; bin/host -ledger counts the handler's runs in a file all the soak's Hosts share,
// which survives their kills and handoffs. Each call is then held to what its Promise said:
//
//   - keyed: resolved with its own data, and run exactly once. The one exception is the
//     guarantee table's plain restart: a Host A killed while the call was outstanding takes
//     its in-memory dedup store with it, so the page, back on a Host of another epoch, rejects
//     the call timeout (it cannot learn whether it ran) rather than risk a second run; such a call may have run once, and
//     each is counted and reported. It is admitted only if it was outstanding during a kill
//     (made before the kill's recovery ended, its outcome after the kill began) and was sent
//     under a dedup epoch that answered calls before the kill (not the restarted Host's).
//     (With a dedup store the Hosts share, whose epoch survives the kill, only a run its Host
//     died in stays unknown: the store answers it interrupted once the dead claim's lease is
//     over, or the page's timeout comes first; the same rule admits that, and nothing else.)
//   - unkeyed: resolved and run once, or rejected interrupted or timeout and run at most once,
//     or rejected not-run and never run.
//   - every call: an outcome, printed once; none run twice; none run that its Promise says
//     was never sent; no run of a call nobody made; and no call rejected while a SIGUSR2
//     handoff or a GOAWAY move was in progress (make-before-break: the draining session
//     finishes its calls).

// keyedShare is the fraction of the calls that are keyed.
const keyedShare = 0.5

// callsInFlight is bin/swarm's -calls-in-flight: how many calls of a client may wait at once,
// to be sent or for their reply (during a fault), before its later ones wait their turn. It
// bounds the burst of calls a client sends when it is back.
const callsInFlight = 4

// callPrefix is the -call-prefix of client process p: the ledger's runs name their process.
func callPrefix(p int) string { return "p" + strconv.Itoa(p) }

// callSeen is one call's outcome, as its client printed it.
type callSeen struct {
	done    bool
	made    float64 // ms, when the call was made
	at      float64 // ms, when the outcome came
	keyed   bool
	kind    string // "" for a reply
	sent    bool
	code    string
	replyOK bool // the reply is the call's own data
	message string
	epoch   string
}

// callID is the data, and the key when keyed, of call k of client local of process proc (as
// bin/swarm -call-prefix makes them).
func callID(proc, local, k int) string { return fmt.Sprintf("%s/%d/%d", callPrefix(proc), local, k) }

// callLine records a call line of client m. tr.mu is held.
func (tr *tracker) callLine(m *member, ev swarmline.Line) {
	if ev.Call < 0 || ev.Call >= len(m.calls) {
		tr.issue("%s: call %d outcome, but the clients make %d calls", m.name, ev.Call, len(m.calls))
		return
	}
	c := &m.calls[ev.Call]
	if c.done {
		tr.issue("%s: call %d has a second outcome (%s after %s)", m.name, ev.Call, outcomeText(ev.Kind, ev.Sent), outcomeText(c.kind, c.sent))
		return
	}
	want, _ := json.Marshal(callID(m.proc, m.local, ev.Call))
	*c = callSeen{done: true, made: ev.Made, at: ev.T, keyed: ev.Keyed, kind: ev.Kind, sent: ev.Sent, code: ev.Code,
		replyOK: string(ev.Reply) == string(want), message: ev.Message, epoch: ev.Epoch}
}

// callsPending counts the calls without an outcome yet.
func (tr *tracker) callsPending() int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	n := 0
	for _, m := range tr.members {
		for _, c := range m.calls {
			if !c.done {
				n++
			}
		}
	}
	return n
}

// span is a stretch of the soak: a fault, from its injection to the end of its recovery.
type span struct {
	kind     string
	from, to float64 // ms
}

// killedDuring reports whether the call c, sent under a dedup epoch that first answered a
// call at since, was outstanding while Host A was killed, and sent to a Host alive before.
func killedDuring(spans []span, c callSeen, since float64) bool {
	for _, s := range spans {
		if s.kind == "kill" && c.made <= s.to && c.at >= s.from && since < s.from {
			return true
		}
	}
	return false
}

// spanAt names the fault in progress at t: "quiet" between faults.
func spanAt(spans []span, t float64) string {
	for _, s := range spans {
		if t >= s.from && t <= s.to {
			return s.kind
		}
	}
	return "quiet"
}

// ledgerCount is one count of bin/host's /_lifeline/ledger.
type ledgerCount struct {
	Identity string          `json:"identity"`
	Key      string          `json:"key"`
	Data     json.RawMessage `json:"data"`
	Runs     int             `json:"runs"`
}

// getLedger reads the runs the Host at base counted (bin/host -ledger).
func getLedger(ctx context.Context, base string) ([]ledgerCount, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/_lifeline/ledger", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("soak: the ledger of %s: %w", base, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("soak: the ledger of %s: %s %s %v", base, resp.Status, wire.Truncate(string(b)), err)
	}
	var l struct{ Counts []ledgerCount }
	if err := json.Unmarshal(b, &l); err != nil {
		return nil, fmt.Errorf("soak: the ledger of %s: %w", base, err)
	}
	return l.Counts, nil
}

// callTotals is what the calls came to, [0] unkeyed and [1] keyed.
type callTotals struct {
	made, resolved, interrupted, notRun, timeout, other, lost [2]int
	ran0, ran1, ran2                                          [2]int // by the ledger: never, once, twice or more
	rejectedIn                                                map[string]*[2]int
	keyedKilled                                               [3]int // keyed, outcome unknown across a kill: interrupted by the page (the epoch changed), by the store, timed out
	epochs                                                    int    // dedup epochs that answered calls
	strays                                                    int    // runs of calls no client made
	failures                                                  []string
	nFailures                                                 int
}

func (t *callTotals) fail(format string, args ...any) {
	t.nFailures++
	if len(t.failures) < 10 {
		t.failures = append(t.failures, fmt.Sprintf(format, args...))
	}
}

// checkCalls holds every call to the rules above, with the runs the ledger counted and the
// faults in progress when each outcome came.
func (tr *tracker) checkCalls(counts []ledgerCount, spans []span) callTotals {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	t := callTotals{rejectedIn: map[string]*[2]int{}}
	type ran struct {
		runs  int
		keyed bool
	}
	runs := map[string]ran{}
	for _, c := range counts {
		id := c.Key
		if id == "" && json.Unmarshal(c.Data, &id) != nil {
			t.strays += c.Runs
			t.fail("the ledger counts %d runs of a call with the data %s, which no client makes", c.Runs, wire.Truncate(string(c.Data)))
			continue
		}
		runs[id] = ran{c.Runs, c.Key != ""}
	}
	// When each dedup epoch first answered a call: a keyed call the kill of Host A may leave
	// unknown was sent to a Host alive before the kill.
	since := map[string]float64{}
	for _, m := range tr.members {
		for _, c := range m.calls {
			if first, ok := since[c.epoch]; c.done && c.kind == "" && (!ok || c.at < first) {
				since[c.epoch] = c.at
			}
		}
	}
	for _, m := range tr.members {
		for k, c := range m.calls {
			id := callID(m.proc, m.local, k)
			r, counted := runs[id]
			delete(runs, id)
			keyed := c.keyed
			if !c.done {
				keyed = r.keyed
			}
			x := 0
			if keyed {
				x = 1
			}
			t.made[x]++
			switch {
			case r.runs == 0:
				t.ran0[x]++
			case r.runs == 1:
				t.ran1[x]++
			default:
				t.ran2[x]++
				t.fail("%s call %d (keyed %v) ran %d times", m.name, k, keyed, r.runs)
			}
			if counted && r.keyed != keyed {
				t.fail("%s call %d: the client says keyed %v, the ledger counted it keyed %v", m.name, k, keyed, r.keyed)
			}
			if !c.done {
				t.lost[x]++
				t.fail("%s call %d (keyed %v) has no outcome (ran %d times)", m.name, k, keyed, r.runs)
				continue
			}
			if c.kind == "" {
				t.resolved[x]++
				if !c.replyOK {
					t.fail("%s call %d (keyed %v) resolved with a reply that is not its data", m.name, k, keyed)
				}
				if r.runs != 1 {
					t.fail("%s call %d (keyed %v) resolved, but ran %d times", m.name, k, keyed, r.runs)
				}
				continue
			}
			during := spanAt(spans, c.at)
			in := t.rejectedIn[during]
			if in == nil {
				in = &[2]int{}
				t.rejectedIn[during] = in
			}
			in[x]++
			if (!c.sent || c.kind == gateway.CallNotRun) && r.runs > 0 {
				t.fail("%s call %d (keyed %v) rejected %s as never run, but ran %d times", m.name, k, keyed, outcomeText(c.kind, c.sent), r.runs)
			}
			switch c.kind {
			case gateway.CallInterrupted:
				t.interrupted[x]++
			case gateway.CallNotRun:
				t.notRun[x]++
			case gateway.CallTimeout:
				t.timeout[x]++
			default:
				t.other[x]++
			}
			allowed := c.kind == gateway.CallInterrupted || c.kind == gateway.CallTimeout || c.kind == gateway.CallNotRun && !keyed
			if keyed {
				// Only a kill of Host A while it was outstanding leaves its outcome unknown.
				first, known := since[c.epoch]
				allowed = allowed && c.sent && known && killedDuring(spans, c, first)
				switch {
				case !allowed:
				case c.kind == gateway.CallTimeout:
					t.keyedKilled[2]++
				case c.code == wire.CodeInterrupted:
					t.keyedKilled[1]++
				default:
					t.keyedKilled[0]++
				}
			}
			if during == "handoff" || during == "goaway" {
				allowed = false // make-before-break: the draining session finishes its calls
			}
			if !allowed {
				t.fail("%s call %d (keyed %v) rejected %s during %s: %s", m.name, k, keyed, outcomeText(c.kind, c.sent), during, wire.Truncate(c.message))
			}
		}
	}
	delete(since, "")
	t.epochs = len(since)
	for _, id := range slices.Sorted(maps.Keys(runs)) {
		t.strays += runs[id].runs
		t.fail("the ledger counts %d runs of %q, a call no client made", runs[id].runs, id)
	}
	return t
}

func outcomeText(kind string, sent bool) string {
	switch {
	case kind == "":
		return "resolved"
	case sent:
		return kind + " (sent)"
	}
	return kind + " (not sent)"
}

// callsTable prints what the calls came to.
func callsTable(w io.Writer, t callTotals) {
	fmt.Fprintln(w, "calls\tmade\tresolved\tinterrupted\tnot-run\ttimeout\tother\tlost\tran 0\tran once\tran twice+\t")
	for x, name := range []string{"unkeyed", "keyed"} {
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", name, t.made[x], t.resolved[x], t.interrupted[x],
			t.notRun[x], t.timeout[x], t.other[x], t.lost[x], t.ran0[x], t.ran1[x], t.ran2[x])
	}
}

// rejectionsText says in which faults the rejected calls were rejected.
func rejectionsText(t callTotals) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(t.rejectedIn)) {
		n := t.rejectedIn[k]
		parts = append(parts, fmt.Sprintf("%s %d unkeyed + %d keyed", k, n[0], n[1]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
