// Package jetstream is a stream log on NATS JetStream for the Host plugin: a
// [hostplugin.StreamLog] shared by every Host of a fleet, so that a page resumes by its cursor
// on whichever Host it reaches.
//
//	log, err := jetstream.Connect("nats://127.0.0.1:4222", &jetstream.Options{Replicas: 3})
//	h, err := hostplugin.New(cfg, &hostplugin.Options{Log: log})
//
// It is a package (and a module) of its own so that an application that keeps the default
// in-memory log links and downloads no NATS client: only importing this package brings in
// github.com/nats-io/nats.go.
//
// The package builds natively only, as hostplugin does.
package jetstream
