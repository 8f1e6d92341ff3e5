package starlang

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/arvenza/helix/pkg/exchange"
)

// interpreted returns s without its direct evaluation: what the interpreter alone
// answers.
func interpreted(s *Script) *Script {
	c := *s
	c.direct = nil
	return &c
}

// sameEval evaluates src on body through the direct path (when it applies) and
// through the interpreter alone, with Eval and with EvalValue, and fails on any
// difference in result or error. It reports whether the direct path answered.
func sameEval(t *testing.T, src string, body any, opts *Options) (direct bool) {
	t.Helper()
	s, err := Compile("helix.yaml", 3, 7, src, opts)
	if err != nil {
		return false
	}
	ctx := context.Background()
	_, direct = s.evalDirect(ctx, body)
	for _, eval := range []struct {
		name string
		run  func(*Script, context.Context, *exchange.Exchange) (*Result, error)
	}{{"Eval", (*Script).Eval}, {"EvalValue", (*Script).EvalValue}} {
		got, gotErr := eval.run(s, ctx, exchange.NewWithBody(exchange.InOut, body))
		want, wantErr := eval.run(interpreted(s), ctx, exchange.NewWithBody(exchange.InOut, body))
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Fatalf("%s(%q) on %#v: error %v, the interpreter's %v", eval.name, src, body, gotErr, wantErr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s(%q) on %#v (direct %v):\n got %#v\nwant %#v", eval.name, src, body, direct, got, want)
		}
	}
	return direct
}

func TestDirectMatchesInterpreter(t *testing.T) {
	bodies := []any{
		map[string]any{"text": "hello", "n": 3.0, "f": 2.5, "big": 1e300, "neg": -7.0, "ok": true, "nil": nil,
			"list": []any{"a", 2.0, map[string]any{"x": "y"}}, "user": map[string]any{"id": "u1", "tags": []any{}}},
		map[string]any{"text": "<b>&\u2028\xff"},
		map[string]any{},
		map[string]any{"i": int64(9007199254740993), "j": 12},
		map[string]any{"ch": make(chan int)}, // not plain: the interpreter decides
		"a string body",
		[]any{"x"},
		nil,
		[]byte(`{"text":"bytes"}`),
	}
	scripts := []string{
		`{"text": payload["text"]}`,
		`{"text": body["text"]}`,
		`payload`,
		`payload["n"]`, `payload["f"]`, `payload["big"]`, `payload["neg"]`, `payload["ok"]`, `payload["i"]`, `payload["j"]`,
		`payload["nil"]`,
		`payload["list"]`, `payload["list"][2]["x"]`, `payload["list"][-1]`, `payload["list"][-4]`, `payload["list"][3]`,
		`payload["user"]["tags"]`, `payload["user"]["id"][0]`, `payload["missing"]`, `payload[0]`,
		`{"a": 1, "b": 2.0, "c": "s", "d": True, "e": None, "f": b"raw", "g": [1, [2, (3)]], "h": {}}`,
		`{"u": {"id": payload["user"]["id"], "all": payload}, "l": [payload["text"], payload["n"]]}`,
		`{"a": 1, "a": 2}`,
		`[payload["text"]] * 2`,
		`{"t": payload["text"] ++ "!"}`,
		`None`, `True`, `1`, `"x"`,
		`{1: payload["text"]}`,
		`payload[b"text"]`,
		`payload["text"]["x"]`,
		`[]`, `{}`,
		`{"x": payload["ch"]}`,
		`payload[99999999999]`,
	}
	directRuns := 0
	for _, src := range scripts {
		for _, body := range bodies {
			if sameEval(t, src, body, nil) {
				directRuns++
			}
		}
	}
	if directRuns < 40 {
		t.Fatalf("the direct path answered %d evaluations; it should answer most of the plain ones", directRuns)
	}
}

// TestDirectTaken guards the point of the direct path: the benchmark's and the
// docs' field mappings must not go through the interpreter.
func TestDirectTaken(t *testing.T) {
	for _, src := range []string{`{"text": payload["text"]}`, "{\"id\": payload[\"user\"][\"id\"],\n \"first\": payload[\"items\"][0]}"} {
		s := compile(t, src, nil)
		if s.direct == nil {
			t.Fatalf("%q is not evaluated directly", src)
		}
	}
	s := compile(t, `{"text": payload["text"]}`, nil)
	v, ok := s.evalDirect(context.Background(), map[string]any{"text": "hi"})
	if !ok || !reflect.DeepEqual(v, map[string]any{"text": "hi"}) {
		t.Fatalf("evalDirect = %#v, %v", v, ok)
	}
	for _, src := range []string{`x = 1`, `{"a": len(payload)}`, `{"a": payload["x"] + 1}`, `{"a": variables["x"]}`, `[x for x in payload]`} {
		if compile(t, src, nil).direct != nil {
			t.Fatalf("%q must go through the interpreter", src)
		}
	}
}

// TestDirectErrorsAreTheInterpreters: a missing key answers exactly the
// interpreter's KeyError, with its position.
func TestDirectErrorsAreTheInterpreters(t *testing.T) {
	s := compile(t, `{"text": payload["text"]}`, nil)
	_, err := s.Eval(context.Background(), exchange.NewWithBody(exchange.InOut, map[string]any{"other": 1.0}))
	if err == nil || !strings.Contains(err.Error(), "helix.yaml:10:") || !strings.Contains(err.Error(), `key "text" not in dict`) {
		t.Fatalf("err = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = s.Eval(ctx, exchange.NewWithBody(exchange.InOut, map[string]any{"text": "x"}))
	if err == nil || !strings.Contains(err.Error(), "script not run") {
		t.Fatalf("cancelled: err = %v", err)
	}
}

// TestDirectStepBound measures the interpreter's step count of data expressions
// against directMaxSteps, and checks that a step limit below the bound keeps the
// script on the interpreter, which reports the limit.
func TestDirectStepBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	body := randomBody(rng, 3)
	for i := 0; i < 300; i++ {
		src := randomDataExpr(rng, body, 4)
		s, err := Compile("helix.yaml", 1, 1, src, nil)
		if err != nil || s.direct == nil {
			continue
		}
		out, err := interpreted(s).run(context.Background(), exchange.NewWithBody(exchange.InOut, body))
		if err != nil {
			continue
		}
		if steps := out.st.thread.ExecutionSteps(); steps > s.directSteps {
			t.Fatalf("%q took %d steps, over the bound %d", src, steps, s.directSteps)
		}
	}
	s := compile(t, `{"a": payload["a"], "b": [1, 2, 3]}`, &Options{MaxSteps: 5})
	if s.direct != nil {
		t.Fatal("a step limit below the bound must leave the script to the interpreter")
	}
	_, err := s.Eval(context.Background(), exchange.NewWithBody(exchange.InOut, map[string]any{"a": 1.0}))
	if err == nil || !strings.Contains(err.Error(), "stopped after 5 execution steps") {
		t.Fatalf("err = %v, want the step limit", err)
	}
}

// TestDirectOutputBudget: a value past the memory budget is left to the
// interpreter, which refuses it as before.
func TestDirectOutputBudget(t *testing.T) {
	big := strings.Repeat("x", 4000)
	src := `[payload["t"], payload["t"], payload["t"], payload["t"]]`
	sameEval(t, src, map[string]any{"t": big}, &Options{MaxMemory: 10000})
	s := compile(t, src, &Options{MaxMemory: 10000})
	if _, ok := s.evalDirect(context.Background(), map[string]any{"t": big}); ok {
		t.Fatal("a value over the budget was answered directly")
	}
}

func TestDirectRandomised(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	direct := 0
	for i := 0; i < 2000; i++ {
		body := randomBody(rng, 3)
		src := randomDataExpr(rng, body, 4)
		if sameEval(t, src, body, nil) {
			direct++
		}
	}
	if direct < 500 {
		t.Fatalf("only %d of 2000 random data expressions were evaluated directly", direct)
	}
}

func FuzzDirect(f *testing.F) {
	f.Add(`{"text": payload["text"]}`, []byte(`{"text":"hi"}`))
	f.Add(`[payload["a"][0], {"b": payload["b"]}]`, []byte(`{"a":[1.5,"x"],"b":{"c":null}}`))
	f.Add(`payload["a"][-1]`, []byte(`{"a":[1,2,3]}`))
	f.Add(`{"n": payload["n"]}`, []byte(`{"n":9007199254740993}`))
	f.Fuzz(func(t *testing.T, src string, body []byte) {
		var v any
		if json.Unmarshal(body, &v) != nil {
			return
		}
		sameEval(t, src, v, nil)
	})
}

// randomBody builds a JSON-like body (what a tool's decoded arguments are).
func randomBody(rng *rand.Rand, depth int) map[string]any {
	m := map[string]any{}
	for i := range rng.IntN(5) + 1 {
		m["k"+strconv.Itoa(i)] = randomValue(rng, depth-1)
	}
	return m
}

func randomValue(rng *rand.Rand, depth int) any {
	switch n := rng.IntN(9); {
	case n == 0:
		return nil
	case n == 1:
		return rng.IntN(2) == 0
	case n == 2:
		return float64(rng.IntN(2000) - 1000)
	case n == 3:
		return rng.Float64() * 1e6
	case n == 4 && depth > 0:
		return randomBody(rng, depth)
	case n == 5 && depth > 0:
		l := make([]any, rng.IntN(4))
		for i := range l {
			l[i] = randomValue(rng, depth-1)
		}
		return l
	default:
		return []string{"", "a", "héllo", "<&>", "\u2028", `"q"`}[rng.IntN(6)]
	}
}

// randomDataExpr writes a data expression over body: mostly subscripts that exist,
// sometimes ones that do not, inside dict and list literals and constants.
func randomDataExpr(rng *rand.Rand, body any, depth int) string {
	switch n := rng.IntN(10); {
	case n < 4 || depth == 0:
		return randomPath(rng, body)
	case n < 6:
		var b strings.Builder
		b.WriteString("{")
		for i := range rng.IntN(4) {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%q: %s", "f"+strconv.Itoa(i), randomDataExpr(rng, body, depth-1))
		}
		b.WriteString("}")
		return b.String()
	case n < 8:
		parts := make([]string, rng.IntN(4))
		for i := range parts {
			parts[i] = randomDataExpr(rng, body, depth-1)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	default:
		return []string{`1`, `-1`, `2.5`, `"s"`, `True`, `None`, `b"x"`, `(3)`}[rng.IntN(8)]
	}
}

func randomPath(rng *rand.Rand, v any) string {
	path := "payload"
	for rng.IntN(4) != 0 {
		switch t := v.(type) {
		case map[string]any:
			if len(t) == 0 || rng.IntN(8) == 0 {
				return path + `["nope"]`
			}
			keys := make([]string, 0, len(t))
			for k := range t {
				keys = append(keys, k)
			}
			k := keys[rng.IntN(len(keys))]
			path += fmt.Sprintf("[%q]", k)
			v = t[k]
		case []any:
			if len(t) == 0 {
				return path + "[0]"
			}
			i := rng.IntN(len(t)*2+1) - len(t)
			path += "[" + strconv.Itoa(i) + "]"
			v = t[(i+len(t))%len(t)]
		default:
			return path
		}
	}
	return path
}

// TestDirectHostileBodies: bodies nested past the limit, cyclic, or huge get the
// interpreter's answer (its nesting error, or the same value), never a panic.
func TestDirectHostileBodies(t *testing.T) {
	deep := map[string]any{"text": "x"}
	for range DefaultMaxNesting + 5 {
		deep = map[string]any{"text": "x", "in": deep}
	}
	if sameEval(t, `{"text": payload["text"]}`, deep, nil) {
		t.Fatal("a body nested past the limit was answered directly")
	}
	cyclic := map[string]any{"text": "x"}
	cyclic["self"] = cyclic
	if sameEval(t, `{"text": payload["text"]}`, cyclic, nil) {
		t.Fatal("a cyclic body was answered directly")
	}
	wide := map[string]any{"text": strings.Repeat("é", 1<<20)}
	for i := range 10000 {
		wide["k"+strconv.Itoa(i)] = []any{float64(i), "v", nil, true}
	}
	if !sameEval(t, `{"text": payload["text"], "k": payload["k9999"][0]}`, wide, nil) {
		t.Fatal("a large plain body should still be answered directly")
	}
}
