package netguard

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"

	proxyproto "github.com/pires/go-proxyproto"
)

// Behind a load balancer every connection comes from the balancer's address,
// so max_connections_per_ip would cap the whole fleet of clients at once.
// Connections from the trusted proxies of a listener are therefore not counted
// per address; with the PROXY protocol (v1 or v2, which HAProxy's send-proxy
// and nginx's proxy_protocol speak) the balancer names the real client at the
// start of each connection, and that address is counted per address instead
// and becomes the connection's RemoteAddr (so rate limits and logs see the
// client too). The PROXY header is only believed from a trusted proxy: from
// anyone else it is not read, and the HTTP server refuses it as a malformed
// request. A trusted proxy may also connect without the header (its own
// health checks); such a connection counts as the proxy's.
//
// The header is read on a goroutine of its own, within headerTimeout, so that
// a balancer that stalls holds one connection slot, not the accept loop.

// ProxyOptions are the balancer settings of one listener.
type ProxyOptions struct {
	// Trusted are the proxies' addresses (trusted_proxies).
	Trusted []netip.Prefix
	// Protocol reads a PROXY protocol header from trusted proxies.
	Protocol bool
}

// ParseTrustedProxies reads trusted_proxies entries: addresses or CIDR
// prefixes. key names the setting in errors (trusted_proxies, trustedProxies).
func ParseTrustedProxies(key string, entries []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for i, e := range entries {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		if strings.Contains(e, "/") {
			p, err := netip.ParsePrefix(e)
			if err != nil {
				return nil, fmt.Errorf("%s[%d]: %q is not a valid CIDR prefix (want e.g. 10.0.0.0/8)", key, i, e)
			}
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(e)
		if err != nil {
			return nil, fmt.Errorf("%s[%d]: %q is not an IP address or CIDR prefix (want e.g. 10.0.0.5 or 10.0.0.0/8)", key, i, e)
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// TrustProxies sets the balancer settings of l; call it before the first
// Accept.
func (l *Listener) TrustProxies(o ProxyOptions) {
	l.proxies = o
}

func (l *Listener) trusted(a netip.Addr) bool {
	for _, p := range l.proxies.Trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// peerAddr is the connection's direct peer (IPv6 unmapped, no zone).
func peerAddr(a net.Addr) netip.Addr {
	if t, ok := a.(*net.TCPAddr); ok {
		ip := t.AddrPort().Addr().Unmap().WithZone("")
		return ip
	}
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap().WithZone("")
}

// proxied is what the accept loop of a PROXY-protocol listener hands to Accept.
type proxied struct {
	c   net.Conn
	err error
}

// acceptProxied is Accept for a listener that reads PROXY headers: one
// goroutine accepts, one per trusted connection reads its header, and Accept
// takes whichever connection is ready first.
func (l *Listener) acceptProxied() (net.Conn, error) {
	l.loopOnce.Do(func() {
		l.ready = make(chan proxied)
		l.closed = make(chan struct{})
		go l.proxyAcceptLoop()
	})
	if l.closed == nil { // closed before the first Accept
		return nil, net.ErrClosed
	}
	select {
	case p := <-l.ready:
		return p.c, p.err
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *Listener) proxyAcceptLoop() {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			if !l.hand(proxied{err: err}) || errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		peer := peerAddr(c.RemoteAddr())
		if !peer.IsValid() || !l.trusted(peer) {
			key := clientKey(c.RemoteAddr())
			if reason := l.admit(key); reason != "" {
				l.reject(c, key, reason)
				continue
			}
			if !l.hand(proxied{c: &conn{Conn: c, l: l, key: key}}) {
				_ = c.Close()
				return
			}
			continue
		}
		// A trusted proxy: counted towards max_connections now, per address
		// once its header names the client.
		if reason := l.admit(netip.Addr{}); reason != "" {
			l.reject(c, peer, reason)
			continue
		}
		go l.readProxyHeader(&conn{Conn: c, l: l})
	}
}

// readProxyHeader reads the PROXY header of a trusted proxy's connection and
// hands the connection on, counted against the client it names.
func (l *Listener) readProxyHeader(gc *conn) {
	raw := gc.Conn
	pc := proxyproto.NewConn(raw, proxyproto.SetReadHeaderTimeout(headerTimeout),
		func(c *proxyproto.Conn) { c.ProxyHeaderPolicy = proxyproto.USE })
	h := pc.ProxyHeader() // reads the header (or finds there is none)
	if h == nil || h.Command.IsLocal() || h.SourceAddr == nil {
		// Without a client (no header, a LOCAL or UNKNOWN one: health checks;
		// or a broken header, whose error comes back from the first Read) the
		// connection is the proxy's own, not counted per address.
		gc.Conn = pc
		if !l.hand(proxied{c: gc}) {
			_ = gc.Close()
		}
		return
	}
	key := clientKey(pc.RemoteAddr())
	if reason := l.admitClient(key); reason != "" {
		l.reject(raw, key, reason)
		_ = gc.Close() // releases the slot taken for the proxy (gc.key is still unset)
		return
	}
	gc.Conn, gc.key = pc, key
	if !l.hand(proxied{c: gc}) {
		_ = gc.Close()
	}
}

// hand gives p to Accept; false once the listener is closed.
func (l *Listener) hand(p proxied) bool {
	select {
	case l.ready <- p:
		return true
	case <-l.closed:
		return false
	}
}

// admitClient counts one more connection of an already admitted trusted
// proxy's connection against the client key it forwards.
func (l *Listener) admitClient(key netip.Addr) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !key.IsValid() {
		return ""
	}
	if l.perIP > 0 && l.byKey[key] >= l.perIP {
		return fmt.Sprintf("max_connections_per_ip (%d) reached", l.perIP)
	}
	l.byKey[key]++
	return ""
}

// proxyState is the part of Listener the PROXY protocol needs.
type proxyState struct {
	proxies  ProxyOptions
	loopOnce sync.Once
	ready    chan proxied
	closed   chan struct{}
}
