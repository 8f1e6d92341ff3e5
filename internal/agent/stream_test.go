package agent_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/agent"
	"github.com/arvenza/helix/internal/agent/agenttest"
	"github.com/arvenza/helix/internal/report"
)

func userTurn(text string) *agent.ModelRequest {
	return &agent.ModelRequest{Messages: []agent.Message{{Role: agent.RoleUser, Text: text}}}
}

// collect returns an OnText that keeps the deltas, and the deltas so far.
func collect() (func(string), func() []string) {
	var deltas []string
	return func(d string) { deltas = append(deltas, d) }, func() []string { return deltas }
}

// streamFailure asserts err is a non-retryable provider error of a stream whose
// message contains want and never the API key.
func streamFailure(t *testing.T, provider string, err error, want string) {
	t.Helper()
	t.Log(err)
	var pe *agent.ProviderError
	if !errors.As(err, &pe) {
		t.Fatalf("err = %#v, want a *agent.ProviderError", err)
	}
	if pe.Provider != provider || pe.Retryable() || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), secretKey) {
		t.Fatalf("err = %v (provider %q, retryable %v), want one containing %q without the key", err, pe.Provider, pe.Retryable(), want)
	}
}

func TestStreaming(t *testing.T) {
	for _, p := range providers {
		t.Run(p.name, func(t *testing.T) {
			model := func(t *testing.T, replies ...agenttest.Reply) (agent.Model, *agenttest.Server) {
				srv := p.server(t, replies...)
				return p.model(t, srv.BaseURL(), httpClient(t)), srv
			}

			t.Run("TextArrivesAsOrderedDeltas", func(t *testing.T) {
				const text = "Bonjour, le monde — streamed in pieces ✓"
				m, srv := model(t, agenttest.Reply{Text: text, InputTokens: 12, OutputTokens: 9})
				req := userTurn("hi")
				onText, deltas := collect()
				req.OnText = onText
				resp, err := m.Generate(context.Background(), req)
				if err != nil {
					t.Fatal(err)
				}
				if len(deltas()) < 3 || strings.Join(deltas(), "") != text || resp.Message.Text != text {
					t.Fatalf("deltas %q, text %q; want several deltas adding up to %q", deltas(), resp.Message.Text, text)
				}
				if resp.Usage != (agent.Usage{InputTokens: 12, OutputTokens: 9}) || len(resp.Message.ToolCalls) != 0 {
					t.Fatalf("response = %+v", resp)
				}
				body := srv.Requests()[0]
				if body["stream"] != true {
					t.Fatalf("request not streamed: %v", body)
				}
				if opts, _ := body["stream_options"].(map[string]any); p.name == "openai" && opts["include_usage"] != true {
					t.Fatalf("stream_options.include_usage not asked for: %v", body)
				}
			})

			t.Run("WithoutOnTextNotStreamed", func(t *testing.T) {
				m, srv := model(t, agenttest.Reply{Text: "whole"})
				resp, err := m.Generate(context.Background(), userTurn("hi"))
				if err != nil || resp.Message.Text != "whole" {
					t.Fatalf("resp %+v, err %v", resp, err)
				}
				if _, ok := srv.Requests()[0]["stream"]; ok {
					t.Fatalf("request has stream: %v", srv.Requests()[0])
				}
			})

			t.Run("ParallelToolCallsAssembled", func(t *testing.T) {
				want := []agent.ToolCall{
					call("call_1", "add", `{"a": 12, "b": 30}`),
					call("call_2", "lookup", `{"query": "weather in Paris", "limit": 3}`),
				}
				m, _ := model(t, agenttest.Reply{Text: "Let me check.", InputTokens: 40, OutputTokens: 21, Calls: []agenttest.Call{
					{ID: "call_1", Name: "add", Args: `{"a": 12, "b": 30}`},
					{ID: "call_2", Name: "lookup", Args: `{"query": "weather in Paris", "limit": 3}`}}})
				req := userTurn("go")
				onText, deltas := collect()
				req.OnText = onText
				resp, err := m.Generate(context.Background(), req)
				if err != nil {
					t.Fatal(err)
				}
				got := resp.Message.ToolCalls
				if len(got) != 2 {
					t.Fatalf("tool calls = %+v", got)
				}
				for i := range want {
					if got[i].ID != want[i].ID || got[i].Name != want[i].Name || string(got[i].Arguments) != string(want[i].Arguments) {
						t.Errorf("call %d = %s %s %s, want %s %s %s", i, got[i].ID, got[i].Name, got[i].Arguments, want[i].ID, want[i].Name, want[i].Arguments)
					}
				}
				if resp.Message.Text != "Let me check." || strings.Join(deltas(), "") != "Let me check." || resp.Usage != (agent.Usage{InputTokens: 40, OutputTokens: 21}) {
					t.Fatalf("response = %+v, deltas %q", resp, deltas())
				}
			})

			t.Run("RetryAfter429BeforeStream", func(t *testing.T) {
				m, srv := model(t,
					agenttest.Reply{Status: 429, Header: map[string]string{"Retry-After": "0"}, Error: "rate limited"},
					agenttest.Reply{Status: 503, Error: "busy"},
					agenttest.Reply{Text: "ok after all"})
				a := mustNew(t, agent.Config{ID: "s", Stream: true, RetryBackoff: time.Millisecond}, m, nil)
				res, err := a.Run(context.Background(), agent.Request{Message: "go"})
				if err != nil || res.Text != "ok after all" || len(srv.Requests()) != 3 {
					t.Fatalf("res %+v, err %v, %d requests", res, err, len(srv.Requests()))
				}
				for _, body := range srv.Requests() {
					if body["stream"] != true {
						t.Fatalf("a request was not streamed: %v", body)
					}
				}
			})

			t.Run("StatusBeforeStreamKeepsRetryAfter", func(t *testing.T) {
				m, _ := model(t, agenttest.Reply{Status: 429, Header: map[string]string{"Retry-After": "7"}, Error: "slow down " + secretKey})
				req := userTurn("hi")
				req.OnText = func(string) { t.Error("text from a failed request") }
				_, err := m.Generate(context.Background(), req)
				var pe *agent.ProviderError
				if !errors.As(err, &pe) || pe.StatusCode != 429 || pe.RetryAfter != 7*time.Second || !pe.Retryable() || strings.Contains(err.Error(), secretKey) {
					t.Fatalf("err = %v", err)
				}
			})

			t.Run("ErrorEventMidStream", func(t *testing.T) {
				const text = "a partial answer that will not finish"
				m, _ := model(t, agenttest.Reply{Text: text, StreamError: "overloaded for key " + secretKey})
				req := userTurn("hi")
				onText, deltas := collect()
				req.OnText = onText
				_, err := m.Generate(context.Background(), req)
				streamFailure(t, p.name, err, "error event in the stream")
				if !strings.Contains(err.Error(), "overloaded for key [redacted]") {
					t.Fatalf("err = %v, want the provider's message", err)
				}
				if got := strings.Join(deltas(), ""); got == "" || got == text || !strings.HasPrefix(text, got) {
					t.Fatalf("deltas before the error = %q, want a proper prefix of %q", got, text)
				}
			})

			t.Run("MalformedChunk", func(t *testing.T) {
				m, _ := model(t, agenttest.Reply{Text: "some text before the garbage", StreamMalformed: true})
				req := userTurn("hi")
				req.OnText = func(string) {}
				_, err := m.Generate(context.Background(), req)
				streamFailure(t, p.name, err, "malformed stream")
			})

			t.Run("ConnectionCut", func(t *testing.T) {
				m, _ := model(t, agenttest.Reply{Text: "some text before the cut", StreamCut: true})
				req := userTurn("hi")
				req.OnText = func(string) {}
				_, err := m.Generate(context.Background(), req)
				streamFailure(t, p.name, err, "reading the stream")
			})

			t.Run("CancelMidStream", func(t *testing.T) {
				m, _ := model(t, agenttest.Reply{Text: "this stream stalls halfway through", StreamStall: true})
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				req := userTurn("hi")
				// Cancelled by the first delta: the stream has started and then stalls.
				req.OnText = func(string) { cancel() }
				done := make(chan error, 1)
				go func() {
					_, err := m.Generate(ctx, req)
					done <- err
				}()
				select {
				case err := <-done:
					if !errors.Is(err, context.Canceled) {
						t.Fatalf("err = %v, want context.Canceled", err)
					}
				case <-time.After(5 * time.Second):
					t.Fatal("Generate did not return after its context was cancelled mid-stream")
				}
			})
		})
	}
}

// TestStreamReportsDeltasAsProgress runs a streaming agent through a tool call and
// an answer: the answer's text reaches the reporter delta by delta, as progress of
// the iteration that wrote it.
func TestStreamReportsDeltasAsProgress(t *testing.T) {
	for _, p := range providers {
		t.Run(p.name, func(t *testing.T) {
			const answerText = "The sum of 2 and 3 is 5, as computed."
			srv := p.server(t,
				agenttest.Reply{Calls: []agenttest.Call{{ID: "c1", Name: "add", Args: `{"a":2,"b":3}`}}},
				agenttest.Reply{Text: answerText})
			a := mustNew(t, agent.Config{ID: "calc", Stream: true}, p.model(t, srv.BaseURL(), httpClient(t)), testTools(t))
			rec := &recorder{}
			res, err := a.Run(report.WithReporter(context.Background(), rec), agent.Request{Message: "2+3?"})
			if err != nil || res.Text != answerText {
				t.Fatalf("res %+v, err %v", res, err)
			}
			rec.mu.Lock()
			progress := append([]string(nil), rec.progress...)
			rec.mu.Unlock()
			// Every message advances (an MCP server drops progress that does
			// not), and iteration 2's messages lie in (1, 2).
			var text strings.Builder
			deltas := 0
			last := 0.0
			for _, line := range progress {
				value, msg, _ := strings.Cut(line, "/10 ")
				v, err := strconv.ParseFloat(value, 64)
				if err != nil || v <= last {
					t.Fatalf("progress %q does not advance past %v", line, last)
				}
				last = v
				if v > 1 && v < 2 && !strings.HasPrefix(msg, "agent calc:") {
					text.WriteString(msg)
					deltas++
				}
			}
			if deltas < 3 || text.String() != answerText {
				t.Fatalf("progress = %q\nwant the answer as several deltas of iteration 2", progress)
			}
		})
	}
}

// TestStreamWithoutProgressWantedStillStreams: a reporter whose caller asked for
// no progress gets none of the deltas; the turn is streamed all the same.
func TestStreamWithoutProgressWantedStillStreams(t *testing.T) {
	srv := agenttest.NewOpenAI(t, agenttest.Reply{Text: "quiet streamed answer"})
	a := mustNew(t, agent.Config{ID: "q", Stream: true}, providers[0].model(t, srv.BaseURL(), httpClient(t)), nil)
	rec := &noProgress{}
	res, err := a.Run(report.WithReporter(context.Background(), rec), agent.Request{Message: "hi"})
	if err != nil || res.Text != "quiet streamed answer" || srv.Requests()[0]["stream"] != true {
		t.Fatalf("res %+v, err %v, request %v", res, err, srv.Requests()[0])
	}
	if rec.progress.Load() != 0 {
		t.Fatalf("%d progress reports to a reporter that wants none", rec.progress.Load())
	}
}

// noProgress is a reporter whose caller asked for no progress (no MCP progress
// token); it counts the progress it is given anyway.
type noProgress struct{ progress atomic.Int64 }

func (r *noProgress) WantsProgress() bool { return false }
func (r *noProgress) Progress(context.Context, float64, float64, string) {
	r.progress.Add(1)
}
func (r *noProgress) Log(context.Context, report.Level, string, any) {}
