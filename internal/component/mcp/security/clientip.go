package security

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// parseProxies turns trusted_proxies entries (single addresses or CIDR
// prefixes) into prefixes.
func parseProxies(entries []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for i, e := range entries {
		e = strings.TrimSpace(e)
		if strings.Contains(e, "/") {
			p, err := netip.ParsePrefix(e)
			if err != nil {
				return nil, fmt.Errorf("trusted_proxies[%d]: %q is not a valid CIDR prefix (want e.g. 10.0.0.0/8): %w", i, e, err)
			}
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(e)
		if err != nil {
			return nil, fmt.Errorf("trusted_proxies[%d]: %q is not an IP address or CIDR prefix: %w", i, e, err)
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

func (s *Stack) trusted(a netip.Addr) bool {
	if !a.IsValid() {
		return false
	}
	for _, p := range s.proxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// identify finds the direct peer and the client behind it. X-Forwarded-For is
// only read when the peer is a trusted proxy; otherwise anyone could pick
// their own identity (and rate-limit bucket) by sending the header.
func (s *Stack) identify(r *http.Request) request {
	peer := parseAddr(r.RemoteAddr)
	q := request{peer: peer, client: peer}
	if !s.trusted(peer) {
		return q
	}
	q.viaTrusted = true
	// Walk the chain right to left: the rightmost entries were appended by our
	// own proxies; the first address that is not a trusted proxy is the client.
	// Entries left of it were supplied by the client and are not believed.
	hops := forwardedFor(r.Header)
	for i := len(hops) - 1; i >= 0; i-- {
		a := parseAddr(hops[i])
		if !a.IsValid() {
			break
		}
		q.client = a
		if !s.trusted(a) {
			break
		}
	}
	return q
}

func forwardedFor(h http.Header) []string {
	var hops []string
	for _, v := range h.Values("X-Forwarded-For") {
		for _, part := range strings.Split(v, ",") {
			if part = strings.TrimSpace(part); part != "" {
				hops = append(hops, part)
			}
		}
	}
	return hops
}

// parseAddr accepts "ip", "ip:port", "[ipv6]:port" and "[ipv6]"; it returns
// the zero Addr when s is none of these (e.g. a unix-socket peer).
func parseAddr(s string) netip.Addr {
	s = strings.TrimSpace(s)
	if host, _, err := net.SplitHostPort(s); err == nil {
		s = host
	}
	s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}
	}
	return a.Unmap().WithZone("")
}

// reboundHost reports a request that arrived on a loopback listener but names
// a non-loopback host, the signature of a DNS-rebinding attack.
func reboundHost(r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || local == nil || !parseAddr(local.String()).IsLoopback() {
		return false
	}
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if strings.EqualFold(host, "localhost") {
		return false
	}
	return !parseAddr(host).IsLoopback()
}
