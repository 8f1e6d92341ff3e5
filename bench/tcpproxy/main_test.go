package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// upstream answers POST with the body and session header echoed, and GET with
// an event stream whose second event is written only after the test read the
// first one through the proxy: a proxy that holds the stream back never
// delivers it.
func upstream(t *testing.T, firstRead <-chan struct{}) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodPost:
			b, _ := io.ReadAll(r.Body)
			w.Header().Set("Mcp-Session-Id", "s-"+r.Header.Get("Mcp-Session-Id"))
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"host":%q,"got":%s}`, r.Host, b)
		case http.MethodGet:
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: one\n\n")
			w.(http.Flusher).Flush()
			select {
			case <-firstRead:
			case <-r.Context().Done():
				return
			}
			fmt.Fprint(w, "data: two\n\n")
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func startProxy(t *testing.T, mode, up string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- run(ctx, mode, "127.0.0.1:0", up, ready) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	})
	select {
	case a := <-ready:
		return a.String()
	case err := <-done:
		t.Fatalf("run: %v", err)
	}
	return ""
}

func TestProxiesForward(t *testing.T) {
	for _, mode := range []string{"tcp", "http", "h1"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			firstRead := make(chan struct{})
			up := upstream(t, firstRead)
			addr := startProxy(t, mode, up.URL)
			hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			defer hc.CloseIdleConnections()

			// Several calls on one keep-alive connection, heads and bodies intact.
			for i := range 3 {
				body := fmt.Sprintf(`{"n":%d}`, i)
				req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/mcp", strings.NewReader(body))
				req.Header.Set("Mcp-Session-Id", fmt.Sprint(i))
				resp, err := hc.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				got, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				want := fmt.Sprintf(`{"host":%q,"got":%s}`, addr, body)
				if string(got) != want || resp.Header.Get("Mcp-Session-Id") != fmt.Sprintf("s-%d", i) {
					t.Fatalf("call %d: %q, session %q; want %q", i, got, resp.Header.Get("Mcp-Session-Id"), want)
				}
			}

			// An event stream's first event arrives before the upstream wrote the second.
			resp, err := hc.Get("http://" + addr + "/mcp")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			br := bufio.NewReader(resp.Body)
			line, err := br.ReadString('\n')
			if err != nil || line != "data: one\n" {
				t.Fatalf("first event: %q, %v", line, err)
			}
			close(firstRead)
			rest, _ := io.ReadAll(br)
			if string(rest) != "\ndata: two\n\n" {
				t.Fatalf("rest of the stream: %q", rest)
			}
		})
	}
}

func TestH1AnswersBadRequests(t *testing.T) {
	t.Parallel()
	up := upstream(t, nil)
	addr := startProxy(t, "h1", up.URL)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Minute)) // a bound for a broken proxy only
	fmt.Fprint(c, "NOT HTTP\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("status %d, want 400", resp.StatusCode)
	}
}

func TestUpstreamAndModeChecked(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ mode, up, want string }{
		{"tcp", "", "-upstream is required"},
		{"tcp", "https://example.com/mcp", "only http upstreams"},
		{"tcp", "localhost", "want host:port"},
		{"udp", "127.0.0.1:1", `-mode "udp"`},
	} {
		err := run(context.Background(), c.mode, "127.0.0.1:0", c.up, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("mode %s upstream %q: %v, want %q", c.mode, c.up, err, c.want)
		}
	}
}
