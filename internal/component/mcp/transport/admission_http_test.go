package transport

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// holdServer has a tool "hold" whose calls run until release is closed (or
// their context ends: cancelled counts those).
func holdServer(started, cancelled *atomic.Int64, release <-chan struct{}) *sdk.Server {
	srv := sdk.NewServer(&sdk.Implementation{Name: "hold", Version: "1"}, &sdk.ServerOptions{
		Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{}}})
	srv.AddTool(&sdk.Tool{Name: "hold", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			started.Add(1)
			select {
			case <-release:
				return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "done"}}}, nil
			case <-ctx.Done():
				cancelled.Add(1)
				return nil, ctx.Err()
			}
		})
	return srv
}

// postOwn posts body with a client of its own (another test's httptest server
// closing the default transport's idle connections cannot break it), reporting
// a failed request as an error rather than failing the test from a goroutine.
func postOwn(ctx context.Context, c *http.Client, url string, hdr map[string]string, body string) (rawReply, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return rawReply{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		return rawReply{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return rawReply{resp.StatusCode, resp.Header, string(b)}, err
}

func holdCall(id int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"hold","arguments":{}}}`, id)
}

// TestAdmissionHTTPOverload: with max_running 3 and no queue, 6 calls at once
// (2× the limit): 3 run, the 3 others get 503 + Retry-After and the JSON-RPC
// busy error (their ids, code -32030, data.retry_after) before any work, while
// pings, notifications and a cancellation still get through; every admitted
// call then succeeds. Stateful and stateless alike.
func TestAdmissionHTTPOverload(t *testing.T) {
	t.Parallel()
	for _, stateless := range []bool{false, true} {
		t.Run(fmt.Sprint("stateless=", stateless), func(t *testing.T) {
			t.Parallel()
			var started, cancelled atomic.Int64
			release := make(chan struct{})
			adm := NewAdmission(AdmissionOptions{MaxRunning: 3, Queue: -1})
			url := rawServer(t, holdServer(&started, &cancelled, release), Options{Stateless: stateless, Admission: adm})
			h := map[string]string{}
			if !stateless {
				h["Mcp-Session-Id"] = initSession(t, url)
			}
			var wg sync.WaitGroup
			client := &http.Client{Transport: &http.Transport{}}
			type reply struct {
				id  int
				r   rawReply
				err error
			}
			admitted := make(chan reply, 4)
			for i := range 3 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r, err := postOwn(testCtx(t), client, url, h, holdCall(100+i))
					admitted <- reply{100 + i, r, err}
				}()
			}
			waitFor(t, "3 running calls", func() bool { return started.Load() == 3 })
			for i := range 3 {
				r := send(t, http.MethodPost, url, h, holdCall(200+i))
				if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") != "1" {
					t.Fatalf("excess call %d: %d Retry-After %q %s", i, r.status, r.header.Get("Retry-After"), r.body)
				}
				var resp struct {
					ID    int `json:"id"`
					Error struct {
						Code    int
						Message string
						Data    struct {
							RetryAfter int `json:"retry_after"`
						}
					}
				}
				if err := json.Unmarshal([]byte(r.body), &resp); err != nil || resp.ID != 200+i || resp.Error.Code != CodeServerBusy ||
					resp.Error.Data.RetryAfter != 1 || !strings.Contains(resp.Error.Message, "server busy") {
					t.Fatalf("excess call %d body: %s (%v)", i, r.body, err)
				}
			}
			if n := started.Load(); n != 3 {
				t.Fatalf("%d calls started; a refused one ran", n)
			}
			if r := send(t, http.MethodPost, url, h, `{"jsonrpc":"2.0","id":9,"method":"ping"}`); r.status != http.StatusOK || !strings.Contains(r.body, `"result"`) {
				t.Fatalf("ping at the limit: %d %s", r.status, r.body)
			}
			if r := send(t, http.MethodPost, url, h, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"x","progress":1}}`); r.status != http.StatusAccepted {
				t.Fatalf("notification at the limit: %d %s", r.status, r.body)
			}
			if !stateless {
				// A cancellation reaches a running call although every slot is taken.
				if r := send(t, http.MethodPost, url, h, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":100}}`); r.status != http.StatusAccepted {
					t.Fatalf("cancellation at the limit: %d %s", r.status, r.body)
				}
				waitFor(t, "the cancelled call to end", func() bool { return cancelled.Load() == 1 })
				waitFor(t, "its slot to free", func() bool { return adm.Stats().Running == 2 })
				// The freed slot admits the next call.
				wg.Add(1)
				go func() {
					defer wg.Done()
					r, err := postOwn(testCtx(t), client, url, h, holdCall(300))
					admitted <- reply{300, r, err}
				}()
				waitFor(t, "the next call to run", func() bool { return started.Load() == 4 })
			}
			close(release)
			wg.Wait()
			close(admitted)
			for a := range admitted {
				if a.id == 100 && !stateless {
					continue // cancelled: the session does not answer it
				}
				if a.err != nil || a.r.status != http.StatusOK || !strings.Contains(a.r.body, "done") {
					t.Errorf("admitted call %d: %v %d %s", a.id, a.err, a.r.status, a.r.body)
				}
			}
			waitFor(t, "every slot back", func() bool { return adm.Stats().Running == 0 })
			s := adm.Stats()
			if s.Refused < 3 || s.Admitted < 3 {
				t.Fatalf("stats %+v", s)
			}
		})
	}
}

// TestAdmissionHTTPQueue: with a queue, calls beyond the limit wait for a slot
// instead of being refused, and all succeed.
func TestAdmissionHTTPQueue(t *testing.T) {
	t.Parallel()
	var started, cancelled atomic.Int64
	release := make(chan struct{})
	adm := NewAdmission(AdmissionOptions{MaxRunning: 2, Queue: 2, QueueTimeout: testTimeout})
	url := rawServer(t, holdServer(&started, &cancelled, release), Options{Stateless: true, Admission: adm})
	var wg sync.WaitGroup
	replies := make(chan rawReply, 4)
	for i := range 4 {
		wg.Add(1)
		go func() { defer wg.Done(); replies <- send(t, http.MethodPost, url, nil, holdCall(i+1)) }()
	}
	waitFor(t, "2 running and 2 waiting", func() bool { s := adm.Stats(); return s.Running == 2 && s.Waiting == 2 })
	if r := send(t, http.MethodPost, url, nil, holdCall(9)); r.status != http.StatusServiceUnavailable {
		t.Fatalf("beyond limit and queue: %d %s", r.status, r.body)
	}
	close(release)
	wg.Wait()
	close(replies)
	for r := range replies {
		if r.status != http.StatusOK || !strings.Contains(r.body, "done") {
			t.Errorf("queued call: %d %s", r.status, r.body)
		}
	}
	if s := adm.Stats(); s.Admitted != 4 || s.Queued != 2 || s.Refused != 1 || s.Running != 0 {
		t.Fatalf("stats %+v", s)
	}
}

// TestAdmissionBatchTakesASlotPerCall: a batch of 3 calls needs 3 slots; with 2
// free it is refused whole (one answer, the batch's first call id), none of its
// calls running.
func TestAdmissionBatchTakesASlotPerCall(t *testing.T) {
	t.Parallel()
	var started, cancelled atomic.Int64
	release := make(chan struct{})
	adm := NewAdmission(AdmissionOptions{MaxRunning: 3, Queue: -1})
	url := rawServer(t, holdServer(&started, &cancelled, release), Options{Admission: adm})
	sid := initSession(t, url)
	h := map[string]string{"Mcp-Session-Id": sid}
	first := make(chan rawReply, 1)
	go func() { first <- send(t, http.MethodPost, url, h, holdCall(1)) }()
	defer func() {
		close(release)
		if r := <-first; r.status != http.StatusOK {
			t.Errorf("admitted call: %d %s", r.status, r.body)
		}
	}()
	waitFor(t, "one running call", func() bool { return started.Load() == 1 })
	r := send(t, http.MethodPost, url, h, "["+holdCall(2)+","+holdCall(3)+","+`{"jsonrpc":"2.0","id":4,"method":"ping"}`+","+holdCall(5)+"]")
	if r.status != http.StatusServiceUnavailable || !strings.Contains(r.body, `"id":2`) || !strings.Contains(r.body, "-32030") {
		t.Fatalf("batch: %d %s", r.status, r.body)
	}
	if n := started.Load(); n != 1 {
		t.Fatalf("%d calls started", n)
	}
}

// TestAdmissionGoSDKClientSeesBusy: a go-sdk client whose call is refused gets
// an error naming the server as busy, not a bare transport failure.
func TestAdmissionGoSDKClientSeesBusy(t *testing.T) {
	t.Parallel()
	var started, cancelled atomic.Int64
	release := make(chan struct{})
	adm := NewAdmission(AdmissionOptions{MaxRunning: 1, Queue: -1})
	ts := httptest.NewServer(NewStreamableHandler(holdServer(&started, &cancelled, release), &Options{Admission: adm}))
	t.Cleanup(ts.Close)
	ctx := testCtx(t)
	client := sdk.NewClient(&sdk.Implementation{Name: "c", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: ts.URL, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cs.Close() }()
	first := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "hold", Arguments: map[string]any{}})
		first <- err
	}()
	waitFor(t, "the first call to run", func() bool { return started.Load() == 1 })
	// The go-sdk v1.8.0 client reads no body from a 503 (a transient status for
	// it): its error names the status, and the session stays usable.
	_, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "hold", Arguments: map[string]any{}})
	if err == nil || !strings.Contains(err.Error(), "Service Unavailable") || !strings.Contains(err.Error(), "rejected") {
		t.Fatalf("refused call: %v", err)
	}
	if n := started.Load(); n != 1 {
		t.Fatalf("%d calls ran", n)
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatalf("admitted call: %v", err)
	}
	if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "hold", Arguments: map[string]any{}}); err != nil {
		t.Fatalf("a call once the slot is free: %v", err)
	}
}
