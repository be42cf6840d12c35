//go:build !js

package hostplugin_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/internal/wire"
)

const goodReport = `{"t":"report","downMs":12400,"attempts":3,"kinds":["closed","refused","timeout"]}`

func TestAReportReachesTheObserverOncePerSession(t *testing.T) {
	f, obs := observed(t, `{}`, hostplugin.Options{})
	c := f.Dial(t)
	if r := c.Expect(wire.TypeReady); !r.Report {
		t.Fatalf("the ready frame %+v does not ask for reports", r)
	}
	c.Send(goodReport)
	c.Send(`{"t":"ping"}`)
	c.Expect(wire.TypeHeartbeat) // the report was read before the ping: nothing came of it but the report
	want := []hostplugin.PageReport{{Mode: "", Down: 12400 * time.Millisecond, Attempts: 3,
		Kinds: []string{wire.KindClosed, wire.KindRefused, wire.KindTimeout}, Bytes: len(goodReport)}}
	if got := obs.Reports(); !reflect.DeepEqual(got, want) {
		t.Fatalf("reports %+v, want %+v", got, want)
	}
	// Too frequent: a second on the same session is refused like any bad frame.
	c.Send(goodReport)
	if e := c.Expect(wire.TypeError); !strings.Contains(e.Message, "at most one") {
		t.Fatalf("a second report was answered %+v", e)
	}
	obs.wantLine(t, "bad frame", 1)
	if n := len(obs.Reports()); n != 1 {
		t.Fatalf("%d reports reached the observer, want 1", n)
	}
	// Another session may report again.
	d := f.Dial(t)
	d.Expect(wire.TypeReady)
	d.Send(goodReport)
	waitFor(t, "the second session's report", func() bool { return len(obs.Reports()) == 2 })
}

func TestABadReportIsRefusedAndReachesNoObserver(t *testing.T) {
	f, obs := observed(t, `{"maxFrameBytes":512}`, hostplugin.Options{})
	c := f.Dial(t)
	c.Expect(wire.TypeReady)
	for _, bad := range []string{
		`{"t":"report","downMs":5,"attempts":1,"kinds":["eaten by a grue"]}`,
		`{"t":"report","downMs":5,"attempts":0,"kinds":["closed"]}`,
		`{"t":"report","downMs":99999999999,"attempts":1,"kinds":["closed"]}`,
		`{"t":"report","downMs":5,"attempts":1,"kinds":["closed","closed"]}`,
		`{"t":"report","downMs":5,"attempts":1,"kinds":[]}`,
		`{"t":"report","downMs":"5","attempts":1,"kinds":["closed"]}`,
		`{"t":"report","downMs":5,"attempts":1,"kinds":["closed"],"stream":"S"}`,
	} {
		c.Send(bad)
		c.Expect(wire.TypeError)
	}
	obs.wantLine(t, "bad frame", 7)
	// Oversized: over maxFrameBytes the session ends with 1009, as for any frame.
	c.Send(`{"t":"report","downMs":5,"attempts":1,"kinds":["closed"],"pad":"` + strings.Repeat("x", 600) + `"}`)
	if code, _ := c.Closed(); code != 1009 {
		t.Fatalf("an oversized report closed the session with %d, want 1009", code)
	}
	if got := obs.Reports(); len(got) != 0 {
		t.Fatalf("bad reports reached the observer: %+v", got)
	}
}

func TestAHostWithReportsOffAsksForNoneAndRefusesThem(t *testing.T) {
	f, obs := observed(t, `{"reports":false}`, hostplugin.Options{})
	if f.H.Config().Reports() {
		t.Fatal("Config().Reports() is true for reports: false")
	}
	c := f.Dial(t)
	if r := c.Expect(wire.TypeReady); r.Report {
		t.Fatalf("the ready frame %+v asks for reports", r)
	}
	c.Send(goodReport)
	if e := c.Expect(wire.TypeError); !strings.Contains(e.Message, "takes no reports") {
		t.Fatalf("a report to a Host with reports off was answered %+v", e)
	}
	if got := obs.Reports(); len(got) != 0 {
		t.Fatalf("reports reached the observer: %+v", got)
	}
	if !hostplugin.DefaultConfig().Reports() {
		t.Fatal("reports are off by default")
	}
	if _, err := hostplugin.ParseConfig([]byte(`{"reports":"yes"}`)); err == nil || !strings.Contains(err.Error(), "reports: must be true or false") {
		t.Fatalf(`ParseConfig({"reports":"yes"}) = %v`, err)
	}
}
