//go:build !js

package hostplugin_test

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/lifeline-go/lifeline/hostplugin"
)

func prefixes(s ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(s))
	for i, p := range s {
		out[i] = netip.MustParsePrefix(p)
	}
	return out
}

var (
	loopbackOnly = prefixes("127.0.0.0/8", "::1/128") // the default
	withLAN      = prefixes("127.0.0.0/8", "::1/128", "10.0.0.0/8", "fd00::/8")
)

func TestPageAddrBelievesXForwardedForOnlyFromTrustedProxies(t *testing.T) {
	tests := []struct {
		name    string
		remote  string
		xff     []string // header lines, in order
		trusted []netip.Prefix
		want    string // "" = not limited per address
	}{
		// Direct peers.
		{name: "a peer that is no proxy is the client", remote: "203.0.113.7:40000", want: "203.0.113.7"},
		{name: "an untrusted peer's X-Forwarded-For is ignored", remote: "203.0.113.7:40000",
			xff: []string{"198.51.100.9"}, want: "203.0.113.7"},
		{name: "an untrusted peer cannot pass for loopback", remote: "203.0.113.7:40000",
			xff: []string{"127.0.0.1"}, want: "203.0.113.7"},
		{name: "an untrusted peer cannot pass for a trusted chain", remote: "203.0.113.7:40000",
			xff: []string{"198.51.100.9, 10.0.0.2"}, trusted: withLAN, want: "203.0.113.7"},
		{name: "an IPv6 peer is the client", remote: "[2001:db8::7]:40000", want: "2001:db8::7"},
		{name: "an IPv4-mapped peer is its IPv4 address", remote: "[::ffff:203.0.113.7]:40000", want: "203.0.113.7"},
		{name: "a peer's zone is dropped", remote: "[fe80::7%eth0]:40000", want: "fe80::7"},
		{name: "a peer without a port is read too", remote: "203.0.113.7", want: "203.0.113.7"},
		{name: "a peer that is not an address (a Unix socket) is not limited", remote: "@", want: ""},

		// One trusted proxy.
		{name: "a local proxy that names no client is not limited", remote: "127.0.0.1:5000", want: ""},
		{name: "a local proxy's client is believed", remote: "127.0.0.1:5000",
			xff: []string{"203.0.113.7"}, want: "203.0.113.7"},
		{name: "a client's own X-Forwarded-For left of its address is not read", remote: "127.0.0.1:5000",
			xff: []string{"192.0.2.1, 198.51.100.9, 203.0.113.7"}, want: "203.0.113.7"},
		{name: "a spoofed loopback left of the client is not read", remote: "127.0.0.1:5000",
			xff: []string{"127.0.0.1, 203.0.113.7"}, want: "203.0.113.7"},
		{name: "a client on loopback behind a local proxy is not limited", remote: "127.0.0.1:5000",
			xff: []string{"127.0.0.1"}, want: ""},
		{name: "any loopback address is a local proxy", remote: "127.0.0.2:5000",
			xff: []string{"203.0.113.7"}, want: "203.0.113.7"},
		{name: "an IPv6 loopback proxy's client is believed", remote: "[::1]:5000",
			xff: []string{"2001:db8::7"}, want: "2001:db8::7"},

		// Chains.
		{name: "trusted hops are passed over to the client", remote: "127.0.0.1:5000",
			xff: []string{"203.0.113.7, 10.0.0.2, 10.0.0.3"}, trusted: withLAN, want: "203.0.113.7"},
		{name: "an untrusted proxy in the chain is the client as far as anyone vouches", remote: "127.0.0.1:5000",
			xff: []string{"203.0.113.7, 198.51.100.9"}, want: "198.51.100.9"},
		{name: "header lines are one list, in order", remote: "127.0.0.1:5000",
			xff: []string{"192.0.2.1, 203.0.113.7", "10.0.0.2"}, trusted: withLAN, want: "203.0.113.7"},
		{name: "an empty last line is no entry to skip", remote: "127.0.0.1:5000",
			xff: []string{"203.0.113.7", ""}, want: ""},
		{name: "a chain of trusted hops only is not limited", remote: "10.0.0.3:5000",
			xff: []string{"10.0.0.1, 127.0.0.1"}, trusted: withLAN, want: ""},
		{name: "a LAN proxy is trusted only when configured", remote: "10.0.0.3:5000",
			xff: []string{"203.0.113.7"}, want: "10.0.0.3"},
		{name: "IPv6 hops", remote: "[fd00::3]:5000",
			xff: []string{"2001:db8::7, fd00::2"}, trusted: withLAN, want: "2001:db8::7"},

		// How entries are written.
		{name: "spaces and tabs around entries are dropped", remote: "127.0.0.1:5000",
			xff: []string{"192.0.2.1 ,\t203.0.113.7\t"}, want: "203.0.113.7"},
		{name: "an IPv4 entry with a port", remote: "127.0.0.1:5000",
			xff: []string{"203.0.113.7:40000"}, want: "203.0.113.7"},
		{name: "an IPv6 entry with a port", remote: "127.0.0.1:5000",
			xff: []string{"[2001:db8::7]:40000"}, want: "2001:db8::7"},
		{name: "an IPv6 entry in brackets", remote: "127.0.0.1:5000",
			xff: []string{"[2001:db8::7]"}, want: "2001:db8::7"},
		{name: "an IPv4-mapped entry is its IPv4 address", remote: "127.0.0.1:5000",
			xff: []string{"::ffff:203.0.113.7"}, want: "203.0.113.7"},
		{name: "an IPv4-mapped loopback is trusted", remote: "127.0.0.1:5000",
			xff: []string{"203.0.113.7, ::ffff:127.0.0.1"}, want: "203.0.113.7"},
		{name: "an entry's zone is dropped", remote: "127.0.0.1:5000",
			xff: []string{"fe80::7%eth0"}, want: "fe80::7"},

		// Malformed entries end the chain where they stand.
		{name: "a malformed entry left of the client is not read", remote: "127.0.0.1:5000",
			xff: []string{"not an address, 203.0.113.7"}, want: "203.0.113.7"},
		{name: "a proxy that writes unknown names no client", remote: "127.0.0.1:5000",
			xff: []string{"203.0.113.7, unknown"}, want: ""},
		{name: "a proxy on a Unix socket names no client", remote: "127.0.0.1:5000",
			xff: []string{"unix:"}, want: ""},
		{name: "an empty entry names no client", remote: "127.0.0.1:5000",
			xff: []string{"203.0.113.7,"}, want: ""},
		{name: "the unspecified address names no client", remote: "127.0.0.1:5000",
			xff: []string{"203.0.113.7, 0.0.0.0"}, want: ""},
		{name: "a malformed hop between trusted ones ends the chain", remote: "127.0.0.1:5000",
			xff: []string{"203.0.113.7, 10.0.0.2:x:y, 10.0.0.3"}, trusted: withLAN, want: ""},

		// Nothing trusted.
		{name: "trusting no proxy makes loopback a client", remote: "127.0.0.1:5000",
			xff: []string{"203.0.113.7"}, trusted: []netip.Prefix{}, want: "127.0.0.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			trusted := tt.trusted
			if trusted == nil {
				trusted = loopbackOnly
			}
			addr, ok := hostplugin.PageAddr(tt.remote, tt.xff, trusted)
			got := ""
			if ok {
				got = addr.String()
			}
			if got != tt.want || ok != (tt.want != "") {
				t.Errorf("PageAddr(%q, %q) = %v, %v; want %q", tt.remote, tt.xff, addr, ok, tt.want)
			}
		})
	}
}

func TestDefaultConfigTrustsLoopbackOnly(t *testing.T) {
	got := hostplugin.DefaultConfig().TrustedProxies()
	if len(got) != len(loopbackOnly) || got[0] != loopbackOnly[0] || got[1] != loopbackOnly[1] {
		t.Errorf("DefaultConfig().TrustedProxies() = %v, want %v", got, loopbackOnly)
	}
}

// FuzzPageAddr: whatever the header says, an untrusted peer is its own client, and a client
// found is never a trusted proxy and is in the form the limiter keys (no zone, not
// IPv4-mapped), so that one client cannot spread itself over many buckets.
func FuzzPageAddr(f *testing.F) {
	f.Add("127.0.0.1:5000", "203.0.113.7")
	f.Add("127.0.0.1:5000", "192.0.2.1, 203.0.113.7, 10.0.0.2")
	f.Add("[::1]:5000", "[2001:db8::7]:443,fe80::1%eth0")
	f.Add("203.0.113.7:40000", "127.0.0.1")
	f.Add("10.0.0.3:1", "unknown, ::ffff:10.0.0.1")
	f.Add("@", "")
	f.Fuzz(func(t *testing.T, remote, xff string) {
		lines := strings.Split(xff, "\n")
		addr, ok := hostplugin.PageAddr(remote, lines, withLAN)
		peer, peerOK := hostplugin.PageAddr(remote, nil, nil)
		trusted := false
		for _, p := range withLAN {
			trusted = trusted || (peerOK && p.Contains(peer))
		}
		if peerOK && !trusted && (!ok || addr != peer) {
			t.Fatalf("PageAddr(%q, %q) = %v, %v; want the untrusted peer %v", remote, lines, addr, ok, peer)
		}
		if !ok {
			return
		}
		for _, p := range withLAN {
			if p.Contains(addr) {
				t.Fatalf("PageAddr(%q, %q) = %v: a trusted proxy (%v)", remote, lines, addr, p)
			}
		}
		if addr.Zone() != "" || addr.Is4In6() || !addr.IsValid() {
			t.Fatalf("PageAddr(%q, %q) = %v: not in the limiter's form", remote, lines, addr)
		}
	})
}
