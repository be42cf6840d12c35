//go:build lifeline_faults && !js

package main_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/lifeline-go/lifeline/internal/wire"
)

type ledgerCount struct {
	Identity string          `json:"identity"`
	Key      string          `json:"key"`
	Data     json.RawMessage `json:"data"`
	Runs     int             `json:"runs"`
}

// ledgerCounts reads h's /_lifeline/ledger.
func (h *host) ledgerCounts() []ledgerCount {
	h.t.Helper()
	resp, body := h.get("/_lifeline/ledger", nil)
	var got struct{ Counts []ledgerCount }
	if resp.StatusCode != 200 || json.Unmarshal(body, &got) != nil {
		h.t.Fatalf("GET /_lifeline/ledger: %d %s", resp.StatusCode, body)
	}
	return got.Counts
}

// callLedger calls ledger.run with data and key on c (whose ready frame has been read) and
// returns the reply.
func callLedger(t *testing.T, c *websocket.Conn, id uint64, data, key string) wire.HostFrame {
	t.Helper()
	b, err := wire.PageFrame{T: wire.TypeCall, ID: id, Name: "ledger.run", Data: wire.RawJSON(data), Key: key}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	f := call(t, c, string(b))
	if f.ID != id {
		t.Fatalf("call %d: the Host answered %+v, want its reply", id, f)
	}
	return f
}

// The ledger counts every run of ledger.run in its file: per key for keyed calls (a re-send
// of a key the Host ran is answered without a run), per data for unkeyed ones, across every
// Host given the file, a killed one's runs included.
func TestTheLedgerCountsRunsAcrossHostsAndKills(t *testing.T) {
	web := webDir(t)
	file := filepath.Join(t.TempDir(), "ledger.jsonl")
	a := startHost(t, "-web", web, "-ledger", file)
	b := startHost(t, "-web", web, "-ledger", file)

	ca := a.dial()
	next(t, ca) // ready
	if f := callLedger(t, ca, 1, `"u1"`, ""); f.Code != "" || string(f.Data) != `"u1"` {
		t.Errorf("an unkeyed call was answered %+v, want its data back", f)
	}
	callLedger(t, ca, 2, `"u1"`, "") // the same data again: a second run
	callLedger(t, ca, 3, `"k1"`, "k1")
	if f := callLedger(t, ca, 4, `"k1"`, "k1"); f.Code != "" || string(f.Data) != `"k1"` {
		t.Errorf("a re-send of a keyed call was answered %+v, want the first outcome", f)
	}
	_ = a.cmd.Process.Kill()
	a.exitCode()

	cb := b.dial()
	next(t, cb)
	callLedger(t, cb, 1, `"k1"`, "k1") // another Host, another dedup store: it runs again there
	callLedger(t, cb, 2, ` "u2" `, "")

	want := []ledgerCount{ // sorted by identity, key, data
		{Data: json.RawMessage(`"u1"`), Runs: 2},
		{Data: json.RawMessage(`"u2"`), Runs: 1},
		{Key: "k1", Runs: 2},
	}
	if got := b.ledgerCounts(); !reflect.DeepEqual(got, want) {
		t.Errorf("the ledger counts %+v, want %+v", got, want)
	}
}

// The counts are tooling: a cross-origin request is refused, as at the fault panel, and a
// file that holds something other than runs is an error, not a count.
func TestTheLedgerRefusesCrossOriginAndAnUnreadableFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "ledger.jsonl")
	h := startHost(t, "-web", webDir(t), "-ledger", file)
	if resp, body := h.get("/_lifeline/ledger", map[string]string{"Origin": "http://evil.example"}); resp.StatusCode != 403 || !strings.Contains(string(body), "cross-origin") {
		t.Errorf("a cross-origin GET: %d %s, want 403", resp.StatusCode, body)
	}
	if err := os.WriteFile(file, []byte(`{"identity":"","data":"u1"}`+"\n{\"ident\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if resp, body := h.get("/_lifeline/ledger", nil); resp.StatusCode != 500 || !strings.Contains(string(body), "line 2") {
		t.Errorf("a torn ledger file: %d %s, want 500 naming line 2", resp.StatusCode, body)
	}
}
