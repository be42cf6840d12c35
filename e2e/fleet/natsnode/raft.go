//go:build !js

package main

import (
	"time"
	_ "unsafe" // go:linkname
)

// nats-server elects a new leader for a raft group (a JetStream stream, the meta group) only
// after its election timeout, 4 to 9 s after the last heartbeat of a leader that crashed; a
// leader that shuts down cleanly hands over at once. No server option sets it, so a fleet on
// stock servers pauses its publishing for those seconds after a SIGKILL of a stream leader.
// This demo cluster sets the timers as nats-server's own test suite does, for elections within
// 1 to 2 s: the fleet test's 3 s bound is then Lifeline's to keep (its part, after the
// election, takes milliseconds). -stock-raft keeps nats-server's defaults.

//go:linkname minElectionTimeout github.com/nats-io/nats-server/v2/server.minElectionTimeout
var minElectionTimeout time.Duration

//go:linkname maxElectionTimeout github.com/nats-io/nats-server/v2/server.maxElectionTimeout
var maxElectionTimeout time.Duration

//go:linkname hbInterval github.com/nats-io/nats-server/v2/server.hbInterval
var hbInterval time.Duration

//go:linkname lostQuorumInterval github.com/nats-io/nats-server/v2/server.lostQuorumInterval
var lostQuorumInterval time.Duration

// fastRaft shortens the election timers, keeping their proportions to the heartbeat.
func fastRaft() {
	hbInterval = 250 * time.Millisecond
	minElectionTimeout = time.Second
	maxElectionTimeout = 2 * time.Second
	lostQuorumInterval = 10 * hbInterval
}
