//go:build !js

package jetstream_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/hostplugin/jetstream"
	"github.com/lifeline-go/lifeline/internal/wire"
)

// relayHost is a Host of a fleet on ns, with the NATS relay, over loopback.
func relayHost(t *testing.T, ns *natsServer) (*hostplugin.Host, string) {
	t.Helper()
	log := ns.connect(t, nil)
	h, err := hostplugin.New(hostplugin.DefaultConfig(), &hostplugin.Options{
		Logger: slog.New(slog.DiscardHandler), Log: log, Relay: jetstream.NewRelay(log),
		Authorize: hostplugin.PublicStreams, NoClient: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	h.SetReady(true)
	srv := httptest.NewServer(h.Handler(http.NotFoundHandler()))
	t.Cleanup(func() { _ = h.Close(); srv.Close() })
	return h, srv.URL + wire.DefaultPath
}

// next reads frames from the stream until one of type typ, failing after bound.
func next(t *testing.T, body io.Reader, scan *wire.EventScanner, typ string) wire.HostFrame {
	t.Helper()
	deadline := time.Now().Add(bound)
	buf := make([]byte, 4096)
	for time.Now().Before(deadline) {
		for {
			b, err := scan.Next()
			if err != nil {
				t.Fatal(err)
			}
			if b == nil {
				break
			}
			f, err := wire.DecodeHost(b)
			if err != nil {
				t.Fatal(err)
			}
			if f.T == typ {
				return f
			}
		}
		n, err := body.Read(buf)
		scan.Write(buf[:n])
		if err != nil {
			t.Fatalf("the stream ended: %v", err)
		}
	}
	t.Fatalf("no %s frame within %v", typ, bound)
	return wire.HostFrame{}
}

func TestAPOSTToAnotherHostIsRelayedOverNATSToItsSession(t *testing.T) {
	ns := startNATS(t)
	a, aURL := relayHost(t, ns)
	_, bURL := relayHost(t, ns)
	if _, err := a.Publish(context.Background(), "s", json.RawMessage(`6`)); err != nil {
		t.Fatal(err) // the stream's log is born: the next event follows the subscription's reset
	}
	resp, err := http.Get(aURL + "?" + wire.CarrierParam + "=" + wire.CarrierStream)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var scan wire.EventScanner
	ready := next(t, resp.Body, &scan, wire.TypeReady)
	// The balancer sends the page's POST to the other Host.
	env := wire.Envelope{T: wire.EnvelopeSend, Session: ready.Session, Secret: ready.Secret, Seq: 1}
	body := wire.AppendLine(wire.AppendLine(nil, env.Encode()), []byte(`{"t":"sub","stream":"s"}`))
	post, err := http.Post(bURL, wire.SendType, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	post.Body.Close()
	if post.StatusCode != http.StatusNoContent {
		t.Fatalf("the POST at the other Host: %d, want 204 from the session's own", post.StatusCode)
	}
	if r := next(t, resp.Body, &scan, wire.TypeReset); r.Stream != "s" {
		t.Fatalf("reset %+v", r)
	}
	if _, err := a.Publish(context.Background(), "s", json.RawMessage(`7`)); err != nil {
		t.Fatal(err)
	}
	if e := next(t, resp.Body, &scan, wire.TypeEvent); string(e.Data) != "7" {
		t.Fatalf("event %+v", e)
	}
	// Another session's secret is refused there as here.
	env.Secret, env.Seq = "not-the-secret", 2
	post, err = http.Post(bURL, wire.SendType, bytes.NewReader(wire.AppendLine(nil, env.Encode())))
	if err != nil {
		t.Fatal(err)
	}
	post.Body.Close()
	if post.StatusCode != http.StatusNotFound {
		t.Fatalf("a POST without the secret, relayed: %d, want 404", post.StatusCode)
	}
}
