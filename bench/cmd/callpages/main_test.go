//go:build !js

package main

import (
	"errors"
	"testing"

	"github.com/lifeline-go/lifeline/bench/callline"
	"github.com/lifeline-go/lifeline/gateway"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// What the gateway says is what the harness is told, in callline's words: unknown only for a
// call sent and left without an outcome.
func TestVerdictSaysUnknownOnlyForACallSentWithoutAnOutcome(t *testing.T) {
	for _, tc := range []struct {
		name      string
		reply     wire.RawJSON
		err       error
		told, why string
	}{
		{"the call's own reply is ok", wire.RawJSON(`{"call":"1-2"}`), nil, callline.Ok, ""},
		{"another call's reply is mixed", wire.RawJSON(`{"call":"1-3"}`), nil, callline.Mixed, `the reply {"call":"1-3"}`},
		{"a sent call interrupted is unknown", nil, &gateway.CallError{Kind: gateway.CallInterrupted, Sent: true}, callline.Unknown, "interrupted (sent)"},
		{"a sent call timed out is unknown", nil, &gateway.CallError{Kind: gateway.CallTimeout, Sent: true}, callline.Unknown, "timeout (sent)"},
		{"a call timed out before it was sent failed", nil, &gateway.CallError{Kind: gateway.CallTimeout}, callline.Failed, "timeout (not sent)"},
		{"a call the Host refused as busy failed", nil, &gateway.CallError{Kind: gateway.CallBusy, Sent: true}, callline.Failed, "busy (sent)"},
		{"a call closed before it was sent failed", nil, &gateway.CallError{Kind: gateway.CallClosed}, callline.Failed, "closed (not sent)"},
		{"an error that is no CallError failed", nil, errors.New("gateway: something else"), callline.Failed, "gateway: something else"},
	} {
		told, why := verdict("1-2", tc.reply, tc.err)
		if told != tc.told || why != tc.why {
			t.Errorf("%s: verdict = %q, %q; want %q, %q", tc.name, told, why, tc.told, tc.why)
		}
	}
}
