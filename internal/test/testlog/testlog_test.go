package testlog_test

import (
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/lifeline-go/lifeline/internal/test/testlog"
)

func TestRecorderKeepsEachRecordAsOneLine(t *testing.T) {
	var rec testlog.Recorder
	log := slog.New(&rec)
	log.Warn("hub: joined", "href", "https://a/", "n", 2)
	log.Info("other")
	if !rec.Has("WARN hub: joined", "href=https://a/", "n=2") {
		t.Errorf("no line with all parts:\n%s", rec.String())
	}
	if rec.Has("hub: joined", "other") {
		t.Error("Has matched parts from two lines")
	}
}

func TestRecorderFindsRecordsByTheirMessageOnly(t *testing.T) {
	var rec testlog.Recorder
	log := slog.New(&rec)
	log.Error("lifeline: connection failed", "err", "recovered nothing")
	log.Info("lifeline: connection recovered", "outage", 3500*time.Millisecond)
	if got, want := rec.Messages("recovered"), []string{"INFO lifeline: connection recovered"}; !slices.Equal(got, want) {
		t.Errorf("Messages(recovered) = %q, want %q (an attribute's text is no match)", got, want)
	}
	if got, want := rec.Messages(""), []string{"ERROR lifeline: connection failed", "INFO lifeline: connection recovered"}; !slices.Equal(got, want) {
		t.Errorf("Messages() = %q, want %q", got, want)
	}
	r, ok := rec.Record("recovered")
	var outage time.Duration
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "outage" {
			outage = a.Value.Duration()
		}
		return true
	})
	if !ok || outage != 3500*time.Millisecond {
		t.Errorf("Record(recovered) = %v, %v: outage %v, want 3.5s", r, ok, outage)
	}
	if _, ok := rec.Record("slow"); ok {
		t.Error("Record(slow) found a record none of whose messages says slow")
	}
}
