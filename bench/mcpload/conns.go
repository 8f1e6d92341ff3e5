package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"sync/atomic"
	"syscall"
	"time"
)

// How the load tool's clients connect, beyond the default of one keep-alive
// connection each.
//
//   - A new connection per call (-new-conn): every request goes out on a fresh TCP
//     connection that is closed after its answer, as a client without connection
//     reuse does (a script, a serverless function, a proxy that does not pool). It
//     measures the accept path: the handshake, the server's per-connection setup
//     and its connection limits.
//   - Several source addresses (-sources N): clients connect from 127.0.0.1 …
//     127.0.0.N in turn, all of them this machine's loopback on Linux. A thousand
//     clients of a real server come from many addresses; from one address they are
//     one host opening a thousand connections, which a server's per-address cap
//     (Helix's max_connections_per_ip, 256 by default) refuses by design. Spreading
//     the clients over addresses keeps that cap on, as users run it.

// connMode names a run's connection handling in results and tables.
func connMode(newConn bool) string {
	if newConn {
		return "new"
	}
	return "keep-alive"
}

// maxSources bounds -sources: 127.0.0.1 … 127.0.0.254.
const maxSources = 254

// loopbackSources returns the n source addresses 127.0.0.1 … 127.0.0.n, after
// checking that target (the server's URL) is an IPv4 loopback address that such
// sources can reach.
func loopbackSources(n int, target string) ([]netip.Addr, error) {
	if n < 1 || n > maxSources {
		return nil, fmt.Errorf("-sources %d: want 1 to %d loopback addresses", n, maxSources)
	}
	if n == 1 {
		return nil, nil // the system picks, as without the flag
	}
	u, err := url.Parse(target)
	if err != nil {
		return nil, fmt.Errorf("-url %q: %w", target, err)
	}
	ip, err := netip.ParseAddr(u.Hostname())
	if err != nil || !ip.Is4() || !ip.IsLoopback() {
		return nil, fmt.Errorf("-sources %d needs a server on an IPv4 loopback address (-url http://127.0.0.1:PORT/…), not %q: "+
			"the clients connect from 127.0.0.1 … 127.0.0.%d", n, u.Host, n)
	}
	out := make([]netip.Addr, n)
	for i := range out {
		out[i] = netip.AddrFrom4([4]byte{127, 0, 0, byte(i + 1)})
	}
	return out, nil
}

// loadClients returns one HTTP client per load client, each with a transport of
// its own that holds at most one connection: -clients N is N keep-alive
// connections at the server, as a thousand separate MCP clients are. A shared
// pool would not keep to that: a request that finds no idle connection dials a
// new one and, if another connection frees up first, takes that one and leaves
// the dialled connection idle beside it, so the server would hold more
// connections (each with its buffers and goroutine) than there are clients.
// With newConn every request goes out on a fresh connection; dials spread over
// sources in turn (nil: the system's choice).
func loadClients(n int, timeout time.Duration, newConn bool, sources []netip.Addr) []*http.Client {
	var dial func(ctx context.Context, network, addr string) (net.Conn, error)
	if len(sources) > 1 {
		var next atomic.Uint64
		dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			src := sources[(next.Add(1)-1)%uint64(len(sources))]
			d := net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second,
				LocalAddr: &net.TCPAddr{IP: src.AsSlice()}}
			return d.DialContext(ctx, network, addr)
		}
	}
	out := make([]*http.Client, n)
	for i := range out {
		hc := newHTTPClient(1, timeout)
		tr := hc.Transport.(*http.Transport)
		tr.MaxConnsPerHost = 1
		tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 1, 1
		tr.DisableKeepAlives = newConn
		if dial != nil {
			tr.DialContext = dial
		}
		out[i] = hc
	}
	return out
}

// checkFileLimit fails early when the clients' connections cannot fit in the
// process's file descriptors (soft RLIMIT_NOFILE, which Go raises to the hard
// limit at start): otherwise the run would report dial errors instead of the
// server's figures.
func checkFileLimit(clients int) error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return nil // unknown: let the run show it
	}
	// Each client holds one connection, and a new-connection run may hold a closing
	// one beside it; the rest is the tool's own files and the memstats client.
	need := uint64(2*clients + 64)
	if lim.Cur < need {
		return fmt.Errorf("-clients %d needs about %d file descriptors, the limit is %d (ulimit -n; raise the hard limit)",
			clients, need, lim.Cur)
	}
	return nil
}
