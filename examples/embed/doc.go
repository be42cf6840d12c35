// Command embed is the smallest application that embeds Lifeline: its own mux and its own
// page, which carries no Lifeline markup at all (the Host plugin serves its client and injects
// it, with a default connection indicator), a sign-in stub, and one private stream per user
// that only that user may read.
//
//	go run ./examples/embed -addr 127.0.0.1:8090 [-config lifeline.json]
//
// Open http://127.0.0.1:8090/login?user=alice: the page connects and shows alice's events,
// published once a second to the stream "user.alice". Without the cookie the page shows
// "Sign-in required". The sign-in is a stub: /login?user=NAME sets the cookie user=NAME, which
// anyone can forge; a real application sets a signed session cookie and checks it in
// Authenticate.
//
// "Sign out everywhere" (a POST of /signout, signout.go) ends the user's sign-in and every
// page of theirs at once: each tab, in every browser, shows "Sign-in required" with the reason
// (Host.EndSessions; docs/access.md).
//
// The code an embedder writes for Lifeline is in lifeline.go and signout.go; the rest is the
// application.
package main
