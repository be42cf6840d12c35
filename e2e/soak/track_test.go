//go:build !js

package main

import "testing"

// The soak's stream check counts what the Host's promise forbids and nothing else.
func TestTrackerCountsGapsDuplicatesAndUnexpectedResets(t *testing.T) {
	type step struct {
		seq      uint64
		reset    bool
		epoch    string
		epochWin bool
	}
	tests := []struct {
		name                      string
		page                      bool
		steps                     []step
		delivered, dups, unexpRes int
		lost                      uint64
	}{
		{name: "a reset then consecutive events is clean", steps: []step{{seq: 5, reset: true}, {seq: 6}, {seq: 7}}, delivered: 2},
		{name: "a gap counts the missing events as lost", steps: []step{{seq: 5, reset: true}, {seq: 6}, {seq: 9}}, delivered: 2, lost: 2},
		{name: "a replayed event counts as a duplicate", steps: []step{{seq: 5, reset: true}, {seq: 6}, {seq: 6}, {seq: 7}}, delivered: 2, dups: 1},
		{name: "a reset while a Host restarts is expected", steps: []step{{seq: 5, reset: true}, {seq: 6}, {seq: 1, reset: true, epochWin: true}, {seq: 2}}, delivered: 2},
		{name: "a reset with nothing changing the log is unexpected", steps: []step{{seq: 5, reset: true}, {seq: 6}, {seq: 9, reset: true}, {seq: 10}}, delivered: 2, unexpRes: 1},
		{name: "a page's reset within the same epoch is unexpected even during a restart", page: true,
			steps: []step{{seq: 5, reset: true, epoch: "a"}, {seq: 9, reset: true, epoch: "a", epochWin: true}}, unexpRes: 1},
	}
	for _, tt := range tests {
		tr := &tracker{}
		tr.add("m", tt.page)
		m := tr.members[0]
		for _, s := range tt.steps {
			tr.epochWin = 0
			if s.epochWin {
				tr.epochWin = 1
			}
			tr.deliver(m, s.seq, s.reset, s.epoch, 0)
		}
		if m.delivered != tt.delivered || m.lost != tt.lost || m.dups != tt.dups || m.unexpReset != tt.unexpRes {
			t.Errorf("%s: delivered %d lost %d dups %d unexpected resets %d; want %d %d %d %d",
				tt.name, m.delivered, m.lost, m.dups, m.unexpReset, tt.delivered, tt.lost, tt.dups, tt.unexpRes)
		}
	}
}
