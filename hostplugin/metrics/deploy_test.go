//go:build !js

package metrics_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/lifeline-go/lifeline/hostplugin/metrics"
)

// deploy/ holds a Grafana dashboard and Prometheus rules built on these metrics: both are held
// to the metrics here (every name they use is one the package exports) and to their own
// formats (the dashboard's schema fields; promtool check rules, when promtool is installed).

const (
	dashboardPath = "../../deploy/lifeline-dashboard.json"
	rulesPath     = "../../deploy/lifeline-rules.yml"
)

// dashboard is what Grafana needs of a dashboard to load it, and what this one must have.
type dashboard struct {
	UID           string `json:"uid"`
	Title         string `json:"title"`
	SchemaVersion int    `json:"schemaVersion"`
	Time          struct {
		From, To string
	} `json:"time"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		ID         int    `json:"id"`
		Type       string `json:"type"`
		Title      string `json:"title"`
		Datasource struct {
			Type string `json:"type"`
			UID  string `json:"uid"`
		} `json:"datasource"`
		GridPos struct {
			H, W, X, Y int
		} `json:"gridPos"`
		Targets []struct {
			Expr  string `json:"expr"`
			RefID string `json:"refId"`
		} `json:"targets"`
	} `json:"panels"`
}

func TestTheDashboardLoads(t *testing.T) {
	b, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s is not a dashboard: %v", dashboardPath, err)
	}
	if d.UID == "" || d.Title == "" || d.SchemaVersion < 36 || d.Time.From == "" || d.Time.To == "" {
		t.Errorf("the dashboard lacks uid, title, a schemaVersion of 36 or later, or a time range: %+v", d)
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
	}
	if vars["datasource"] != "datasource" || vars["instance"] != "query" {
		t.Errorf("the dashboard's variables are %v; it needs a datasource variable and an instance query", vars)
	}
	if len(d.Panels) < 8 {
		t.Fatalf("the dashboard has %d panels", len(d.Panels))
	}
	ids := map[int]bool{}
	for _, p := range d.Panels {
		where := p.Title
		switch {
		case p.Title == "":
			t.Errorf("panel %d has no title", p.ID)
		case ids[p.ID] || p.ID <= 0:
			t.Errorf("%s: id %d is not a new positive one", where, p.ID)
		case p.Type != "timeseries" && p.Type != "stat":
			t.Errorf("%s: type %q", where, p.Type)
		case p.Datasource.Type != "prometheus" || p.Datasource.UID != "${datasource}":
			t.Errorf("%s: datasource %+v, want the dashboard's ${datasource}", where, p.Datasource)
		case p.GridPos.W <= 0 || p.GridPos.H <= 0 || p.GridPos.X < 0 || p.GridPos.X+p.GridPos.W > 24:
			t.Errorf("%s: gridPos %+v does not fit Grafana's 24 columns", where, p.GridPos)
		case len(p.Targets) == 0:
			t.Errorf("%s: no query", where)
		}
		ids[p.ID] = true
		refs := map[string]bool{}
		for _, q := range p.Targets {
			if q.Expr == "" || q.RefID == "" || refs[q.RefID] {
				t.Errorf("%s: a query without an expression or with a refId used twice: %+v", where, q)
			}
			refs[q.RefID] = true
			if !strings.Contains(q.Expr, `instance=~"$instance"`) {
				t.Errorf("%s: %s ignores the Host variable", where, q.Expr)
			}
		}
	}
	for _, name := range metricNames(t, string(b)) {
		if !exported(t, name) {
			t.Errorf("the dashboard queries %s, which the package does not export", name)
		}
	}
}

func TestTheRulesUseOnlyMetricsThePackageExportsAndPassPromtool(t *testing.T) {
	b, err := os.ReadFile(rulesPath)
	if err != nil {
		t.Fatal(err)
	}
	names := metricNames(t, string(b))
	if len(names) < 5 {
		t.Fatalf("the rules use %d of the metrics: %v", len(names), names)
	}
	for _, name := range names {
		if !exported(t, name) {
			t.Errorf("the rules use %s, which the package does not export", name)
		}
	}
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool is not installed (scripts/setup.sh metrics installs it); the rules' names are checked, their syntax is not")
	}
	out, err := exec.Command(promtool, "check", "rules", rulesPath).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check rules %s: %v\n%s", rulesPath, err, out)
	}
}

var metricName = regexp.MustCompile(`\blifeline_[a-z_]+`)

func metricNames(t *testing.T, text string) []string {
	t.Helper()
	names := metricName.FindAllString(text, -1)
	slices.Sort(names)
	return slices.Compact(names)
}

// exported reports whether name is a series of a metric New exports: its name, or a
// histogram's _bucket, _count or _sum.
func exported(t *testing.T, name string) bool {
	t.Helper()
	m := metrics.New()
	m.Call("a.call", "ok", time.Second) // the one family with no series before its first event
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return true
		}
		if mf.GetType() == dto.MetricType_HISTOGRAM {
			for _, suffix := range []string{"_bucket", "_count", "_sum"} {
				if mf.GetName()+suffix == name {
					return true
				}
			}
		}
	}
	return false
}
