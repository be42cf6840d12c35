package testlog_test

import (
	"log/slog"
	"testing"

	"github.com/lifeline-go/lifeline/internal/testlog"
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
