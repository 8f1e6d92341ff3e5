package transport

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

type rawReply struct {
	status int
	header http.Header
	body   string
}

func send(t *testing.T, method, url string, hdr map[string]string, body string) rawReply {
	t.Helper()
	req, err := http.NewRequestWithContext(testCtx(t), method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return rawReply{resp.StatusCode, resp.Header, string(b)}
}

func initSession(t *testing.T, url string) string {
	t.Helper()
	r := send(t, http.MethodPost, url, nil, initializeBody)
	sid := r.header.Get("Mcp-Session-Id")
	if r.status != http.StatusOK || sid == "" || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("initialize: %d %q %s", r.status, sid, r.body)
	}
	if r := send(t, http.MethodPost, url, map[string]string{"Mcp-Session-Id": sid}, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); r.status != http.StatusAccepted {
		t.Fatalf("initialized: %d %s", r.status, r.body)
	}
	return sid
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

const callEcho = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"a":1}}}`

// testTimeout is generous: the suite runs on a loaded 2-core machine with -race.
const testTimeout = 60 * time.Second

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}
