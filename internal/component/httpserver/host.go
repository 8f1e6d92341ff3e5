package httpserver

import (
	"fmt"
	"net"
	nethttp "net/http"
	"net/netip"
	"slices"
	"strings"

	"github.com/arvenza/helix/internal/netguard"
)

// DNS rebinding: a web page on evil.example whose name is rebound to
// 127.0.0.1 reaches a loopback listener from the victim's browser, with
// Host: evil.example. A loopback listener therefore serves only requests whose
// Host is a loopback name (localhost, 127.0.0.0/8, ::1) or one listed in
// allowedHosts (the names a reverse proxy on the same host forwards); any
// listener with allowedHosts serves only those. allowedHosts=* switches the
// check off. The MCP and management listeners follow the same rule.

// hostPolicy is the allowedHosts option of a listener.
type hostPolicy struct {
	any   bool
	hosts []string // lower-case host or host:port, sorted
}

// parseAllowedHosts reads allowedHosts values (each may be comma-separated).
func parseAllowedHosts(vs []string) (hostPolicy, error) {
	var p hostPolicy
	for _, v := range vs {
		for _, h := range strings.Split(v, ",") {
			h = strings.ToLower(strings.TrimSpace(h))
			switch {
			case h == "":
				continue
			case h == "*":
				p.any = true
				continue
			case strings.ContainsAny(h, "/@?# \t") || strings.Contains(h, "://"):
				return hostPolicy{}, fmt.Errorf("option allowedHosts=%q: %q is not a host name; want names such as api.example.com or api.example.com:8443, comma-separated, or *", v, h)
			}
			p.hosts = append(p.hosts, h)
		}
	}
	slices.Sort(p.hosts)
	p.hosts = slices.Compact(p.hosts)
	return p, nil
}

func (p hostPolicy) equal(o hostPolicy) bool { return p.any == o.any && slices.Equal(p.hosts, o.hosts) }

func (p hostPolicy) String() string {
	if p.any {
		return "*"
	}
	return strings.Join(p.hosts, ",")
}

// refuses reports whether req's Host is not one the listener serves.
func (p hostPolicy) refuses(req *nethttp.Request) bool {
	if p.any {
		return false
	}
	loopback := arrivedOnLoopback(req)
	if !loopback && len(p.hosts) == 0 {
		return false
	}
	host := strings.ToLower(req.Host)
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	}
	if loopback && isLoopbackName(name) {
		return false
	}
	for _, a := range p.hosts {
		if a == host || a == name {
			return false
		}
	}
	return true
}

func arrivedOnLoopback(req *nethttp.Request) bool {
	local, ok := req.Context().Value(nethttp.LocalAddrContextKey).(net.Addr)
	if !ok || local == nil {
		return false
	}
	ap, err := netip.ParseAddrPort(local.String())
	return err == nil && ap.Addr().Unmap().IsLoopback()
}

func isLoopbackName(name string) bool {
	if name == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(name, "["), "]"))
	return err == nil && a.Unmap().IsLoopback()
}

// parseProxyOptions reads the trustedProxies and proxyProtocol options.
func parseProxyOptions(trusted []string, protocol bool) (netguard.ProxyOptions, error) {
	var entries []string
	for _, v := range trusted {
		entries = append(entries, strings.Split(v, ",")...)
	}
	prefixes, err := netguard.ParseTrustedProxies("option trustedProxies", entries)
	if err != nil {
		return netguard.ProxyOptions{}, err
	}
	if protocol && len(prefixes) == 0 {
		return netguard.ProxyOptions{}, fmt.Errorf("option proxyProtocol=true needs trustedProxies: the addresses of the balancers whose PROXY header is believed (e.g. trustedProxies=10.0.0.0/8)")
	}
	return netguard.ProxyOptions{Trusted: prefixes, Protocol: protocol}, nil
}

func sameProxies(a, b netguard.ProxyOptions) bool {
	return a.Protocol == b.Protocol && slices.Equal(a.Trusted, b.Trusted)
}
