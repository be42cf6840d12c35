package hub_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/lifeline-go/lifeline/controller"
	"github.com/lifeline-go/lifeline/gateway"
	"github.com/lifeline-go/lifeline/wasm/internal/hub"
)

func TestKindNamesEveryFailureAPageExplains(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{nil, ""},
		{fmt.Errorf("%w after 15s", controller.ErrDeadline), "timeout"},
		{fmt.Errorf("%w: ws://h: refused", gateway.ErrDial), "refused"},
		{&controller.RetryAfterError{After: time.Second, Err: fmt.Errorf("%w: 1013", gateway.ErrOverloaded)}, "busy"},
		{fmt.Errorf("%w: a binary message", gateway.ErrProtocol), "protocol"},
		{fmt.Errorf("gateway: 401: %w", controller.ErrUnauthorized), "unauthorized"},
		{&controller.RetryAfterError{After: time.Second, Err: fmt.Errorf("%w: 1012", controller.ErrHostRestarting)}, "restarting"},
		{fmt.Errorf("%w: no frame for 37s", gateway.ErrLinkDead), "silent"},
		{fmt.Errorf("%w: EOF", gateway.ErrSessionClosed), "closed"},
		{controller.ErrEnded, "closed"},
		{controller.ErrOffline, "offline"},
		{errors.New("something else"), "other"},
	} {
		if got := hub.Kind(tc.err); got != tc.want {
			t.Errorf("Kind(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
	if got := hub.RetryAfter(&controller.RetryAfterError{After: 1500 * time.Millisecond, Err: gateway.ErrOverloaded}); got != 1500*time.Millisecond {
		t.Errorf("RetryAfter = %v", got)
	}
}
