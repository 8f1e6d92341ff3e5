package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestAdmissionDoorRefusal: while every slot is taken and the queue is full,
// calls are refused before their body is parsed (a call the parser refuses,
// "jsonrpc": "1.0", gets the busy 503 with its id, not -32600, and never
// runs); pings, initialize, notifications and a ping spelled with escapes are
// never refused at the door; once a slot is free calls run to their end.
func TestAdmissionDoorRefusal(t *testing.T) {
	t.Parallel()
	var started, cancelled atomic.Int64
	release := make(chan struct{})
	close(release)
	adm := NewAdmission(AdmissionOptions{MaxRunning: 1, Queue: -1})
	url := rawServer(t, holdServer(&started, &cancelled, release), Options{Stateless: true, Admission: adm})
	if !adm.Acquire(context.Background(), 1) { // the one slot, taken
		t.Fatal("the first acquire was refused")
	}

	const n = 20
	for range n {
		r := send(t, http.MethodPost, url, nil, `{"jsonrpc":"1.0","id":"q-1","method":"tools/call","params":{"name":"hold"}}`)
		var resp struct {
			ID    string `json:"id"`
			Error struct {
				Code int
				Data struct {
					RetryAfter int `json:"retry_after"`
				}
			}
		}
		if err := json.Unmarshal([]byte(r.body), &resp); err != nil || r.status != http.StatusServiceUnavailable || resp.ID != "q-1" ||
			resp.Error.Code != CodeServerBusy || resp.Error.Data.RetryAfter != 1 || r.header.Get("Retry-After") != "1" ||
			r.header.Get("Content-Type") != "application/json" {
			t.Fatalf("door refusal: %d %v %s (%v)", r.status, r.header, r.body, err)
		}
	}
	for i, body := range []string{
		`{"jsonrpc":"2.0","id":2,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":3,"method":"p\u0069ng"}`,
		initializeBody,
	} {
		if r := send(t, http.MethodPost, url, nil, body); r.status != http.StatusOK {
			t.Fatalf("message %d refused while full: %d %s", i, r.status, r.body)
		}
	}
	for _, body := range []string{
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"x","progress":1}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
	} {
		if r := send(t, http.MethodPost, url, nil, body); r.status != http.StatusAccepted {
			t.Fatalf("notification refused while full: %d %s", r.status, r.body)
		}
	}
	if started.Load() != 0 {
		t.Fatalf("%d refused calls ran", started.Load())
	}
	adm.Release(1)
	for range 5 {
		if r := send(t, http.MethodPost, url, nil, holdCall(9)); r.status != http.StatusOK || !strings.Contains(r.body, "done") {
			t.Fatalf("call with a slot free: %d %s", r.status, r.body)
		}
	}
	if s := adm.Stats(); s.RefusedAtDoor != n || s.Refused != n || started.Load() != 5 {
		t.Fatalf("stats %+v, started %d", s, started.Load())
	}
}

// TestAdmissionDoorWhenFull: a fixed limit refuses at the door only what an
// Acquire would refuse at once (every slot taken, the queue full), and never
// a ping.
func TestAdmissionDoorWhenFull(t *testing.T) {
	a := NewAdmission(AdmissionOptions{MaxRunning: 1, Queue: -1})
	if _, ok := a.atDoor([]byte(holdCall(1))); ok {
		t.Fatal("refused at the door with a slot free")
	}
	a.Acquire(context.Background(), 1)
	if id, ok := a.atDoor([]byte(holdCall(1))); !ok || string(id) != "1" {
		t.Fatalf("full: %q %v", id, ok)
	}
	if _, ok := a.atDoor([]byte(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)); ok {
		t.Fatal("a ping refused at the door")
	}
	a.Release(1)
	if _, ok := a.atDoor([]byte(holdCall(1))); ok {
		t.Fatal("refused at the door after the slot came back")
	}
	if s := a.Stats(); s.RefusedAtDoor != 1 || s.Refused != 1 {
		t.Fatalf("stats %+v", s)
	}
	var nilAdm *Admission
	if _, ok := nilAdm.atDoor([]byte(holdCall(1))); ok {
		t.Fatal("no admission control refused")
	}
}

func TestDoorCall(t *testing.T) {
	for body, want := range map[string]string{ // the id echoed; "" : not refused at the door
		holdCall(1): "1",
		`{"jsonrpc":"2.0","id":"a-b","method":"tools/list"}`:                                              `"a-b"`,
		`{"jsonrpc":"2.0","id":-7,"method":"resources/read","params":{"uri":"x"}}`:                        "-7",
		`  {"method":"tools/call","id":12}`:                                                               "12",
		`[{"jsonrpc":"2.0","id":1,"method":"tools/call"},{"jsonrpc":"2.0","id":2,"method":"tools/list"}]`: "", // a batch
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`:                                                        "",
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`:                                      "",
		`{"jsonrpc":"2.0","id":1,"method":"tasks/cancel","params":{"taskId":"t"}}`:                        "",
		`{"jsonrpc":"2.0","id":1,"method":"server/discover"}`:                                             "",
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`:                   "",
		`{"jsonrpc":"2.0","method":"tools/call"}`:                                                         "", // no id
		`{"jsonrpc":"2.0","id":null,"method":"tools/call"}`:                                               "",
		`{"jsonrpc":"2.0","id":1.5,"method":"tools/call"}`:                                                "",
		`{"jsonrpc":"2.0","id":12345678901234567890,"method":"tools/call"}`:                               "",
		`{"jsonrpc":"2.0","id":"a\"b","method":"tools/call"}`:                                             "",
		`{"jsonrpc":"2.0","id":1,"result":{}}`:                                                            "", // an answer to the server
		`{"jsonrpc":"2.0","id":1,"method":"tools/c\u0061ll"}`:                                             "",
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","method":"ping"}`:                                  "",
		`{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call"}`:                                           "",
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"na`:                                     "",
		`{"jsonrpc":"2.0","id":1,"method":"tools/call",`:                                                  "",
		`{"id`:                                "",
		`{`:                                   "",
		``:                                    "",
		`not json`:                            "",
		`{"\u0069d":1,"method":"tools/call"}`: "",
	} {
		id, ok := doorCall([]byte(body))
		if ok != (want != "") || string(id) != want {
			t.Errorf("doorCall(%s) = %q %v, want %q", body, id, ok, want)
		}
	}
}

// backendServer has a tool "work" that waits for one of slots (a backend of
// fixed capacity) and holds it for service.
func backendServer(slots int, service time.Duration, started, finished *atomic.Int64) *sdk.Server {
	sem := make(chan struct{}, slots)
	srv := sdk.NewServer(&sdk.Implementation{Name: "backend", Version: "1"}, &sdk.ServerOptions{
		Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{}}})
	srv.AddTool(&sdk.Tool{Name: "work", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			started.Add(1)
			defer finished.Add(1)
			sem <- struct{}{} // an admitted call waits for the backend, whatever its context does
			time.Sleep(service)
			<-sem
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "worked"}}}, nil
		})
	return srv
}

// TestAdmissionAdaptiveHTTPBackend: a tool waiting on a backend of 4 slots,
// first called by 4 clients (what the backend takes: the usual latency), then
// by 8 (twice that): the adaptive limit, started at 12, is cut below the 8
// clients (the latency the HTTP handler reports reaches the controller);
// every call gets its result or the busy 503, and every admitted call runs to
// its end.
func TestAdmissionAdaptiveHTTPBackend(t *testing.T) {
	t.Parallel()
	// A service time well above what a call costs the server under -race on a
	// loaded machine, so that the backend's queue is what the latency shows.
	const slots, service = 4, 30 * time.Millisecond
	var started, finished atomic.Int64
	adm := NewAdmission(AdmissionOptions{MaxRunning: 12, Adaptive: true})
	adm.control.min = 1 // not GOMAXPROCS: the test expects cuts below 8 on any machine
	url := rawServer(t, backendServer(slots, service, &started, &finished), Options{Stateless: true, Admission: adm})
	call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"work","arguments":{}}}`
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	defer client.CloseIdleConnections()

	var okCalls, busy atomic.Int64
	var failure atomic.Value
	run := func(clients int, d time.Duration) {
		var wg sync.WaitGroup
		end := time.Now().Add(d)
		for range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(end) {
					r, err := postOwn(testCtx(t), client, url, nil, call)
					switch {
					case err == nil && r.status == http.StatusOK && strings.Contains(r.body, "worked"):
						okCalls.Add(1)
					case err == nil && r.status == http.StatusServiceUnavailable && strings.Contains(r.body, fmt.Sprint(CodeServerBusy)):
						busy.Add(1)
					default:
						failure.CompareAndSwap(nil, fmt.Sprintf("%v %d %s", err, r.status, r.body))
						return
					}
				}
			}()
		}
		wg.Wait()
	}
	run(slots, 5*adaptiveInterval)
	lowest := make(chan int)
	stop := make(chan struct{})
	go func() {
		low := adm.Stats().MaxRunning
		for {
			select {
			case <-stop:
				lowest <- low
				return
			case <-time.After(time.Millisecond):
				low = min(low, adm.Stats().MaxRunning)
			}
		}
	}()
	run(2*slots, 15*adaptiveInterval)
	close(stop)
	low := <-lowest
	if f := failure.Load(); f != nil {
		t.Fatalf("a call failed: %s", f)
	}
	s := adm.Stats()
	// From 12 with 8 clients every call runs and takes about twice its usual
	// time: the cut takes the limit below 8. (Where it ends is the simulated
	// tests' business: on a loaded machine a cut may look as if it did not
	// help, and be undone, as meant.)
	if low >= 2*slots {
		t.Fatalf("limit went down to %d under twice the backend's capacity, want below %d", low, 2*slots)
	}
	waitFor(t, "every admitted call to end", func() bool { return adm.Stats().Running == 0 })
	if started.Load() != finished.Load() || finished.Load() != okCalls.Load() {
		t.Fatalf("started %d, finished %d, answered %d", started.Load(), finished.Load(), okCalls.Load())
	}
	t.Logf("ok %d busy %d, stats %+v", okCalls.Load(), busy.Load(), s)
}

// discardWriter is a ResponseWriter that keeps nothing but its headers.
type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (d *discardWriter) WriteHeader(int)             {}

// BenchmarkAdmissionRefusal: the handler's own CPU for refusing a tools/call
// POST when every slot is taken: after parsing it (an id with an escape keeps
// it from the door) and at the door. The HTTP server's reading and writing,
// the same for both, come on top (scripts/bench-overload.sh measures the
// whole against a call).
func BenchmarkAdmissionRefusal(b *testing.B) {
	for _, c := range []struct{ name, id string }{{"parsed", `"r\u0031"`}, {"door", `"r1"`}} {
		b.Run(c.name, func(b *testing.B) {
			body := []byte(`{"jsonrpc":"2.0","id":` + c.id + `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}`)
			full := NewAdmission(AdmissionOptions{MaxRunning: 1, Queue: -1})
			full.Acquire(context.Background(), 1) // every slot taken, no queue
			var started, cancelled atomic.Int64
			h := NewStreamableHandler(holdServer(&started, &cancelled, nil), &Options{Stateless: true, Admission: full, DisableLocalhostProtection: true})
			rd := bytes.NewReader(body)
			req, _ := http.NewRequest(http.MethodPost, "http://x/mcp", io.NopCloser(rd))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
			req.ContentLength = int64(len(body))
			w := &discardWriter{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				rd.Reset(body)
				clear(w.h)
				h.ServeHTTP(w, req)
			}
			s := full.Stats()
			if door := s.RefusedAtDoor > 0; s.Refused == 0 || s.Admitted > 1 || door != (c.name == "door") {
				b.Fatalf("not refused as meant: %+v", s)
			}
		})
	}
}
