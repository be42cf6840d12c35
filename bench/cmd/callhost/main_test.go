//go:build !js

package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/lifeline-go/lifeline/bench/callline"
	"github.com/lifeline-go/lifeline/hostplugin"
)

func TestTheHandlerPrintsARunLineForEachRunAndRepliesWithTheCall(t *testing.T) {
	var out bytes.Buffer
	p := &printer{w: &out}
	reply, err := p.handle(context.Background(), &hostplugin.Call{Name: handlerName, Data: []byte(`{"call":"3-17","workMs":1}`)})
	if err != nil || string(reply) != `{"call":"3-17"}` {
		t.Fatalf("handle = %s, %v; want {\"call\":\"3-17\"}", reply, err)
	}
	l, err := callline.Decode(bytes.TrimSpace(out.Bytes()))
	if err != nil || l.Event != callline.Run || l.Call != "3-17" || l.ID != -1 {
		t.Errorf("printed %q (%+v, %v); want one run line for 3-17", out.String(), l, err)
	}
}

func TestTheHandlerRunsNothingOnDataThatIsNotACall(t *testing.T) {
	for _, data := range []string{`null`, `{"workMs":5}`, `{"call":"1-1","workMs":-1}`, `"1-1"`} {
		var out bytes.Buffer
		p := &printer{w: &out}
		if _, err := p.handle(context.Background(), &hostplugin.Call{Name: handlerName, Data: []byte(data)}); err == nil || !strings.HasPrefix(err.Error(), "callhost: ") {
			t.Errorf("handle(%s) error = %v; want a callhost error", data, err)
		}
		if out.Len() != 0 {
			t.Errorf("handle(%s) printed %q; want no run line", data, out.String())
		}
	}
}

func TestTheHandlerStopsWorkingWhenTheHostCloses(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p := &printer{w: &bytes.Buffer{}}
	if _, err := p.handle(ctx, &hostplugin.Call{Name: handlerName, Data: []byte(`{"call":"0-0","workMs":60000}`)}); err == nil {
		t.Error("handle with an ended context and a minute of work returned no error")
	}
}
