//go:build !js

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/lifeline-go/lifeline/hostplugin"
	"github.com/lifeline-go/lifeline/hostplugin/jetstream"
)

// fleetFlags select the stream log: the in-memory ring (none set), a JetStream log on NATS
// servers (-nats), or on a NATS server embedded in this Host (-nats-embedded).
type fleetFlags struct {
	natsURL     string
	embeddedDir string
	embeddedAt  string
	replicas    int
	shards      int
	maxEvents   int
	maxAge      time.Duration
	migrate     bool
}

// sharedLog is what cmd/host needs of a fleet's log beyond hostplugin.StreamLog.
type sharedLog interface {
	hostplugin.StreamLog
	Health() jetstream.Health
	AppendUnique(ctx context.Context, stream, id string, build func(seq uint64) json.RawMessage) (hostplugin.Event, bool, error)
	Close() error
}

// openLog returns the stream log the flags ask for (nil: the default ring) and a function
// that releases it.
func openLog(f fleetFlags, id string, logger *slog.Logger) (sharedLog, func(), error) {
	url := f.natsURL
	var ns *server.Server
	if f.embeddedDir != "" {
		if url != "" {
			return nil, nil, errors.New("-nats and -nats-embedded exclude each other")
		}
		host, portText, err := net.SplitHostPort(f.embeddedAt)
		if err != nil {
			return nil, nil, fmt.Errorf("-nats-addr %q: %v", f.embeddedAt, err)
		}
		port, err := strconv.Atoi(portText)
		if err != nil {
			return nil, nil, fmt.Errorf("-nats-addr %q: bad port", f.embeddedAt)
		}
		if err := os.MkdirAll(f.embeddedDir, 0o755); err != nil {
			return nil, nil, fmt.Errorf("-nats-embedded: %v", err)
		}
		ns, err = server.NewServer(&server.Options{
			ServerName: "lifeline-" + id,
			Host:       host,
			Port:       port,
			JetStream:  true,
			StoreDir:   f.embeddedDir,
			NoSigs:     true, // this process's signals are the Host's
			NoLog:      true,
		})
		if err != nil {
			return nil, nil, fmt.Errorf("-nats-embedded: %v", err)
		}
		ns.Start()
		if !ns.ReadyForConnections(10 * time.Second) {
			ns.Shutdown()
			return nil, nil, errors.New("-nats-embedded: the NATS server did not start within 10 s")
		}
		url = ns.ClientURL()
		logger.Info("host: embedded NATS with JetStream", "url", url, "dir", f.embeddedDir)
	}
	if url == "" {
		return nil, func() {}, nil
	}
	log, err := jetstream.Connect(url, &jetstream.Options{
		Replicas:  f.replicas,
		Shards:    f.shards,
		MaxEvents: f.maxEvents,
		MaxAge:    f.maxAge,
		Migrate:   f.migrate,
		Logger:    logger,
		Name:      "lifeline-host " + id,
	})
	if err != nil {
		if ns != nil {
			ns.Shutdown()
		}
		return nil, nil, err
	}
	logger.Info("host: stream log on NATS JetStream", "url", url, "replicas", max(f.replicas, 1), "shards", max(f.shards, 1))
	return log, func() {
		_ = log.Close()
		if ns != nil {
			ns.Shutdown()
			ns.WaitForShutdown()
		}
	}, nil
}

// fleetTicks publishes the demo stream once a second from every Host of a fleet, with the
// second as the event's id: exactly one tick per second lands in the shared log, whichever
// Hosts are up, and n is its sequence number as on a single Host.
func fleetTicks(ctx context.Context, h *hostplugin.Host, log sharedLog, logger *slog.Logger) {
	setTicksBaseline(h)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			id := "ticks-" + strconv.FormatInt(now.Unix(), 10)
			_, _, err := log.AppendUnique(ctx, "ticks", id, func(seq uint64) json.RawMessage {
				return fmt.Appendf(nil, `{"n":%d,"at":%d}`, seq, now.UnixMilli())
			})
			if err != nil && ctx.Err() == nil {
				logger.Error("host: publishing a tick", "err", err)
			}
		}
	}
}

func setTicksBaseline(h *hostplugin.Host) {
	h.SetBaseline("ticks", func(_ string, head hostplugin.Cursor) (json.RawMessage, error) {
		return json.RawMessage(fmt.Sprintf(`{"n":%d}`, head.Seq)), nil
	})
}

// hostStream is the stream a page subscribes to for the id of the Host it is on. Nothing is
// ever published to it: every subscription, after every reconnect, is answered with a reset
// whose baseline comes from the Host serving the socket, so the page shows where it really is.
const hostStream = "host"

func setHostBaseline(h *hostplugin.Host, id string) {
	b, _ := json.Marshal(map[string]string{"host": id})
	h.SetBaseline(hostStream, func(string, hostplugin.Cursor) (json.RawMessage, error) { return b, nil })
}
