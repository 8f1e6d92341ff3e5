// Command tcpproxy is the floor of the gateway benchmark: the least a second
// process in the path between a client and an MCP server can cost on the
// machine, measured with the same load tool, rate and upstream as the gateway
// (scripts/bench-gateway.sh, GATEWAY=tcpproxy, httpproxy or h1proxy).
//
//	-mode tcp    bytes forwarded as they come: per client connection one
//	             upstream connection and two goroutines copying, nothing parsed.
//	-mode http   net/http's server and httputil.ReverseProxy (net/http's client
//	             transport): HTTP/1.1 heads parsed and rewritten, bodies
//	             streamed through unread (event streams flushed as they come).
//	-mode h1     HTTP/1.1 forwarded in the client connection's goroutine: each
//	             request's head parsed and written to the connection's own
//	             upstream connection, the answer's head parsed and the answer
//	             copied back, with no goroutine hand-off and no background read
//	             (the shape of a server and client loop of one's own).
//
//	tcpproxy -mode tcp -addr 127.0.0.1:3110 -upstream 127.0.0.1:3102
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"
)

func main() {
	mode := flag.String("mode", "tcp", "tcp, http or h1")
	addr := flag.String("addr", "127.0.0.1:3110", "listen address")
	up := flag.String("upstream", "", "the upstream's host:port (or an http:// URL: its host is taken)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *mode, *addr, *up, nil); err != nil {
		fmt.Fprintln(os.Stderr, "tcpproxy:", err)
		os.Exit(1)
	}
}

// run serves until ctx ends; ready, when set, receives the bound address.
func run(ctx context.Context, mode, addr, up string, ready chan<- net.Addr) error {
	target, err := upstreamHost(up)
	if err != nil {
		return err
	}
	var serve func(net.Listener) error
	switch mode {
	case "tcp":
		serve = func(ln net.Listener) error { return serveTCP(ln, target) }
	case "http":
		serve = func(ln net.Listener) error { return serveHTTP(ln, target) }
	case "h1":
		serve = func(ln net.Listener) error { return serveH1(ln, target) }
	default:
		return fmt.Errorf("-mode %q: want tcp, http or h1", mode)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	go func() { <-ctx.Done(); ln.Close() }()
	if ready != nil {
		ready <- ln.Addr()
	}
	log.Printf("%s proxy on %s in front of %s", mode, ln.Addr(), target)
	if err := serve(ln); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}

// upstreamHost is the host:port of up, given as host:port or as an http URL.
func upstreamHost(up string) (string, error) {
	if up == "" {
		return "", errors.New("-upstream is required")
	}
	if strings.Contains(up, "://") {
		u, err := url.Parse(up)
		if err != nil {
			return "", fmt.Errorf("-upstream %q: %w", up, err)
		}
		if u.Scheme != "http" {
			return "", fmt.Errorf("-upstream %q: only http upstreams are forwarded", up)
		}
		up = u.Host
	}
	if _, port, err := net.SplitHostPort(up); err != nil || port == "" {
		return "", fmt.Errorf("-upstream %q: want host:port", up)
	}
	return up, nil
}

// accept calls handle in a goroutine for every accepted connection, until the
// listener is closed.
func accept(ln net.Listener, handle func(net.Conn)) error {
	for {
		c, err := ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(5 * time.Millisecond)
				continue
			}
			return err
		}
		go handle(c)
	}
}

func dialUpstream(target string) (net.Conn, error) {
	return net.DialTimeout("tcp", target, 5*time.Second)
}

// serveTCP forwards bytes both ways, one upstream connection per client
// connection.
func serveTCP(ln net.Listener, target string) error {
	return accept(ln, func(c net.Conn) {
		defer c.Close()
		u, err := dialUpstream(target)
		if err != nil {
			log.Printf("dial %s: %v", target, err)
			return
		}
		defer u.Close()
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			pipe(u, c)
		}()
		pipe(c, u)
		wg.Wait()
	})
}

// pipe copies from src to dst until src ends, then half-closes dst so that
// the other side sees the end too.
func pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	if tc, ok := dst.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	} else {
		dst.Close()
	}
}

// serveHTTP is net/http's server with httputil.ReverseProxy in front of target.
func serveHTTP(ln net.Listener, target string) error {
	u := &url.URL{Scheme: "http", Host: target}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.Out.Host = pr.In.Host // the upstream checks Host against loopback names
		},
		// Event streams (and every other answer) go out as they arrive.
		FlushInterval: -1,
		Transport: &http.Transport{
			Proxy:               nil,
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:        1024,
			MaxIdleConnsPerHost: 1024,
			IdleConnTimeout:     90 * time.Second,
			DisableCompression:  true,
		},
		ErrorLog: log.New(os.Stderr, "reverse proxy: ", 0),
	}
	srv := &http.Server{Handler: rp, ReadHeaderTimeout: 10 * time.Second}
	return srv.Serve(ln)
}

// serveH1 forwards HTTP/1.1 in each client connection's goroutine, on an
// upstream connection of its own.
func serveH1(ln net.Listener, target string) error {
	return accept(ln, func(c net.Conn) {
		p := &h1conn{c: c, target: target, cr: bufio.NewReaderSize(c, 4096), cw: bufio.NewWriterSize(c, 4096)}
		p.serve()
	})
}

// h1conn is one client connection of the h1 mode and its upstream connection.
type h1conn struct {
	c, u   net.Conn
	target string
	cr, ur *bufio.Reader
	cw, uw *bufio.Writer
}

func (p *h1conn) serve() {
	defer func() {
		p.c.Close()
		if p.u != nil {
			p.u.Close()
		}
	}()
	for {
		req, err := http.ReadRequest(p.cr)
		if err != nil {
			if !errors.Is(err, io.EOF) {
				p.fail(http.StatusBadRequest, "bad request: "+err.Error())
			}
			return
		}
		if req.Header.Get("Upgrade") != "" {
			p.fail(http.StatusNotImplemented, "upgrades are not forwarded")
			return
		}
		if p.u == nil {
			u, err := dialUpstream(p.target)
			if err != nil {
				p.fail(http.StatusBadGateway, "upstream: "+err.Error())
				return
			}
			p.u, p.ur, p.uw = u, bufio.NewReaderSize(u, 4096), bufio.NewWriterSize(u, 4096)
		}
		if err := req.Write(p.uw); err != nil {
			p.fail(http.StatusBadGateway, "upstream: "+err.Error())
			return
		}
		if err := p.uw.Flush(); err != nil {
			p.fail(http.StatusBadGateway, "upstream: "+err.Error())
			return
		}
		keep, err := p.answer(req)
		if err != nil || !keep {
			return
		}
	}
}

// answer copies the upstream's answer to req back to the client (informational
// answers first); it reports whether both connections stay open.
func (p *h1conn) answer(req *http.Request) (bool, error) {
	for {
		resp, err := http.ReadResponse(p.ur, req)
		if err != nil {
			p.fail(http.StatusBadGateway, "upstream: "+err.Error())
			return false, err
		}
		// The body goes out as it comes: whatever was read is flushed to the
		// client before the next read would wait on the upstream.
		resp.Body = &flushingBody{ReadCloser: resp.Body, src: p.ur, dst: p.cw}
		err = resp.Write(p.cw)
		if err == nil {
			err = p.cw.Flush()
		}
		if err != nil {
			// The client went away: the upstream connection goes too (closing
			// the body would otherwise read the rest of the answer first).
			p.u.Close()
			resp.Body.Close()
			return false, err
		}
		resp.Body.Close()
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			return !req.Close && !resp.Close, nil
		}
	}
}

// fail answers the client with code and closes the exchange.
func (p *h1conn) fail(code int, msg string) {
	resp := &http.Response{StatusCode: code, ProtoMajor: 1, ProtoMinor: 1, Close: true,
		Header:        http.Header{"Content-Type": {"text/plain; charset=utf-8"}},
		ContentLength: int64(len(msg) + 1), Body: io.NopCloser(strings.NewReader(msg + "\n"))}
	if resp.Write(p.cw) == nil {
		_ = p.cw.Flush()
	}
}

// flushingBody flushes dst before a read of the body would wait for src.
type flushingBody struct {
	io.ReadCloser
	src *bufio.Reader
	dst *bufio.Writer
}

func (b *flushingBody) Read(p []byte) (int, error) {
	if b.src.Buffered() == 0 && b.dst.Buffered() > 0 {
		if err := b.dst.Flush(); err != nil {
			return 0, err
		}
	}
	return b.ReadCloser.Read(p)
}
