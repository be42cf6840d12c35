package gateway_test

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

// sessionFrames are the functions of a session's goroutines: none may outlive its Run.
var sessionFrames = []string{
	"gateway.(*session).pump",
	"gateway.(*session).writer",
	"gateway.(*carrier).hangup",
}

// checkNoSessionGoroutines fails if a session goroutine is still alive once every Run has
// returned. It polls briefly: a goroutine that closed its done channel may still be on its
// way out.
func checkNoSessionGoroutines(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(time.Second)
	for {
		buf := make([]byte, 1<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		var alive []string
		for _, g := range strings.Split(stacks, "\n\n") {
			for _, f := range sessionFrames {
				if strings.Contains(g, f) {
					alive = append(alive, g)
					break
				}
			}
		}
		if len(alive) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d session goroutines outlived their Run:\n%s", len(alive), strings.Join(alive, "\n\n"))
		}
		time.Sleep(5 * time.Millisecond) // polling the runtime, bounded by deadline
	}
}
