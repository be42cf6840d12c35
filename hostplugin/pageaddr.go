//go:build !js

package hostplugin

import (
	"net"
	"net/netip"
	"strings"
)

// xffHeader is the header through which trusted proxies name the address they received a
// request from.
const xffHeader = "X-Forwarded-For"

// pageAddr returns the address a request's per-address limit applies to, from the request's
// direct peer (remoteAddr, "ip:port"), its X-Forwarded-For header lines (xff, in order) and the
// trusted proxies. It returns false when there is no such address: the request comes from a
// trusted proxy that names no browser beyond the trusted proxies.
//
// The rule is "the right-most address that is not a trusted proxy", read only when the peer is
// trusted: every proxy appends the address it received the request from (nginx's
// $proxy_add_x_forwarded_for), so reading back from the right, each entry was written by a
// trusted proxy up to the first address that is not one. That address is the browser's, or the
// nearest proxy nobody vouches for; everything left of it came from the browser and may be
// forged. A peer that is not trusted is the browser, whatever it sends.
//
// The chain of believable hops also ends, without the browser's address, at an entry that is
// not an address (a proxy that writes "unknown", or "unix:" when it listens on a socket file):
// the browser is then as unknown as with no header at all. Left-most rules (the first valid entry)
// would let any browser pick its own address, and so its own rate bucket.
func pageAddr(remoteAddr string, xff []string, trusted []netip.Prefix) (netip.Addr, bool) {
	peer, ok := parseHop(remoteAddr)
	if !ok {
		// Not an IP peer (a Unix socket): only a local process can be one.
		return netip.Addr{}, false
	}
	if !isTrusted(peer, trusted) {
		return peer, true
	}
	for i := len(xff) - 1; i >= 0; i-- {
		list := xff[i]
		for {
			j := strings.LastIndexByte(list, ',')
			a, ok := parseHop(strings.TrimSpace(list[j+1:]))
			if !ok {
				return netip.Addr{}, false
			}
			if !isTrusted(a, trusted) {
				return a, true
			}
			if j < 0 {
				break
			}
			list = list[:j]
		}
	}
	return netip.Addr{}, false
}

// parseHop reads one address as a peer or a proxy writes it: "203.0.113.7", "203.0.113.7:5000",
// "2001:db8::7", "[2001:db8::7]" or "[2001:db8::7]:443". The zone is dropped and IPv4-mapped
// IPv6 unmapped, so that one browser has one rate bucket however it is written; the unspecified
// address is no browser's.
func parseHop(s string) (netip.Addr, bool) {
	if host, _, err := net.SplitHostPort(s); err == nil {
		s = host
	} else if len(s) > 2 && s[0] == '[' && s[len(s)-1] == ']' {
		s = s[1 : len(s)-1]
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.IsUnspecified() {
		return netip.Addr{}, false
	}
	return a.WithZone("").Unmap(), true
}

func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// defaultTrustedProxies are loopback: a reverse proxy on the same machine keeps working as it
// did when loopback was exempt from the per-address rate, and names its clients if it sends
// X-Forwarded-For.
var defaultTrustedProxies = []string{"127.0.0.0/8", "::1"}

// parseTrustedProxy reads one entry of trustedProxies: an address (a prefix of its full
// length) or a CIDR prefix. It returns the rule the entry breaks, or "". Entries that could
// never match a peer, or would match more than was written, are refused rather than fixed:
// a zone (peers are matched without one), IPv4 written as IPv6 (peers are unmapped), and a
// prefix with address bits past its length ("10.0.0.1/8": meant /8 or /32?).
func parseTrustedProxy(s string) (netip.Prefix, string) {
	const what = `must be an IP address like "10.0.0.5" or a CIDR prefix like "10.0.0.0/8"`
	if strings.Contains(s, "%") {
		return netip.Prefix{}, "must not carry a zone (the part from %): a peer's address is matched without one"
	}
	if !strings.Contains(s, "/") {
		a, err := netip.ParseAddr(s)
		switch {
		case err != nil:
			return netip.Prefix{}, what
		case a.Is4In6():
			return netip.Prefix{}, `must write an IPv4 address as IPv4 ("` + a.Unmap().String() + `")`
		}
		return netip.PrefixFrom(a, a.BitLen()), ""
	}
	p, err := netip.ParsePrefix(s)
	switch {
	case err != nil:
		return netip.Prefix{}, what
	case p.Addr().Is4In6():
		return netip.Prefix{}, "must write an IPv4 prefix as IPv4, not as ::ffff:0:0/96 inside IPv6"
	case p != p.Masked():
		return netip.Prefix{}, `must have no address bits set past the prefix length ("` + p.Masked().String() + `")`
	}
	return p, ""
}

// formatTrustedProxy writes a prefix back as parseTrustedProxy reads it, an address alone when
// the prefix is one address.
func formatTrustedProxy(p netip.Prefix) string {
	if p.IsSingleIP() {
		return p.Addr().String()
	}
	return p.String()
}

// mustTrustedProxies parses entries that passed validation (or the defaults).
func mustTrustedProxies(entries []string) []netip.Prefix {
	out := make([]netip.Prefix, 0, len(entries))
	for _, s := range entries {
		p, rule := parseTrustedProxy(s)
		if rule != "" {
			panic("hostplugin: trusted proxy " + quote(s) + " " + rule)
		}
		out = append(out, p)
	}
	return out
}
