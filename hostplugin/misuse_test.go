//go:build !js

package hostplugin_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// The wirings an embedder could get wrong, each made impossible or loud.

// A Host is no http.Handler of its own: served as one (http.ListenAndServe(addr, h)) it would
// answer the events endpoint at every path and inject nothing. Handler is the way in.
func TestAHostIsNotAHandlerOfItsOwn(t *testing.T) {
	h, _ := newHost(t, `{}`)
	if _, ok := any(h).(http.Handler); ok {
		t.Error("*hostplugin.Host is an http.Handler: http.ListenAndServe(addr, h) would compile and serve no page")
	}
}

func TestHandlerOfNoApplicationPanicsNamingTheFix(t *testing.T) {
	h, _ := newHost(t, `{}`)
	defer func() {
		p := recover()
		if msg := fmt.Sprint(p); p == nil || !strings.Contains(msg, "http.NotFoundHandler()") {
			t.Errorf("Handler(nil) panicked with %v, want a message naming http.NotFoundHandler()", p)
		}
	}()
	h.Handler(nil)
}

// Who may read which stream is the application's decision, written down: "everyone" too.
func TestNewRefusesOptionsWithoutAuthorize(t *testing.T) {
	for name, opts := range map[string]*hostplugin.Options{
		"nil options":             nil,
		"options without it":      {Authenticate: func(*http.Request) (string, error) { return "u", nil }},
		"every other option, too": {NoClient: true, Log: hostplugin.NewRing(4)},
	} {
		h, err := hostplugin.New(hostplugin.DefaultConfig(), opts)
		if err == nil {
			_ = h.Close()
			t.Errorf("%s: New succeeded, want a refusal: every page could read every stream", name)
			continue
		}
		if !strings.Contains(err.Error(), "Options.Authorize") || !strings.Contains(err.Error(), "hostplugin.PublicStreams") {
			t.Errorf("%s: New error %q, want it to name Options.Authorize and hostplugin.PublicStreams", name, err)
		}
	}
	h, err := hostplugin.New(hostplugin.DefaultConfig(), &hostplugin.Options{Authorize: hostplugin.PublicStreams})
	if err != nil {
		t.Fatalf("New with PublicStreams: %v", err)
	}
	_ = h.Close()
}

// Each name returns what it says: BootstrapElement the bootstrap element alone, HeadElements
// all that Handler inserts (the bootstrap, then the client).
func TestBootstrapElementIsTheBootstrapAloneAndHeadElementsIsWhatPagesGet(t *testing.T) {
	h, _ := newHost(t, `{}`)
	bootstrap := `<script type="application/json" id="` + wire.BootstrapID + `">` + string(hostplugin.BootstrapJSON(h.Config())) + `</script>`
	if got := string(h.BootstrapElement()); got != bootstrap {
		t.Errorf("BootstrapElement() = %q, want the bootstrap element alone %q", got, bootstrap)
	}
	head := string(h.HeadElements())
	if !strings.HasPrefix(head, bootstrap) || !strings.Contains(head[len(bootstrap):], `<script src="/_lifeline/client/lifeline.`) {
		t.Errorf("HeadElements() = %q, want the bootstrap element, then the client's script", head)
	}
	page := get(t, h.Handler(htmlPage("<head></head>", 0)), httptest.NewRequest("GET", "/", nil)).Body.String()
	if want := "<head>" + head + "</head>"; page != want {
		t.Errorf("the page got %q, want HeadElements inserted: %q", page, want)
	}

	bare := newFixtureWith(t, `{}`, true, hostplugin.Options{NoClient: true}).H
	if b, hd := string(bare.BootstrapElement()), string(bare.HeadElements()); b != hd || !strings.HasPrefix(b, "<script type=\"application/json\"") {
		t.Errorf("with NoClient BootstrapElement() = %q, HeadElements() = %q; want both the bootstrap alone", b, hd)
	}
}

// BootHash is what a Content-Security-Policy without 'unsafe-inline' must list: the hash of
// every inline script a page gets, byte for byte, the same under every config (a policy is
// written once, not per reload); with NoClient there is no inline script and no hash.
func TestBootHashIsTheHashOfTheOneInlineScriptPagesGet(t *testing.T) {
	h, _ := newHost(t, `{}`)
	inline := func() []string {
		var scripts []string
		for _, m := range regexp.MustCompile(`(?s)<script([^>]*)>(.*?)</script>`).FindAllStringSubmatch(string(h.HeadElements()), -1) {
			if !strings.Contains(m[1], "src=") && !strings.Contains(m[1], `type="application/json"`) {
				scripts = append(scripts, m[2])
			}
		}
		return scripts
	}
	scripts := inline()
	if len(scripts) != 1 {
		t.Fatalf("the head has %d inline scripts, want the boot alone: %q", len(scripts), h.HeadElements())
	}
	sum := sha256.Sum256([]byte(scripts[0]))
	want := "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
	if got := h.BootHash(); got != want {
		t.Errorf("BootHash() = %s, want the inline boot's %s", got, want)
	}
	if err := h.Apply(mustConfig(t, `{"endpoint":"/elsewhere/events","heartbeatMs":5000}`)); err != nil {
		t.Fatal(err)
	}
	if s := inline(); len(s) != 1 || s[0] != scripts[0] || h.BootHash() != want {
		t.Errorf("after another config the inline scripts are %d, BootHash() = %s; want the same boot and %s", len(s), h.BootHash(), want)
	}
	if bare := newFixtureWith(t, `{}`, true, hostplugin.Options{NoClient: true}).H; bare.BootHash() != "" {
		t.Errorf("with NoClient BootHash() = %q, want \"\"", bare.BootHash())
	}
}

// gappyLog is a Ring whose Follow loses event 2 of the stream lossy, as a log shared over a
// network may: the next event shows the gap, and its followers are reset on the delivery path.
type gappyLog struct {
	*hostplugin.Ring
	lossy string
}

func (l *gappyLog) Follow(stream string, fn func(hostplugin.Event)) func() {
	return l.Ring.Follow(stream, func(ev hostplugin.Event) {
		if stream != l.lossy || ev.Seq != 2 {
			fn(ev)
		}
	})
}

// A baseline that publishes runs outside every lock of the Host and of the Ring (which holds
// one lock across all its streams while it delivers): neither the reset of a fresh
// subscription nor one on the delivery path deadlocks, and the event it publishes follows the
// reset.
func TestABaselineThatPublishesDoesNotDeadlock(t *testing.T) {
	f := newFixtureWith(t, `{}`, true, hostplugin.Options{Log: &gappyLog{Ring: hostplugin.NewRing(16), lossy: "s"}})
	var calls sync.Map // head seq → published
	f.H.SetBaseline("s", func(stream string, head hostplugin.Cursor) (json.RawMessage, error) {
		if _, again := calls.LoadOrStore(head.Seq, true); !again {
			// Into the same stream and into another: both take the Ring's delivery lock.
			if _, err := f.H.Publish(context.Background(), "audit", json.RawMessage(`{"reset":true}`)); err != nil {
				return nil, err
			}
			if _, err := f.H.Publish(context.Background(), "s", json.RawMessage(fmt.Sprintf(`{"after":%d}`, head.Seq))); err != nil {
				return nil, err
			}
		}
		return json.RawMessage(fmt.Sprintf(`{"seq":%d}`, head.Seq)), nil
	})
	c := f.Dial(t)
	c.Expect(wire.TypeReady)
	c.Send(`{"t":"sub","stream":"s"}`)
	// The fresh subscription: a reset to 0, whose baseline published event 1.
	if r := c.Expect(wire.TypeReset); r.Seq != 0 || string(r.Baseline) != `{"seq":0}` {
		t.Fatalf("first frame %+v (baseline %s), want the reset to 0", r, r.Baseline)
	}
	if ev := c.Expect(wire.TypeEvent); ev.Seq != 1 || string(ev.Data) != `{"after":0}` {
		t.Fatalf("after the reset %+v, want the event its baseline published", ev)
	}
	// Event 2 is lost on its way: 3 shows the gap, and its reset (on the delivery path)
	// publishes 4.
	publish(t, f.H, "s", `{"n":2}`)
	publish(t, f.H, "s", `{"n":3}`)
	if r := c.Expect(wire.TypeReset); r.Seq != 3 || string(r.Baseline) != `{"seq":3}` {
		t.Fatalf("after the gap %+v (baseline %s), want the reset to 3", r, r.Baseline)
	}
	if ev := c.Expect(wire.TypeEvent); ev.Seq != 4 || string(ev.Data) != `{"after":3}` {
		t.Fatalf("after the reset %+v, want the event its baseline published", ev)
	}
}

// A slow baseline holds up the frames of its own stream only: Publish returns at once, to its
// stream and to any other, and the pages of other streams get their events meanwhile; once it
// returns, its page gets the reset and then what was published meanwhile. Both on a fresh
// subscription and on the delivery path (the Ring delivers with one lock across all its
// streams).
func TestASlowBaselineHoldsUpNoPublish(t *testing.T) {
	f := newFixtureWith(t, `{}`, true, hostplugin.Options{Log: &gappyLog{Ring: hostplugin.NewRing(16), lossy: "slow"}})
	entered := make(chan uint64, 1)
	release := make(chan struct{})
	f.H.SetBaseline("slow", func(_ string, head hostplugin.Cursor) (json.RawMessage, error) {
		entered <- head.Seq
		select {
		case <-release:
		case <-time.After(bound):
		}
		return json.RawMessage(`{}`), nil
	})
	held := func(want uint64) {
		t.Helper()
		select {
		case seq := <-entered:
			if seq != want {
				t.Fatalf("the baseline was asked for head %d, want %d", seq, want)
			}
		case <-time.After(bound):
			t.Fatalf("the baseline for head %d was not called", want)
		}
	}
	publishNow := func(stream string) uint64 {
		t.Helper()
		type result struct {
			seq uint64
			err error
		}
		done := make(chan result, 1)
		go func() {
			seq, err := f.H.Publish(context.Background(), stream, json.RawMessage(`1`))
			done <- result{seq, err}
		}()
		select {
		case r := <-done:
			if r.err != nil {
				t.Fatal(r.err)
			}
			return r.seq
		case <-time.After(bound):
			t.Fatalf("Publish to %q is held up by the baseline of \"slow\"", stream)
			return 0
		}
	}
	other := f.Dial(t)
	other.Expect(wire.TypeReady)
	other.Send(`{"t":"sub","stream":"other"}`)
	other.Expect(wire.TypeReset)
	othersGet := func() {
		t.Helper()
		seq := publishNow("other")
		if ev := other.Expect(wire.TypeEvent); ev.Stream != "other" || ev.Seq != seq {
			t.Fatalf("%+v, want other's event %d while the baseline of \"slow\" is held", ev, seq)
		}
	}

	// A fresh subscription: its reset waits for the baseline.
	c := f.Dial(t)
	c.Expect(wire.TypeReady)
	c.Send(`{"t":"sub","stream":"slow"}`)
	held(0)
	one := publishNow("slow")
	othersGet()
	release <- struct{}{}
	if r := c.Expect(wire.TypeReset); r.Seq != 0 {
		t.Fatalf("%+v, want the reset to 0", r)
	}
	if ev := c.Expect(wire.TypeEvent); ev.Seq != one {
		t.Fatalf("%+v, want event %d, published while the baseline was held", ev, one)
	}

	// The delivery path: event 2 is lost, 3 shows the gap and resets the page.
	publishNow("slow")
	three := publishNow("slow")
	held(three)
	four := publishNow("slow")
	othersGet()
	release <- struct{}{}
	if r := c.Expect(wire.TypeReset); r.Seq != three {
		t.Fatalf("%+v, want the reset to %d", r, three)
	}
	if ev := c.Expect(wire.TypeEvent); ev.Seq != four {
		t.Fatalf("%+v, want event %d, published while the baseline was held", ev, four)
	}
}
