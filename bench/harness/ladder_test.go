//go:build !js

package main

import (
	"strings"
	"testing"
)

func TestLadderOddsCoverEveryAimWithAProbability(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates the ladder thousands of times")
	}
	table := ladderOdds()
	if n := strings.Count(table, "\n"); n != 2+8 {
		t.Fatalf("ladderOdds has %d lines, want a header and 8 aims:\n%s", n, table)
	}
	if !strings.Contains(table, "| 1: dials p99 ≤ 12") || !strings.Contains(table, "%") {
		t.Fatalf("ladderOdds table lacks the aims or their odds:\n%s", table)
	}
	t.Log("\n" + table)
}
