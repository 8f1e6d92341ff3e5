package fastrelay

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/arvenza/helix/internal/gateway"
)

// fakeGuard refuses the principal "mallory", rewrites arguments holding
// "secret", redacts "ssn" in results when it wants them, and bounds calls by
// timeout.
type fakeGuard struct {
	wantResult bool
	timeout    time.Duration
	afters     int
}

func (g *fakeGuard) Visible(context.Context, *gateway.Principal, gateway.Kind, string) bool {
	return true
}

func (g *fakeGuard) Before(_ context.Context, c *gateway.Call) error {
	if c.Principal.Name == "mallory" {
		return &gateway.Refusal{Message: "mallory may not call " + c.Name, Reason: gateway.OutcomeDenied}
	}
	if strings.Contains(string(c.Arguments), "secret") {
		c.Arguments = json.RawMessage(`{"text":"[removed]"}`)
	}
	return nil
}

func (g *fakeGuard) WantsResult(*gateway.Call) bool { return g.wantResult }

func (g *fakeGuard) After(_ context.Context, _ *gateway.Call, result json.RawMessage) (json.RawMessage, error) {
	g.afters++
	if strings.Contains(string(result), "too big") {
		return nil, &gateway.Refusal{Message: "the result is too big", Reason: gateway.OutcomeGuard}
	}
	return json.RawMessage(strings.ReplaceAll(string(result), "123-45-6789", "<ssn>")), nil
}

func (g *fakeGuard) Timeout(*gateway.Call) time.Duration { return g.timeout }

type recorder struct {
	mu   sync.Mutex
	recs []*gateway.Record
}

func (a *recorder) Record(_ context.Context, r *gateway.Record) {
	a.mu.Lock()
	a.recs = append(a.recs, r)
	a.mu.Unlock()
}

func (a *recorder) Close(context.Context) error { return nil }

func (a *recorder) last(t *testing.T) *gateway.Record {
	t.Helper()
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.recs) == 0 {
		t.Fatal("no record")
	}
	return a.recs[len(a.recs)-1]
}

// TestGovernRunsPolicyAndAudit: the guard refuses, rewrites arguments, sees
// and redacts results only when it wants them, bounds the call; every call is
// recorded once with its outcome, the arguments as received and the upstream
// session.
func TestGovernRunsPolicyAndAudit(t *testing.T) {
	t.Parallel()
	var sent []string
	relay := func(answer Reply, err error) func(ctx context.Context, args json.RawMessage) (Reply, error) {
		return func(ctx context.Context, args json.RawMessage) (Reply, error) {
			sent = append(sent, string(args))
			if err != nil {
				return Reply{}, err
			}
			if answer.Result == nil && answer.Error == nil {
				<-ctx.Done() // an upstream that never answers
				return Reply{}, ctx.Err()
			}
			return answer, nil
		}
	}
	ok := Reply{Result: json.RawMessage(`{"content":[{"type":"text","text":"ssn 123-45-6789"}]}`)}
	call := func(name string, args string) *gateway.Call {
		return &gateway.Call{ID: "c1", Server: "gw", Principal: &gateway.Principal{Name: name, Token: "tok-secret"}, Upstream: "up",
			Method: gateway.MethodCallTool, Kind: gateway.KindTool, Name: "up.echo", UpstreamName: "echo",
			Arguments: json.RawMessage(args), Started: time.Now()}
	}
	for _, c := range []struct {
		name        string
		guard       *fakeGuard
		principal   string
		args        string
		reply       Reply
		relayErr    error
		wantResult  string
		wantErr     string
		wantOutcome string
		wantSent    string
	}{
		{"plain", &fakeGuard{}, "alice", `{"text":"a"}`, ok, nil, `{"content":[{"type":"text","text":"ssn 123-45-6789"}]}`, "", gateway.OutcomeOK, `{"text":"a"}`},
		{"redacted", &fakeGuard{wantResult: true}, "alice", `{"text":"a"}`, ok, nil, `{"content":[{"type":"text","text":"ssn \u003cssn\u003e"}]}`, "", gateway.OutcomeOK, `{"text":"a"}`},
		{"arguments rewritten", &fakeGuard{}, "alice", `{"text":"secret"}`, ok, nil, ok.String(), "", gateway.OutcomeOK, `{"text":"[removed]"}`},
		{"denied", &fakeGuard{}, "mallory", `{}`, ok, nil, `{"content":[{"type":"text","text":"mallory may not call up.echo"}],"isError":true}`, "", gateway.OutcomeDenied, ""},
		{"output refused", &fakeGuard{wantResult: true}, "alice", `{}`, Reply{Result: json.RawMessage(`{"content":[{"type":"text","text":"too big"}]}`)}, nil,
			`{"content":[{"type":"text","text":"the result is too big"}],"isError":true}`, "", gateway.OutcomeGuard, `{}`},
		{"tool error", nil, "", `{}`, Reply{Result: json.RawMessage(`{"content":[],"isError":true}`)}, nil, `{"content":[],"isError":true}`, "", gateway.OutcomeToolError, `{}`},
		{"upstream error", nil, "alice", `{}`, Reply{Error: &jsonrpc.Error{Code: -32602, Message: "unknown tool"}}, nil, "", "unknown tool", gateway.OutcomeError, `{}`},
		{"unreachable", nil, "alice", `{}`, Reply{}, ErrNotRun, "", "tool up.echo: the call did not reach the upstream", gateway.OutcomeError, `{}`},
		{"timeout", &fakeGuard{timeout: time.Millisecond}, "alice", `{}`, Reply{}, nil, "", "did not answer in time", gateway.OutcomeTimeout, `{}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			sent = nil
			var guard gateway.Guard
			if c.guard != nil {
				guard = c.guard
			}
			a := &recorder{}
			cl := call(c.principal, c.args)
			res, err := Govern(context.Background(), guard, a, cl, func(ctx context.Context, args json.RawMessage) (Reply, error) {
				cl.UpstreamSession = "u-1"
				return relay(c.reply, c.relayErr)(ctx, args)
			})
			if string(res) != c.wantResult || (err == nil) != (c.wantErr == "") || err != nil && !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("result %s, error %v; want %s, %q", res, err, c.wantResult, c.wantErr)
			}
			if got := strings.Join(sent, " "); got != c.wantSent {
				t.Errorf("sent %q, want %q", got, c.wantSent)
			}
			if c.guard != nil && !c.guard.wantResult && c.guard.afters > 0 {
				t.Error("After ran for a guard that does not want results")
			}
			r := a.last(t)
			wantPrincipal := c.principal
			if wantPrincipal == "" {
				wantPrincipal = "anonymous"
			}
			if r.Outcome != c.wantOutcome || r.Principal != wantPrincipal || string(r.Arguments) != c.args || r.ID != "c1" || r.Name != "up.echo" ||
				r.ResultBytes != len(res) || (c.wantSent != "" && r.UpstreamSession != "u-1") {
				t.Errorf("record %+v", r)
			}
			if b, _ := json.Marshal(r); strings.Contains(string(b), "tok-secret") {
				t.Errorf("the record carries the caller's token: %s", b)
			}
		})
	}
}

func (r Reply) String() string { return string(r.Result) }

func TestIsToolError(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]bool{
		`{"content":[],"isError":true}`:                                 true,
		`{"isError":true,"content":[]}`:                                 true,
		`{"content":[],"isError":false}`:                                false,
		`{"content":[{"type":"text","text":"\"isError\":true"}]}`:       false,
		`{"structuredContent":{"isError":true},"content":[]}`:           false,
		`{"content":[{"isError":true}]}`:                                false,
		`{"a":"x\\","isError":true}`:                                    true,
		`{"content":[{"type":"text","text":"x\\\",\"isError\":true"}]}`: false,
	} {
		if got := IsToolError([]byte(in)); got != want {
			t.Errorf("IsToolError(%s) = %v, want %v", in, got, want)
		}
	}
}
