//go:build !js

package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/coder/websocket"

	"github.com/lifeline-go/lifeline/internal/wire"
)

// boardPage is a socket to a running cmd/host, ready, subscribed to the board.
func boardPage(t *testing.T, h *host) *websocket.Conn {
	t.Helper()
	c := h.dial()
	if f := next(t, c); f.T != wire.TypeReady || f.Dedup == "" {
		t.Fatalf("first frame %+v, want a ready frame naming the dedup store", f)
	}
	send(t, c, `{"t":"sub","stream":"board"}`)
	if f := nextOf(t, c); f.T != wire.TypeReset {
		t.Fatalf("frame %+v, want the board's reset", f)
	}
	return c
}

func send(t *testing.T, c *websocket.Conn, frame string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageText, []byte(frame)); err != nil {
		t.Fatal(err)
	}
}

// nextOf is next without heartbeats.
func nextOf(t *testing.T, c *websocket.Conn) wire.HostFrame {
	t.Helper()
	for {
		if f := next(t, c); f.T != wire.TypeHeartbeat {
			return f
		}
	}
}

// boardMessage is what the board publishes and replies.
type boardMessage struct {
	ID   string `json:"id"`
	Text string `json:"text"`
	At   int64  `json:"at"`
	Seq  uint64 `json:"seq"`
}

// post makes the call id and returns its reply and the board event it published, in
// whichever order they came.
func post(t *testing.T, c *websocket.Conn, id int, call string) (reply, event wire.HostFrame) {
	t.Helper()
	send(t, c, call)
	for reply.T == "" || event.T == "" {
		switch f := nextOf(t, c); {
		case f.T == wire.TypeReply && f.ID == uint64(id) && reply.T == "":
			reply = f
		case f.T == wire.TypeEvent && f.Stream == "board" && event.T == "":
			event = f
		default:
			t.Fatalf("after call %d: frame %+v, want its reply and its board event", id, f)
		}
	}
	return reply, event
}

func decodeMessage(t *testing.T, b wire.RawJSON) boardMessage {
	t.Helper()
	var m boardMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return m
}

func runsLogged(h *host, key string) int {
	return strings.Count(h.out.String(), `msg="demo: board call ran" call=board.post key=`+key+` `)
}

func TestTheBoardPostsAKeyedMessageOnceAndAnswersAReSendWithTheFirstReply(t *testing.T) {
	h := startHost(t, "-web", webDir(t), "-ticks=false")
	c := boardPage(t, h)

	reply, event := post(t, c, 1, `{"t":"call","id":1,"name":"board.post","key":"k-1","data":{"text":"  hello  "}}`)
	got := decodeMessage(t, reply.Data)
	if reply.Code != "" || got.Text != "hello" || got.ID == "" || got.Seq != event.Seq || got.At == 0 {
		t.Fatalf("reply %+v %s, want the message trimmed, with its id, time and seq %d", reply, reply.Data, event.Seq)
	}
	if pub := decodeMessage(t, event.Data); pub.ID != got.ID || pub.Text != "hello" || pub.At != got.At {
		t.Fatalf("published %s, replied %s: want the same message", event.Data, reply.Data)
	}

	// The same key again: the first reply, and nothing published (the next event is the
	// next post's).
	send(t, c, `{"t":"call","id":2,"name":"board.post","key":"k-1","data":{"text":"hello again"}}`)
	if f := nextOf(t, c); f.T != wire.TypeReply || f.ID != 2 || string(f.Data) != string(reply.Data) {
		t.Fatalf("the re-send got %+v %s, want the first reply %s", f, f.Data, reply.Data)
	}
	_, second := post(t, c, 3, `{"t":"call","id":3,"name":"board.post","key":"k-2","data":{"text":"second"}}`)
	if m := decodeMessage(t, second.Data); second.Seq != event.Seq+1 || m.Text != "second" {
		t.Fatalf("the next event is %+v %s, want seq %d with the second message", second, second.Data, event.Seq+1)
	}
	// The Host logs a run before it replies, but its output reaches h.out through a pipe that
	// may lag the socket: k-2's run, logged after every run of k-1, says it has all arrived.
	h.waitLog(`msg="demo: board call ran" call=board.post key=k-2 `)
	if n := runsLogged(h, "k-1"); n != 1 {
		t.Fatalf("the handler's runs for k-1 logged %d times, want once:\n%s", n, h.out)
	}

	// board.slow posts the same way, after its wait.
	slowReply, slowEvent := post(t, c, 4, `{"t":"call","id":4,"name":"board.slow","data":{"text":"late","ms":20}}`)
	if m := decodeMessage(t, slowReply.Data); m.Text != "late" || m.Seq != slowEvent.Seq {
		t.Fatalf("board.slow replied %s with event %+v", slowReply.Data, slowEvent)
	}
}

func TestTheBoardRefusesWhatItCannotPostAndRunsNothing(t *testing.T) {
	h := startHost(t, "-web", webDir(t), "-ticks=false")
	c := boardPage(t, h)
	for i, tc := range []struct {
		name, call, data, says string
	}{
		{"an empty message", "board.post", `{"text":"   "}`, "board: the message is empty"},
		{"a message too long", "board.post", fmt.Sprintf(`{"text":%q}`, strings.Repeat("言", 281)), "board: the message is 281 characters long, over the 280"},
		{"no text", "board.post", `{}`, `board: the call's data must be an object {"text": "…"}`},
		{"null", "board.post", `null`, `board: the call's data must be an object {"text": "…"}`},
		{"a string", "board.post", `"hello"`, `board: the call's data must be an object {"text": "…"}`},
		{"a text that is no string", "board.post", `{"text":5}`, `board: the call's data must be an object {"text": "…"}`},
		{"a wait of none", "board.slow", `{"text":"x","ms":0}`, "board: ms must be in 1..10000, got 0"},
		{"a wait too long", "board.slow", `{"text":"x","ms":10001}`, "board: ms must be in 1..10000, got 10001"},
		{"a slow empty message", "board.slow", `{"text":"","ms":5}`, "board: the message is empty"},
	} {
		id := i + 1
		send(t, c, fmt.Sprintf(`{"t":"call","id":%d,"name":%q,"key":"bad-%d","data":%s}`, id, tc.call, id, tc.data))
		f := nextOf(t, c)
		if f.T != wire.TypeReply || f.ID != uint64(id) || f.Code != wire.CodeApp || !strings.HasPrefix(f.Error, tc.says) {
			t.Errorf("%s: %+v, want an app error reply %q", tc.name, f, tc.says)
		}
	}
	// A post that runs, after them: once its run is in the output (through a pipe that may
	// lag the socket), so is any run of the refused ones.
	post(t, c, 100, `{"t":"call","id":100,"name":"board.post","key":"after","data":{"text":"after"}}`)
	h.waitLog(`msg="demo: board call ran" call=board.post key=after `)
	if n := strings.Count(h.out.String(), "demo: board call ran"); n != 1 {
		t.Fatalf("%d runs logged, want only the post after the refused ones:\n%s", n, h.out)
	}
}

// A board.slow with untilDrain holds its call until the Host begins to drain, not for its
// whole wait: the end-to-end tests keep a call in flight across a handoff with it, however
// long the successor takes to start.
func TestTheBoardsSlowCallWithUntilDrainPostsOnceItsHostDrains(t *testing.T) {
	h := startHost(t, "-web", webDir(t), "-ticks=false", "-drain-on-stop", "-config", writeConfig(t, `{"drainTimeoutMs":5000}`))
	c := boardPage(t, h)
	send(t, c, `{"t":"call","id":1,"name":"board.slow","key":"held","data":{"text":"held","ms":10000,"untilDrain":true}}`)
	h.waitLog(`msg="demo: board call ran" call=board.slow key=held `)
	if strings.Contains(h.out.String(), "held until the drain") {
		t.Fatalf("the call ended before the Host drained:\n%s", h.out)
	}
	_ = h.cmd.Process.Signal(syscall.SIGTERM)
	var reply, event wire.HostFrame
	for reply.T == "" || event.T == "" {
		switch f := nextOf(t, c); {
		case f.T == wire.TypeGoAway:
		case f.T == wire.TypeReply && f.ID == 1:
			reply = f
		case f.T == wire.TypeEvent && f.Stream == "board":
			event = f
		default:
			t.Fatalf("after SIGTERM: frame %+v, want a goaway, the call's reply and its board event", f)
		}
	}
	if m := decodeMessage(t, reply.Data); m.Text != "held" || m.Seq != event.Seq {
		t.Fatalf("board.slow replied %s with event %+v", reply.Data, event)
	}
	h.waitLog(`msg="demo: board.slow held until the drain" key=held`)
}
