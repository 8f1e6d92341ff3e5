package policy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/gateway"
	"github.com/arvenza/helix/internal/testtools"
)

// The two principals of these tests: alice has the role support, bob has none.
var (
	alice = &gateway.Principal{ID: "key#0", Name: "alice", Roles: []string{"support"}, Token: "alice-secret-token"}
	bob   = &gateway.Principal{ID: "key#1", Name: "bob", Token: "bob-secret-token"}
)

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

// newClock is a fake clock at 10:00 UTC of a day after today: the Redis store
// expires its counters at the end of their window (PEXPIREAT, in the guard's
// clock), so a fixed date in the past would expire them at once.
func newClock() *fakeClock {
	y, m, d := time.Now().UTC().AddDate(0, 0, 2).Date()
	return &fakeClock{t: time.Date(y, m, d, 10, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// syncBuffer is a log destination that tests read while guards write.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func mustGuard(t *testing.T, rules []config.PolicyConfig, opts Options) Guard {
	t.Helper()
	g, err := New("gw", rules, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	return g
}

func call(p *gateway.Principal, name, args string) *gateway.Call {
	c := &gateway.Call{ID: "c1", Server: "gw", Principal: p, Method: gateway.MethodCallTool, Kind: gateway.KindTool, Name: name}
	if args != "" {
		c.Arguments = json.RawMessage(args)
	}
	return c
}

// refusal returns err as a *gateway.Refusal, failing the test when it is not one.
func refusal(t *testing.T, err error) *gateway.Refusal {
	t.Helper()
	var r *gateway.Refusal
	if !errors.As(err, &r) {
		t.Fatalf("want a *gateway.Refusal, got %v", err)
	}
	return r
}

func TestAllowDenyAndVisible(t *testing.T) {
	t.Parallel()
	g := mustGuard(t, []config.PolicyConfig{
		{Tools: []string{"github.*"}, Allow: &config.PrincipalMatch{Roles: []string{"support"}}},
		{Tools: []string{"github.create_issue"}, Allow: &config.PrincipalMatch{Scopes: []string{"tickets:write"}}},
		{Tools: []string{"*"}, Deny: &config.PrincipalMatch{Principals: []string{"mallory"}}},
	}, Options{})
	carol := &gateway.Principal{ID: "sub:1:i5:carol", Name: "carol", Scopes: []string{"tickets:write"}}
	mallory := &gateway.Principal{ID: "key#2", Name: "mallory", Roles: []string{"support"}}
	ctx := context.Background()
	for _, tc := range []struct {
		who  *gateway.Principal
		name string
		want bool
	}{
		{alice, "github.list_issues", true},
		{alice, "github.create_issue", true}, // her role satisfies one allow of the two
		{bob, "github.list_issues", false},
		{bob, "github.create_issue", false},
		{bob, "files.read", true}, // no allow: applies to it
		{carol, "github.create_issue", true},
		{carol, "github.list_issues", false},
		{mallory, "github.list_issues", false}, // deny wins over the role
		{mallory, "files.read", false},
		{&gateway.Principal{}, "github.list_issues", false},
		{nil, "files.read", true},
	} {
		who := "anonymous"
		if tc.who != nil && tc.who.Name != "" {
			who = tc.who.Name
		}
		if got := g.Visible(ctx, tc.who, gateway.KindTool, tc.name); got != tc.want {
			t.Errorf("Visible(%s, %s) = %v, want %v", who, tc.name, got, tc.want)
		}
		err := g.Before(ctx, call(tc.who, tc.name, `{}`))
		if tc.want {
			if err != nil {
				t.Errorf("Before(%s, %s): %v", who, tc.name, err)
			}
			continue
		}
		r := refusal(t, err)
		if r.Reason != gateway.OutcomeDenied || r.Message != `unknown tool "`+tc.name+`"` {
			t.Errorf("Before(%s, %s) refused with %+v, want denied as an unknown tool", who, tc.name, r)
		}
	}
}

func TestArgumentGuardRejectsAndRewrites(t *testing.T) {
	t.Parallel()
	src := `if "password" in args:
    reject("no passwords in tickets")
if tool == "github.create_issue":
    args["team"] = principal["name"]
args = redact(args, r"\b\d{4}-\d{4}-\d{4}-\d{4}\b", "[card]")
`
	g := mustGuard(t, []config.PolicyConfig{{Tools: []string{"github.*"}, Arguments: src,
		ArgumentsPos: config.Pos{File: "gw.yaml", Line: 10, Col: 11}}}, Options{})
	ctx := context.Background()

	r := refusal(t, g.Before(ctx, call(alice, "github.create_issue", `{"title":"x","password":"hunter2"}`)))
	if r.Reason != gateway.OutcomeGuard || r.Message != "no passwords in tickets" {
		t.Errorf("refusal %+v", r)
	}

	c := call(alice, "github.create_issue", `{"title":"card 1234-5678-9012-3456","n":3}`)
	if err := g.Before(ctx, c); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(c.Arguments, &got); err != nil {
		t.Fatal(err)
	}
	if got["team"] != "alice" || got["title"] != "card [card]" || got["n"] != float64(3) {
		t.Errorf("arguments after the guard: %s", c.Arguments)
	}

	// Arguments the guard leaves alone go on byte for byte.
	orig := `{ "b": 1.50, "a": "x" }`
	c = call(bob, "github.list_issues", orig)
	if err := g.Before(ctx, c); err != nil {
		t.Fatal(err)
	}
	if string(c.Arguments) != orig {
		t.Errorf("untouched arguments re-encoded: %s", c.Arguments)
	}
	// No arguments at all are an empty dict to the script.
	c = call(bob, "github.list_issues", "")
	if err := g.Before(ctx, c); err != nil || len(c.Arguments) != 0 {
		t.Errorf("no arguments: %v, %s", err, c.Arguments)
	}
}

func TestOutputGuardMasksPII(t *testing.T) {
	t.Parallel()
	src := `result = redact(result, r"\b\d{3}-\d{2}-\d{4}\b")
result = redact(result, r"[\w.+-]+@[\w-]+\.[\w.]+", "<email>")
`
	g := mustGuard(t, []config.PolicyConfig{{Tools: []string{"crm.*"}, Result: src}}, Options{})
	c := call(alice, "crm.lookup", `{}`)
	if !g.WantsResult(c) {
		t.Fatal("WantsResult is false with an output guard")
	}
	if g.WantsResult(call(alice, "files.read", `{}`)) {
		t.Error("WantsResult is true for a tool no output guard applies to")
	}
	res := `{"content":[{"type":"text","text":"SSN 123-45-6789, mail jane.doe@example.com"},` +
		`{"type":"text","text":"other 987-65-4321"}],` +
		`"structuredContent":{"ssn":"123-45-6789","contact":{"email":"jane.doe@example.com"},"age":41},"isError":false}`
	out, err := g.After(context.Background(), c, json.RawMessage(res))
	if err != nil {
		t.Fatal(err)
	}
	for _, leak := range []string{"123-45-6789", "987-65-4321", "jane.doe@example.com"} {
		if strings.Contains(string(out), leak) {
			t.Errorf("%s survived the output guard: %s", leak, out)
		}
	}
	var got struct {
		Content []struct {
			Type, Text string
		}
		StructuredContent map[string]any
		IsError           bool
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Content) != 2 || got.Content[0].Type != "text" || got.Content[0].Text != "SSN ***, mail <email>" ||
		got.StructuredContent["ssn"] != "***" || got.StructuredContent["age"] != float64(41) {
		t.Errorf("masked result: %s", out)
	}

	// A result with nothing to mask goes on as it came.
	clean := `{"content":[{"type":"text","text":"nothing here"}]}`
	if out, err := g.After(context.Background(), c, json.RawMessage(clean)); err != nil || string(out) != clean {
		t.Errorf("clean result: %s, %v", out, err)
	}
}

func TestOutputGuardRejects(t *testing.T) {
	t.Parallel()
	g := mustGuard(t, []config.PolicyConfig{{Tools: []string{"*"},
		Result: `if result.get("isError"): reject("the upstream failed; ask support")`}}, Options{})
	_, err := g.After(context.Background(), call(bob, "x", ""), json.RawMessage(`{"content":[],"isError":true}`))
	if r := refusal(t, err); r.Reason != gateway.OutcomeGuard || r.Message != "the upstream failed; ask support" {
		t.Errorf("refusal %+v", r)
	}
}

// A guard that fails (not by reject) refuses the call without telling the
// client anything of the script; the log has the position.
func TestGuardFailureDoesNotLeakTheScript(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	g := mustGuard(t, []config.PolicyConfig{
		{Tools: []string{"a"}, Arguments: "secret_limit = 7\nx = args[\"n\"] // 0\n", ArgumentsPos: config.Pos{File: "gw.yaml", Line: 20, Col: 13}},
		{Tools: []string{"b"}, Arguments: "while True:\n    pass\n", ArgumentsPos: config.Pos{File: "gw.yaml", Line: 30, Col: 13}},
		{Tools: []string{"c"}, Result: "result = 42\n", ResultPos: config.Pos{File: "gw.yaml", Line: 40, Col: 13}},
	}, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	for _, tc := range []struct {
		name, log string
		after     bool
	}{
		{"a", "gw.yaml:21:", false},
		{"b", "execution steps", false},
		{"c", "must stay a dict", true},
	} {
		var err error
		if tc.after {
			_, err = g.After(context.Background(), call(alice, tc.name, ""), json.RawMessage(`{"content":[]}`))
		} else {
			err = g.Before(context.Background(), call(alice, tc.name, `{"n":1}`))
		}
		r := refusal(t, err)
		if r.Reason != gateway.OutcomeGuard || !strings.Contains(r.Message, "guard of "+tc.name+" failed") ||
			strings.Contains(r.Message, "gw.yaml") || strings.Contains(r.Message, "secret_limit") {
			t.Errorf("%s: refusal %+v", tc.name, r)
		}
		if !strings.Contains(logs.String(), tc.log) {
			t.Errorf("%s: the log does not say %q:\n%s", tc.name, tc.log, logs.String())
		}
	}
	if strings.Contains(logs.String(), "secret-token") {
		t.Errorf("a token reached the log:\n%s", logs.String())
	}
}

// A guard script sees the principal's name, roles and scopes, never its token.
func TestGuardSeesNoToken(t *testing.T) {
	t.Parallel()
	g := mustGuard(t, []config.PolicyConfig{{Tools: []string{"*"},
		Arguments: `args["seen"] = str(principal)`}}, Options{})
	c := call(alice, "t", `{}`)
	if err := g.Before(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(c.Arguments), "secret") || !strings.Contains(string(c.Arguments), "support") {
		t.Errorf("the script saw %s", c.Arguments)
	}
}

func TestRateLimitPerPrincipalAndTool(t *testing.T) {
	t.Parallel()
	clock := newClock()
	g := mustGuard(t, []config.PolicyConfig{{Tools: []string{"github.*"}, Rate: "2/s"}}, Options{Clock: clock.Now})
	ctx := context.Background()
	for i := range 2 {
		if err := g.Before(ctx, call(alice, "github.search", `{}`)); err != nil {
			t.Fatalf("alice's call %d: %v", i+1, err)
		}
	}
	r := refusal(t, g.Before(ctx, call(alice, "github.search", `{}`)))
	if r.Reason != gateway.OutcomeRateLimited || r.RetryAfter <= 0 || r.RetryAfter > 500*time.Millisecond ||
		!strings.Contains(r.Message, "2/s") {
		t.Errorf("alice's third call: %+v", r)
	}
	// bob's calls do not use alice's budget, nor another tool's.
	for i := range 2 {
		if err := g.Before(ctx, call(bob, "github.search", `{}`)); err != nil {
			t.Fatalf("bob's call %d: %v", i+1, err)
		}
		if err := g.Before(ctx, call(alice, "github.get_issue", `{}`)); err != nil {
			t.Fatalf("alice's call %d of another tool: %v", i+1, err)
		}
	}
	clock.Advance(500 * time.Millisecond)
	if err := g.Before(ctx, call(alice, "github.search", `{}`)); err != nil {
		t.Errorf("after a refill: %v", err)
	}
	// Anonymous callers share one bucket per tool.
	anon := &gateway.Principal{}
	for i := range 2 {
		if err := g.Before(ctx, call(anon, "github.search", `{}`)); err != nil {
			t.Fatalf("anonymous call %d: %v", i+1, err)
		}
	}
	refusal(t, g.Before(ctx, call(nil, "github.search", `{}`)))
}

func TestQuotaPerPrincipal(t *testing.T) {
	t.Parallel()
	clock := newClock()
	g := mustGuard(t, []config.PolicyConfig{{Tools: []string{"github.*"}, Quota: "3/day"}}, Options{Clock: clock.Now})
	ctx := context.Background()
	for i := range 3 {
		if err := g.Before(ctx, call(alice, "github.search", `{}`)); err != nil {
			t.Fatalf("alice's call %d: %v", i+1, err)
		}
	}
	r := refusal(t, g.Before(ctx, call(alice, "github.search", `{}`)))
	if r.Reason != gateway.OutcomeRateLimited || r.RetryAfter != 14*time.Hour || !strings.Contains(r.Message, "3/day") {
		t.Errorf("alice's fourth call: %+v (want a retry at UTC midnight, in 14h)", r)
	}
	if err := g.Before(ctx, call(bob, "github.search", `{}`)); err != nil {
		t.Errorf("bob's first call: %v", err)
	}
	clock.Advance(14 * time.Hour)
	if err := g.Before(ctx, call(alice, "github.search", `{}`)); err != nil {
		t.Errorf("alice's call the next day: %v", err)
	}
}

// Two Guards of one server with one Redis store, like two replicas, share
// every principal's rate and quota; bob still has his own.
func TestRateAndQuotaSharedThroughRedis(t *testing.T) {
	t.Parallel()
	r := testtools.StartRedis(t)
	clock := newClock()
	rules := []config.PolicyConfig{
		{Tools: []string{"github.search"}, Rate: "2/minute"},
		{Tools: []string{"github.create_issue"}, Quota: "3/hour"},
	}
	// A generous store timeout: on a busy machine a slow answer must not look
	// like an outage (which would decide with each guard's own counts).
	a := mustGuard(t, rules, Options{RateLimitStore: r.URL, Clock: clock.Now, storeTimeout: time.Minute})
	b := mustGuard(t, rules, Options{RateLimitStore: r.URL, Clock: clock.Now, storeTimeout: time.Minute})
	ctx := context.Background()
	steps := []struct {
		g    Guard
		who  *gateway.Principal
		name string
		ok   bool
	}{
		{a, alice, "github.search", true},
		{b, alice, "github.search", true},
		{a, alice, "github.search", false},
		{b, alice, "github.search", false},
		{b, bob, "github.search", true},
		{a, alice, "github.create_issue", true},
		{b, alice, "github.create_issue", true},
		{a, alice, "github.create_issue", true},
		{b, alice, "github.create_issue", false},
		{a, bob, "github.create_issue", true},
	}
	for i, s := range steps {
		err := s.g.Before(ctx, call(s.who, s.name, `{}`))
		if s.ok && err != nil {
			t.Fatalf("step %d (%s %s): %v", i+1, s.who.Name, s.name, err)
		}
		if !s.ok {
			if rf := refusal(t, err); rf.Reason != gateway.OutcomeRateLimited || rf.RetryAfter <= 0 {
				t.Fatalf("step %d: %+v", i+1, rf)
			}
		}
	}
	// Another server's policies count apart, with the same store.
	other, err := New("other", rules, Options{RateLimitStore: r.URL, Clock: clock.Now, storeTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := other.Before(ctx, call(alice, "github.search", `{}`)); err != nil {
		t.Errorf("another server shares the bucket: %v", err)
	}
	// While the store is down each guard limits alone, and says so once.
	var logs syncBuffer
	down, err := New("gw", rules, Options{RateLimitStore: r.URL, Clock: clock.Now, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer down.Close()
	r.Stop()
	for i := range 3 {
		err := down.Before(ctx, call(bob, "github.search", `{}`))
		if (err == nil) != (i < 2) {
			t.Fatalf("call %d with the store down: %v", i+1, err)
		}
	}
	if n := strings.Count(logs.String(), "rate limit store cannot decide"); n != 1 {
		t.Errorf("%d warnings about the store, want 1:\n%s", n, logs.String())
	}
}

func TestMaxResultBytesAndTimeout(t *testing.T) {
	t.Parallel()
	g := mustGuard(t, []config.PolicyConfig{
		{Tools: []string{"big.*"}, MaxResultBytes: 64, Timeout: 10 * time.Second},
		{Tools: []string{"big.slow"}, Timeout: 30 * time.Second},
		{Tools: []string{"big.fast"}, Timeout: 2 * time.Second},
	}, Options{})
	c := call(alice, "big.read", `{}`)
	if !g.WantsResult(c) {
		t.Error("WantsResult is false with max_result_bytes")
	}
	small := json.RawMessage(`{"content":[{"type":"text","text":"ok"}]}`)
	if out, err := g.After(context.Background(), c, small); err != nil || string(out) != string(small) {
		t.Errorf("a small result: %s, %v", out, err)
	}
	large := json.RawMessage(`{"content":[{"type":"text","text":"` + strings.Repeat("x", 100) + `"}]}`)
	_, err := g.After(context.Background(), c, large)
	if r := refusal(t, err); r.Reason != gateway.OutcomeGuard || !strings.Contains(r.Message, "max_result_bytes") {
		t.Errorf("a large result: %+v", r)
	}
	for name, want := range map[string]time.Duration{"big.read": 10 * time.Second, "big.slow": 10 * time.Second,
		"big.fast": 2 * time.Second, "other": 0} {
		if got := g.Timeout(call(alice, name, "")); got != want {
			t.Errorf("Timeout(%s) = %s, want %s", name, got, want)
		}
	}
}

func TestBadRulesAtTheirPositions(t *testing.T) {
	t.Parallel()
	at := func(line int) config.Pos { return config.Pos{File: "gw.yaml", Line: line, Col: 9} }
	for _, tc := range []struct {
		rule config.PolicyConfig
		want string
	}{
		{config.PolicyConfig{Rate: "10/s", Pos: at(5), Path: "mcps[0].policies[0]"},
			"gw.yaml:5:9: mcps[0].policies[0].tools: names no tools"},
		{config.PolicyConfig{Tools: []string{"a"}, Rate: "ten/s", Pos: at(6)}, `gw.yaml:6:9: policies[0].rate: rate "ten/s"`},
		{config.PolicyConfig{Tools: []string{"a"}, Rate: "10/week", Pos: at(6)}, `unknown period "week"`},
		{config.PolicyConfig{Tools: []string{"a"}, Quota: "5/s", Pos: at(7)}, "gw.yaml:7:9: policies[0].quota: quota \"5/s\": a quota's window"},
		{config.PolicyConfig{Tools: []string{"a"}, Allow: &config.PrincipalMatch{}, Pos: at(8)}, "policies[0].allow: names no principals"},
		{config.PolicyConfig{Tools: []string{"a"}, Pos: at(9)}, "policies[0]: does nothing"},
		{config.PolicyConfig{Tools: []string{"a", "b["}, Rate: "1/s", Pos: at(9)}, `gw.yaml:9:9: policies[0].tools[1]: "b[" is not a valid glob`},
		{config.PolicyConfig{Tools: []string{"a"}, Arguments: "x = 1\nif x\n  pass\n", ArgumentsPos: config.Pos{File: "gw.yaml", Line: 12, Col: 11}, Pos: at(10)},
			"policies[0].arguments: gw.yaml:13:"},
		{config.PolicyConfig{Tools: []string{"a"}, Result: "result = redact(reslt, 'x')\n", ResultPos: config.Pos{File: "gw.yaml", Line: 15, Col: 11}, Pos: at(14)},
			"gw.yaml:15:27: undefined: reslt"},
	} {
		_, err := New("gw", []config.PolicyConfig{tc.rule}, Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.rule, err, tc.want)
		}
	}
	_, err := New("gw", []config.PolicyConfig{{Tools: []string{"a"}, Rate: "1/s"}}, Options{RateLimitStore: "http://u:pw@host"})
	if err == nil || strings.Contains(err.Error(), "pw") {
		t.Errorf("a bad store: %v", err)
	}
}

func TestRedactRefusesWhatWouldBlowUp(t *testing.T) {
	t.Parallel()
	for src, want := range map[string]string{
		`args = redact(args, "x*")`:                                   "matches the empty string",
		`args = redact(args, "(")`:                                    "missing closing",
		`args = redact(args, "a", "` + strings.Repeat("r", 65) + `")`: "at most 64",
	} {
		var logs syncBuffer
		g := mustGuard(t, []config.PolicyConfig{{Tools: []string{"*"}, Arguments: src}}, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		refusal(t, g.Before(context.Background(), call(alice, "t", `{"a":"aaa"}`)))
		if !strings.Contains(logs.String(), want) {
			t.Errorf("%s: the log does not say %q:\n%s", src, want, logs.String())
		}
	}
}

func TestParseRateAndQuota(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"10/second": "10/s", "5/minute": "5/m", "1/hour": "1/h"} {
		if r, err := ParseRate(in); err != nil || r.String() != want {
			t.Errorf("ParseRate(%q) = %v, %v; want %s", in, r, err, want)
		}
	}
	for in, want := range map[string]string{"10/d": "10/day", "5/m": "5/minute", "1/h": "1/hour"} {
		if q, err := ParseQuota(in); err != nil || q.String() != want {
			t.Errorf("ParseQuota(%q) = %v, %v; want %s", in, q, err, want)
		}
	}
	for in, want := range map[string]Rate{"10/s": {10, time.Second}, "600/minute": {600, time.Minute}, " 5 / h ": {5, time.Hour},
		"1_000/m": {1000, time.Minute}} {
		if got, err := ParseRate(in); err != nil || got != want {
			t.Errorf("ParseRate(%q) = %v, %v", in, got, err)
		}
	}
	for in, want := range map[string]Quota{"1000/day": {1000, 24 * time.Hour}, "5/hour": {5, time.Hour}, "2/minute": {2, time.Minute}} {
		if got, err := ParseQuota(in); err != nil || got != want {
			t.Errorf("ParseQuota(%q) = %v, %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "10", "0/s", "-1/s", "x/s", "10/d", "10/fortnight", "99999999999999/s"} {
		if _, err := ParseRate(bad); err == nil {
			t.Errorf("ParseRate(%q) accepted", bad)
		}
	}
	for _, bad := range []string{"10/s", "1/week", "0/day"} {
		if _, err := ParseQuota(bad); err == nil {
			t.Errorf("ParseQuota(%q) accepted", bad)
		}
	}
}

func TestGlob(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		pattern, name string
		want          bool
	}{
		{"github.*", "github.create_issue", true},
		{"github.*", "gitlab.x", false},
		{"*", "file:///srv/a/b.txt", true},
		{"file:///srv/*", "file:///srv/a/b.txt", true},
		{"*_issue", "github.create_issue", true},
		{"get_?", "get_a", true},
		{"get_?", "get_ab", false},
		{"a*b*c*d*e*f", strings.Repeat("a", 200), false},
		{"exact", "exact", true},
		{"exact", "exactly", false},
		{"get_[ab]", "get_b", true},
		{"get_[ab]", "get_c", false},
		{"résumé.?", "résumé.é", true},
		{`a\*`, "a*", true},
		{`a\*`, "ab", false},
		{"[", "[", false}, // invalid: matches nothing
	} {
		if got := glob(tc.pattern, tc.name); got != tc.want {
			t.Errorf("glob(%q, %q) = %v", tc.pattern, tc.name, got)
		}
	}
}
