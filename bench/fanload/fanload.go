//go:build !js

// Package fanload is the fan-out workload (Lifeline's Host set against Centrifuge's on the
// same load) as the bench's fanout and sessions
// scenarios run it, shared by the server (bench/cmd/fanout-server), the pages
// (bench/cmd/fanout-pages) and the harness: N pages, page i following its personal channel
// and its group's (groups of 10); publishes half to each kind, from the server's process,
// each carrying its publish time and its number on the channel, padded to 100 bytes; the
// pages' latency histogram; what server and pages report.
//
// The same names serve both servers: a Lifeline stream and a Centrifuge channel are both a
// "channel" here.
package fanload

import (
	"bytes"
	"math"
	"slices"
	"strconv"
	"sync/atomic"
	"time"
)

// GroupSize is how many pages follow each group channel.
const GroupSize = 10

// PayloadBytes is the size of each publication's data.
const PayloadBytes = 100

// Personal is page i's own channel.
func Personal(i int) string { return "user." + strconv.Itoa(i) }

// Group is the channel of group g (pages 10g … 10g+9).
func Group(g int) string { return "group." + strconv.Itoa(g) }

// Groups is how many groups n pages make.
func Groups(n int) int { return (n + GroupSize - 1) / GroupSize }

// Members is how many of n pages follow group g.
func Members(n, g int) int { return min(GroupSize, n-g*GroupSize) }

// Payload is the data of publication k (1, 2, … on its channel) made at t: JSON text of
// exactly PayloadBytes.
func Payload(t time.Time, k uint64) []byte {
	b := make([]byte, 0, PayloadBytes)
	b = strconv.AppendInt(append(b, `{"ts":`...), t.UnixNano(), 10)
	b = strconv.AppendUint(append(b, `,"n":`...), k, 10)
	b = append(b, `,"p":"`...)
	for len(b) < PayloadBytes-2 {
		b = append(b, 'x')
	}
	return append(b, `"}`...)
}

// Delivery is what a page reads of one publication in a server's frame.
type Delivery struct {
	Channel []byte // as the frame names it (a Lifeline stream, a Centrifuge channel)
	TS      int64  // publish time, Unix ns
	N       uint64 // its number on the channel
}

// Parse finds the delivery in one frame, or one line of a Centrifuge frame: the channel is
// the value of the member key names (stream, channel), ts and n are the payload's. It reads
// by search, not by decoding, so that the pages cost the machine little.
func Parse(frame []byte, key string) (Delivery, bool) {
	var d Delivery
	_, rest, ok := bytes.Cut(frame, []byte(`"`+key+`":"`))
	if !ok {
		return d, false
	}
	if d.Channel, rest, ok = bytes.Cut(rest, []byte(`"`)); !ok {
		return d, false
	}
	ts, ok := number(rest, `"ts":`)
	if !ok {
		return d, false
	}
	n, ok := number(rest, `"n":`)
	d.TS, d.N = int64(ts), n
	return d, ok
}

func number(b []byte, prefix string) (uint64, bool) {
	i := bytes.Index(b, []byte(prefix))
	if i < 0 {
		return 0, false
	}
	var v uint64
	digits := 0
	for _, c := range b[i+len(prefix):] {
		if c < '0' || c > '9' {
			break
		}
		v = v*10 + uint64(c-'0')
		digits++
	}
	return v, digits > 0
}

// Histogram counts latencies in buckets 2% wide (from 1 µs to about 17 minutes). It is safe
// for concurrent use.
type Histogram struct {
	counts [buckets]atomic.Uint64
}

const (
	buckets = 1400
	growth  = 1.02
)

var logGrowth = math.Log(growth)

func bucketOf(d time.Duration) int {
	us := float64(d) / float64(time.Microsecond)
	if us <= 1 {
		return 0
	}
	return min(int(math.Log(us)/logGrowth)+1, buckets-1)
}

// upper is the latency bucket i ends at.
func upper(i int) time.Duration {
	return time.Duration(math.Pow(growth, float64(i)) * float64(time.Microsecond))
}

// Add counts one latency.
func (h *Histogram) Add(d time.Duration) { h.counts[bucketOf(d)].Add(1) }

// Take returns the counts (bucket → count, the empty ones left out) and sets them to zero.
func (h *Histogram) Take() map[int]uint64 {
	out := map[int]uint64{}
	for i := range h.counts {
		if c := h.counts[i].Swap(0); c > 0 {
			out[i] = c
		}
	}
	return out
}

// Counts is a histogram as Take returns it; several merge by adding.
type Counts map[int]uint64

// Merge adds o to c.
func (c Counts) Merge(o map[int]uint64) {
	for i, n := range o {
		c[i] += n
	}
}

// Total is how many latencies c holds.
func (c Counts) Total() uint64 {
	var t uint64
	for _, n := range c {
		t += n
	}
	return t
}

// Quantile is the latency at q (0..1): the upper end of the bucket that holds it, so at most
// 2% over; 0 for an empty histogram.
func (c Counts) Quantile(q float64) time.Duration {
	total := c.Total()
	if total == 0 {
		return 0
	}
	idx := make([]int, 0, len(c))
	for i := range c {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	rank := uint64(math.Ceil(q * float64(total)))
	var seen uint64
	for _, i := range idx {
		seen += c[i]
		if seen >= max(rank, 1) {
			return upper(i)
		}
	}
	return upper(idx[len(idx)-1])
}

// ServerStats is what the server answers at /stats.
type ServerStats struct {
	Kind        string  `json:"kind"`
	Published   uint64  `json:"published"`   // publications since the start
	Expected    uint64  `json:"expected"`    // deliveries they owe the pages
	Rate        float64 `json:"rate"`        // the publisher's rate now, publications/s
	Behind      float64 `json:"behind"`      // seconds the publisher is behind its rate
	CPU         float64 `json:"cpu"`         // the process's CPU seconds, user + system
	RSS         int64   `json:"rss"`         // bytes resident
	HeapInuse   uint64  `json:"heapInuse"`   // Go heap in use
	StackInuse  uint64  `json:"stackInuse"`  // goroutine stacks
	Goroutines  int     `json:"goroutines"`  // all of the process's
	Connections int     `json:"connections"` // sockets the server holds as sessions/clients
}

// PagesStats is what a pages process answers at /stats.
type PagesStats struct {
	Connected int            `json:"connected"` // pages subscribed to both channels
	Failed    int            `json:"failed"`    // pages that could not connect, or lost their socket
	FirstErr  string         `json:"firstErr,omitempty"`
	Received  uint64         `json:"received"` // deliveries since the start
	Lost      uint64         `json:"lost"`     // publications skipped on a channel
	Dupes     uint64         `json:"dupes"`    // publications read twice, or out of order
	Latency   map[int]uint64 `json:"latency"`  // since the last /stats?take=1
}
