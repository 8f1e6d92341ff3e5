package policy

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/gateway"
)

// Arguments a caller can inflate or break are refused by the guard, never a
// panic, and the client hears nothing of the script.
func TestGuardOnHostileArguments(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	g := mustGuard(t, []config.PolicyConfig{{Tools: []string{"*"}, Arguments: `args["seen"] = True`}},
		Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	deep := strings.Repeat(`{"a":`, 5000) + "1" + strings.Repeat("}", 5000)
	for name, args := range map[string]string{
		"deep":      deep,
		"malformed": `{"a":`,
		"not json":  `\x00\x01`,
	} {
		r := refusal(t, g.Before(context.Background(), call(alice, "t", args)))
		if r.Reason != gateway.OutcomeGuard || !strings.Contains(r.Message, "argument guard of t failed") {
			t.Errorf("%s: %+v", name, r)
		}
	}
	// Large, flat arguments pass through the guard.
	big := `{"text":"` + strings.Repeat("x", 2<<20) + `"}`
	c := call(alice, "t", big)
	if err := g.Before(context.Background(), c); err != nil {
		t.Fatalf("2 MiB of arguments: %v", err)
	}
	var got map[string]any
	if err := json.Unmarshal(c.Arguments, &got); err != nil || got["seen"] != true || len(got["text"].(string)) != 2<<20 {
		t.Errorf("large arguments after the guard: %v", err)
	}
}

// A call that ends while its guard runs is cancelled (or timed out), not a
// fault of the script, and is not logged as one.
func TestGuardOfAnEndedCall(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	g := mustGuard(t, []config.PolicyConfig{{Tools: []string{"*"}, Arguments: "x = 0\nfor i in range(100000000):\n    x += i\n"}},
		Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r := refusal(t, g.Before(ctx, call(alice, "t", `{}`)))
	if r.Reason != gateway.OutcomeCancelled {
		t.Errorf("cancelled: %+v", r)
	}
	ctx, cancel = context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	if r := refusal(t, g.Before(ctx, call(alice, "t", `{}`))); r.Reason != gateway.OutcomeTimeout {
		t.Errorf("timed out: %+v", r)
	}
	if strings.Contains(logs.String(), "guard failed") {
		t.Errorf("an ended call was logged as a failing guard:\n%s", logs.String())
	}
}

// Names of any length give small keys, and each still counts apart.
func TestLongNamesCountApart(t *testing.T) {
	t.Parallel()
	g := mustGuard(t, []config.PolicyConfig{{Tools: []string{"*"}, Rate: "1/h"}}, Options{Clock: newClock().Now})
	long := strings.Repeat("n", 1<<20)
	for _, name := range []string{long, long + "x", "short"} {
		if err := g.Before(context.Background(), call(alice, name, `{}`)); err != nil {
			t.Fatalf("first call of a %d-byte name: %v", len(name), err)
		}
		refusal(t, g.Before(context.Background(), call(alice, name, `{}`)))
	}
	if k := keyName(long); len(k) > 100 {
		t.Errorf("the key of a long name is %d bytes", len(k))
	}
}

// Many callers at once: every call is decided, each principal gets exactly its
// budget, and the race detector finds nothing.
func TestConcurrentCallers(t *testing.T) {
	t.Parallel()
	g := mustGuard(t, []config.PolicyConfig{{Tools: []string{"*"}, Quota: "50/day",
		Arguments: `args = redact(args, r"\d+")`, Result: `result = redact(result, r"secret")`}}, Options{Clock: newClock().Now})
	const callers, calls = 8, 60
	var wg sync.WaitGroup
	allowed := make([]int, callers)
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := &gateway.Principal{ID: fmt.Sprintf("key#%d", i), Name: fmt.Sprintf("p%d", i)}
			for range calls {
				c := call(p, "t", `{"n":"123"}`)
				if err := g.Before(context.Background(), c); err != nil {
					continue
				}
				if string(c.Arguments) != `{"n":"***"}` {
					t.Errorf("arguments %s", c.Arguments)
				}
				out, err := g.After(context.Background(), c, json.RawMessage(`{"content":[{"type":"text","text":"a secret"}]}`))
				if err != nil || strings.Contains(string(out), "secret") {
					t.Errorf("result %s, %v", out, err)
				}
				allowed[i]++
			}
		}()
	}
	wg.Wait()
	for i, n := range allowed {
		if n != 50 {
			t.Errorf("principal %d made %d calls, want its quota of 50", i, n)
		}
	}
}
