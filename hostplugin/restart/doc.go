// Package restart lets a Host be replaced without closing its port, and stop without making
// anyone wait when nothing replaces it.
//
// A graceful restart (a new binary, a new config) starts the successor with the listening
// socket inherited ([github.com/cloudflare/tableflip]): the port never closes, so there is
// no moment at which a page's dial is refused. The successor serves and says it is ready;
// only then does the old process stop accepting and drain its sessions with an empty-uri
// GOAWAY. A page's GOAWAY handover is make-before-break, so its dial back to the same place
// lands on the successor while the old session still delivers: nobody notices. The old
// process exits once its pages have left (at most the config's drainTimeoutMs).
//
// A [Restarter] also takes a listening socket from systemd socket activation (LISTEN_FDS,
// LISTEN_PID), so that a socket-activated unit keeps its port open through systemctl
// restart, and hands such a socket on to a successor like any other.
//
// The usual wiring in a Host's main:
//
//	r, err := restart.New(&restart.Options{PIDFile: *pidFile})
//	defer r.Stop()
//	ln, err := r.Listen("tcp", *addr) // the predecessor's socket, systemd's, or a new one
//	srv := &http.Server{Handler: h.Handler(app)}
//	go srv.Serve(ln)                  // (tls.NewListener(ln, cfg) for https)
//	h.SetReady(true)
//	err = r.Ready()                   // the predecessor drains its pages to us and exits
//
//	// SIGUSR2: go r.Upgrade()        // starts the successor, waits until it is ready
//	select {
//	case <-r.Replaced():              // a successor serves in our place
//	case <-sigterm:                   // a plain stop: nobody does
//	}
//	r.Shutdown(ctx, srv, h)
//
// [Restarter.Shutdown] picks how the sessions end: drained to the successor when there is
// one; without one, closed at once with 1012 (service restart, [hostplugin.Host.Stop]),
// since a GOAWAY would send the pages to a port nobody serves while the process waited out
// its drain; or, for a Host behind a load balancer whose other Hosts take its pages
// ([Options].DrainWithoutSuccessor), drained all the same.
//
// It ends things in the order every Host's main does, with or without this package: the
// sessions first (Drain or Stop), then h.Close, then srv.Shutdown. Before all three it stops
// accepting on the listeners it handed out, so that a page told to come back reaches the
// successor rather than this process on its way out.
//
// The successor is the same executable path (os.Args[0]) with the same arguments and
// environment; replace the binary at that path first to deploy new code. Only one upgrader
// can exist in a process (a limit of tableflip): the first Restarter of a process owns it,
// and a later one (a test, an example) serves and shuts down alike but cannot upgrade.
//
// The package is separate from hostplugin so that an embedder who does not use it does not
// link tableflip. Handing a socket on works where tableflip does (Linux, where it is tested,
// and macOS); elsewhere Upgrade returns ErrNotSupported and the rest works as documented.
package restart
