//go:build !js

// Package presload is what bench/cmd/presence reports of a run and bench/harness reads: one
// definition of the line between the two processes, so that neither can drift from the other.
package presload

// Result is what -json prints, as {"result": Result}: the figures of one run, in
// milliseconds and percents.
type Result struct {
	Kind  string `json:"kind"`
	Join  *Join  `json:"join,omitempty"`
	Churn *Churn `json:"churn,omitempty"`
	Idle  *Idle  `json:"idle,omitempty"`
}

// Join is the join: every page subscribing at once, until each showed every member.
type Join struct {
	Pages         int     `json:"pages"`
	Full          bool    `json:"full"`       // every page showed every member within -wait
	FullPages     int     `json:"full_pages"` // pages that did
	MeanShown     float64 `json:"mean_shown"` // members a page showed on average at the end
	MaxMs         float64 `json:"max_ms"`     // the last page full (with Full)
	P50Ms         float64 `json:"p50_ms"`
	P99Ms         float64 `json:"p99_ms"`
	FramesPerPage float64 `json:"frames_per_page"`
	MaxFrames     int     `json:"max_frames"`
	BytesPerPage  float64 `json:"bytes_per_page"`
	WaitMs        float64 `json:"wait_ms"`
	Closed        int64   `json:"closed"` // pages whose socket ended by the end of the join
}

// Churn is the churn: new members joining at a steady rate, each until every page showed it.
type Churn struct {
	Rate    int     `json:"rate"`
	ForMs   float64 `json:"for_ms"`
	Joins   int     `json:"joins"`
	P50Ms   float64 `json:"p50_ms"`
	P99Ms   float64 `json:"p99_ms"`
	MaxMs   float64 `json:"max_ms"`
	Missing int     `json:"missing"` // (join, page) sightings that never came
	CPUPct  float64 `json:"cpu_pct"` // the process's CPU (Host and pages), % of one core
}

// Idle is the idle run: many small streams with nothing happening.
type Idle struct {
	Streams  int     `json:"streams"`
	Members  int     `json:"members"`
	Sessions int     `json:"sessions"`
	Presence bool    `json:"presence"` // false: the control, the same sessions without presence
	NATS     bool    `json:"nats"`
	ForMs    float64 `json:"for_ms"`
	CPUPct   float64 `json:"cpu_pct"`
	HeapMB   float64 `json:"heap_mb"`
	StartMs  int64   `json:"start_unix_ms"` // the idle window, for a harness to read NATS's CPU over it
	EndMs    int64   `json:"end_unix_ms"`
}
