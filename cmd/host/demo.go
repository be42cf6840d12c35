//go:build !js

package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/lifeline-go/lifeline/hostplugin"
)

// The demo's calls: a message board. A page posts a message with the call "board.post"
// ({"text": …}, with a fresh idempotency key per message); the handler checks the text and
// publishes the message on the stream "board", which every page of the demo shows, and
// replies with it. "board.slow" ({"text": …, "ms": …}) does the same after waiting ms, so
// that a test can cut a call off while its handler runs. With "untilDrain": true it posts as
// soon as its Host begins to drain (a graceful restart's handoff), ms at the latest, and logs
// "demo: board.slow held until the drain": a test keeps a call in flight across a handoff
// without guessing how long the successor takes to start on a loaded machine.
//
// Every run is logged ("demo: board call ran", with the call, the key and, for a keyed call,
// how often this process ran that key): the witness the end-to-end tests count, across a
// handoff to a successor (which logs to the same output) and a kill.

const (
	boardStream = "board"
	// maxBoardText bounds a message, in characters.
	maxBoardText = 280
	// maxBoardSlow bounds board.slow's wait.
	maxBoardSlow = 10 * time.Second
	// maxBoardKeys bounds the keys counted; past it the count starts over (the dedup store
	// forgets as well, after callDedupMs).
	maxBoardKeys = 100_000
)

// board is the demo's message board: its handlers and the count of their runs per key.
type board struct {
	h      *hostplugin.Host
	logger *slog.Logger

	mu   sync.Mutex
	runs map[[2]string]int // by (identity, key), keyed calls only
}

// installBoard registers the board's call handlers on h.
func installBoard(h *hostplugin.Host, logger *slog.Logger) *board {
	b := &board{h: h, logger: logger, runs: map[[2]string]int{}}
	h.HandleCall("board.post", b.post)
	h.HandleCall("board.slow", b.slow)
	return b
}

// boardMessage is what the board publishes, and what a post is answered with (and its Seq
// on the stream).
type boardMessage struct {
	ID   string `json:"id"`
	Text string `json:"text"`
	At   int64  `json:"at"` // Unix milliseconds
	Seq  uint64 `json:"seq,omitempty"`
}

// The errors a page is shown for a message the board refuses (the call's app error).
var (
	errBoardData     = errors.New(`board: the call's data must be an object {"text": "…"}`)
	errBoardSlowData = errors.New(`board: the call's data must be an object {"text": "…", "ms": …}`)
	errBoardEmpty    = errors.New("board: the message is empty")
)

// boardText returns the message a call's data carries, trimmed, or why it cannot be posted.
// The demo has no sign-in: anyone may post, so the text is all there is to check.
func boardText(text *string) (string, error) {
	if text == nil {
		return "", errBoardData
	}
	t := strings.TrimSpace(*text)
	switch n := utf8.RuneCountInString(t); {
	case n == 0:
		return "", errBoardEmpty
	case n > maxBoardText:
		return "", fmt.Errorf("board: the message is %d characters long, over the %d a message may have", n, maxBoardText)
	}
	return t, nil
}

// post is the handler of "board.post".
func (b *board) post(ctx context.Context, c *hostplugin.Call) (json.RawMessage, error) {
	var in struct {
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(c.Data, &in); err != nil {
		return nil, errBoardData
	}
	text, err := boardText(in.Text)
	if err != nil {
		return nil, err
	}
	b.ran(c)
	return b.publish(ctx, text)
}

// slow is the handler of "board.slow": a post made after waiting ms, or until the Host drains.
func (b *board) slow(ctx context.Context, c *hostplugin.Call) (json.RawMessage, error) {
	var in struct {
		Text       *string `json:"text"`
		Ms         int64   `json:"ms"`
		UntilDrain bool    `json:"untilDrain"`
	}
	if err := json.Unmarshal(c.Data, &in); err != nil {
		return nil, errBoardSlowData
	}
	wait := time.Duration(in.Ms) * time.Millisecond
	if wait <= 0 || wait > maxBoardSlow {
		return nil, fmt.Errorf("board: ms must be in 1..%d, got %d", maxBoardSlow.Milliseconds(), in.Ms)
	}
	text, err := boardText(in.Text)
	if err != nil {
		return nil, err
	}
	b.ran(c)
	t := time.NewTimer(wait)
	defer t.Stop()
	var drained <-chan struct{}
	if in.UntilDrain {
		watch, stop := context.WithCancel(ctx)
		defer stop()
		drained = b.drained(watch)
	}
	select {
	case <-t.C:
	case <-drained:
		b.logger.Info("demo: board.slow held until the drain", "key", c.Key)
	case <-ctx.Done():
		return nil, errors.New("board: the Host is closing; the message was not posted")
	}
	return b.publish(ctx, text)
}

// drained is closed once the Host is draining, checked every 5 ms until ctx ends (the Host
// signals no drain; a demo's handler can afford to look).
func (b *board) drained(ctx context.Context) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for !b.h.Stats().Draining {
			select {
			case <-t.C:
			case <-ctx.Done():
				return
			}
		}
		close(ch)
	}()
	return ch
}

// ran counts and logs one run of c's handler. A keyed call that runs again in this process
// (past the dedup window, or a bug) is logged as a warning.
func (b *board) ran(c *hostplugin.Call) {
	if c.Key == "" {
		b.logger.Info("demo: board call ran", "call", c.Name, "key", "")
		return
	}
	id := [2]string{c.Identity, c.Key}
	b.mu.Lock()
	if len(b.runs) >= maxBoardKeys {
		clear(b.runs)
	}
	b.runs[id]++
	n := b.runs[id]
	b.mu.Unlock()
	level := slog.LevelInfo
	if n > 1 {
		level = slog.LevelWarn
	}
	b.logger.Log(context.Background(), level, "demo: board call ran", "call", c.Name, "key", c.Key, "runs", n)
}

// publish puts text on the board and returns the message as the call's reply.
func (b *board) publish(ctx context.Context, text string) (json.RawMessage, error) {
	id := make([]byte, 4)
	_, _ = rand.Read(id) // crypto/rand.Read never fails on supported platforms
	m := boardMessage{ID: hex.EncodeToString(id), Text: text, At: time.Now().UnixMilli()}
	data, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	if m.Seq, err = b.h.Publish(ctx, boardStream, data); err != nil {
		b.logger.Error("demo: publishing a board message", "err", err)
		return nil, errors.New("board: the message could not be posted; try again")
	}
	return json.Marshal(m)
}
