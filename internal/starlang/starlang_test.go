package starlang

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arvenza/helix/pkg/exchange"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// input describes the exchange a script runs against.
type input struct {
	body    any
	headers map[string]any
	vars    map[string]any
}

func (in input) exchange() *exchange.Exchange {
	ex := exchange.NewWithBody(exchange.InOut, in.body)
	for k, v := range in.headers {
		ex.In().SetHeader(k, v)
	}
	for k, v := range in.vars {
		ex.SetVariable(k, v)
	}
	return ex
}

func compile(t *testing.T, src string, opts *Options) *Script {
	t.Helper()
	s, err := Compile("helix.yaml", 10, 13, src, opts)
	if err != nil {
		t.Fatalf("Compile(%q): %v", src, err)
	}
	return s
}

func TestEvalValues(t *testing.T) {
	tests := []struct {
		name    string
		src     string
		in      input
		want    any  // Result.Value
		wantHas bool // Result.HasValue
	}{
		{"string concat", `"a" ++ "b" ++ "c"`, input{}, "abc", true},
		{"list concat", `[1] ++ [2, 3]`, input{}, []any{int64(1), int64(2), int64(3)}, true},
		{"concat in strings untouched", `"a++b" ++ 'c ++ d' ++ """e++"""`, input{}, "a++bc ++ de++", true},
		{"augmented concat", "x = [1]\nx ++= [2]\nx", input{}, []any{int64(1), int64(2)}, true},
		{"unary plus kept", `1 + +2`, input{}, int64(3), true},
		{"numbers with ++", `1++2`, input{}, int64(3), true},
		{"top-level for and if", "total = 0\nfor i in range(5):\n    if i % 2 == 0:\n        total += i\ntotal", input{}, int64(6), true},
		{"top-level while", "n = 0\nwhile n < 3:\n    n += 1\nn", input{}, int64(3), true},
		{"set builtin", "sorted(set([3, 1, 3]))", input{}, []any{int64(1), int64(3)}, true},
		{"recursion", "def fact(n):\n    return 1 if n <= 1 else n * fact(n - 1)\nfact(5)", input{}, int64(120), true},
		{"dict literal", `{"query": payload, "limit": 5}`, input{body: "q"}, map[string]any{"query": "q", "limit": int64(5)}, true},
		{"multi-line dict", "x = 1\n{\n  \"a\": x,\n  \"b\": [x, 2]\n}", input{}, map[string]any{"a": int64(1), "b": []any{int64(1), int64(2)}}, true},
		{"str value", `str(1.5 * 2)`, input{}, "3.0", true},
		{"float value", `float("2.5")`, input{}, 2.5, true},
		{"no final expression", `x = 1`, input{}, nil, false},
		{"None value", `None`, input{}, nil, false},
		{"final if statement", "if True:\n    1", input{}, nil, false},
		{"empty script", "", input{}, nil, false},
		{"comment only", "# nothing", input{}, nil, false},
		{"false is a value", `False`, input{}, false, true},
		{"reassign payload from itself", `payload = payload["data"]` + "\npayload", input{body: map[string]any{"data": "d"}}, "d", true},
		{"shadow builtin from itself", "str = str(42)\nstr", input{}, "42", true},
		{"conditionally reassigned payload", "if \"data\" in payload:\n    payload = payload[\"data\"]\npayload", input{body: map[string]any{"x": 1}}, map[string]any{"x": int64(1)}, true},
		{"conditionally reassigned payload taken", "if \"data\" in payload:\n    payload = payload[\"data\"]\npayload", input{body: map[string]any{"data": "d"}}, "d", true},
		{"variable updated from itself", "count = count + 1\ncount", input{vars: map[string]any{"count": 1}}, int64(2), true},
		{"body aliases payload", "body[\"x\"] = 1\npayload[\"x\"]", input{body: map[string]any{}}, int64(1), true},
		{"sum ints", `sum([1, 2, 3])`, input{}, int64(6), true},
		{"sum mixed", `sum([1, 2.5])`, input{}, 3.5, true},
		{"sum start", `sum([1, 2], 10)`, input{}, int64(13), true},
		{"sum start keyword", `sum([], start=1.5)`, input{}, 1.5, true},
		{"sum empty", `sum([])`, input{}, int64(0), true},
		{"sum generator-like", `sum([x * 2 for x in range(4)])`, input{}, int64(12), true},
		{"sizeOf None", `sizeOf(None)`, input{}, int64(0), true},
		{"sizeOf string", `sizeOf("abc")`, input{}, int64(3), true},
		{"sizeOf list", `sizeOf([1, 2])`, input{}, int64(2), true},
		{"sizeOf dict", `sizeOf({"a": 1})`, input{}, int64(1), true},
		{"sizeOf payload", `sizeOf(payload)`, input{body: []any{1, 2, 3}}, int64(3), true},
		{"json body by content type", `payload["a"]`, input{body: `{"a": 1}`, headers: map[string]any{"Content-Type": "application/json; charset=utf-8"}}, int64(1), true},
		{"json bytes body", `payload[1]`, input{body: []byte(`[1, "two"]`), headers: map[string]any{"content-type": "application/problem+json"}}, "two", true},
		{"json scalar body", `payload`, input{body: `"hi"`, headers: map[string]any{"Content-Type": "application/json"}}, "hi", true},
		{"big json integer exact", `str(payload["n"])`, input{body: `{"n": 12345678901234567890}`, headers: map[string]any{"Content-Type": "application/json"}}, "12345678901234567890", true},
		{"json-looking text without content type stays text", `type(payload)`, input{body: `{"a": 1}`}, "string", true},
		{"invalid json with json content type stays text", `payload`, input{body: `{oops`, headers: map[string]any{"Content-Type": "application/json"}}, "{oops", true},
		{"bytes body is a string", `payload ++ "!"`, input{body: []byte("hi")}, "hi!", true},
		{"nil body is None", `payload == None`, input{}, true, true},
		{"text/plain stays text", `payload.strip().split("\n")`, input{body: "a,b\n1,2\n", headers: map[string]any{"Content-Type": "text/csv"}}, []any{"a,b", "1,2"}, true},
		{"headers dict", `headers["X-A"]`, input{headers: map[string]any{"X-A": "v"}}, "v", true},
		{"headers get default", `headers.get("dataType", "generic")`, input{}, "generic", true},
		{"header function", `header("X-Intent")`, input{headers: map[string]any{"X-Intent": "search"}}, "search", true},
		{"header any case", `header("x-intent")`, input{headers: map[string]any{"X-Intent": "search"}}, "search", true},
		{"header missing", `header("nope") == None`, input{}, true, true},
		{"header number", `header("HelixTimerCounter") + 1`, input{headers: map[string]any{"HelixTimerCounter": int64(4)}}, int64(5), true},
		{"variables dict", `variables["accountId"]`, input{vars: map[string]any{"accountId": "acc-1"}}, "acc-1", true},
		{"variable by name", `{"accountId": accountId}`, input{vars: map[string]any{"accountId": "acc-1"}}, map[string]any{"accountId": "acc-1"}, true},
		{"variable by name in function", "def f():\n    return accountId\nf()", input{vars: map[string]any{"accountId": "a"}}, "a", true},
		{"variable colliding with builtin loses", `[len("ab"), variables["len"]]`, input{vars: map[string]any{"len": "x"}}, []any{int64(2), "x"}, true},
		{"variable colliding with payload loses", `payload`, input{body: "b", vars: map[string]any{"payload": "v"}}, "b", true},
		{"response code int", `response_code == 200`, input{headers: map[string]any{exchange.HeaderHTTPResponseCode: 200}}, true, true},
		{"response code text", `response_code`, input{headers: map[string]any{exchange.HeaderHTTPResponseCode: "404"}}, int64(404), true},
		{"response code absent", `response_code == None`, input{}, true, true},
		{"json module", `json.encode({"a": [1, True, None]})`, input{}, `{"a":[1,true,null]}`, true},
		{"json decode", `json.decode('{"b": 2}')["b"]`, input{}, int64(2), true},
		{"json indent", `json.indent('{"a":1}', indent="  ")`, input{}, "{\n  \"a\": 1\n}", true},
		{"math module", `math.floor(2.7)`, input{}, int64(2), true},
		{"time module", `time.parse_duration("90s").minutes`, input{}, 1.5, true},
		{"enumerate", `[i for i, _ in enumerate(["a", "b"])]`, input{}, []any{int64(0), int64(1)}, true},
		{"tuple becomes list", `(1, "a")`, input{}, []any{int64(1), "a"}, true},
		{"int keys become strings", `{1: "a"}`, input{}, map[string]any{"1": "a"}, true},
		{"huge int becomes float", `10 * 1000000000000000000000`, input{}, 1e22, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := compile(t, tt.src, nil)
			res, err := s.Eval(context.Background(), tt.in.exchange())
			if err != nil {
				t.Fatalf("Eval: %v", err)
			}
			if res.HasValue != tt.wantHas {
				t.Errorf("HasValue = %v, want %v", res.HasValue, tt.wantHas)
			}
			if !reflect.DeepEqual(res.Value, tt.want) {
				t.Errorf("Value = %#v, want %#v", res.Value, tt.want)
			}
		})
	}
}

func TestWrite(t *testing.T) {
	tests := []struct {
		name     string
		src      string
		in       input
		wantBody any
		wantCT   any
	}{
		{"default json", `write({"ok": True})`, input{}, map[string]any{"ok": true}, "application/json"},
		{"explicit type", `write("hi", "text/plain")`, input{}, "hi", "text/plain"},
		{"keyword", `write("hi", content_type="text/markdown")`, input{}, "hi", "text/markdown"},
		{"none keeps header", `write("hi", None)`, input{headers: map[string]any{"Content-Type": "text/old"}}, "hi", "text/old"},
		{"payload passthrough", `write(payload, "application/json")`, input{body: map[string]any{"a": 1}}, map[string]any{"a": int64(1)}, "application/json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ex := tt.in.exchange()
			res, err := compile(t, tt.src, nil).Eval(context.Background(), ex)
			if err != nil {
				t.Fatalf("Eval: %v", err)
			}
			if !res.Written {
				t.Error("Written = false, want true")
			}
			if res.HasValue {
				t.Errorf("HasValue = true (value %v), want false: write returns None", res.Value)
			}
			if got := ex.In().Body(); !reflect.DeepEqual(got, tt.wantBody) {
				t.Errorf("body = %#v, want %#v", got, tt.wantBody)
			}
			if got := ex.In().Header("Content-Type"); got != tt.wantCT {
				t.Errorf("Content-Type = %v, want %v", got, tt.wantCT)
			}
		})
	}

	t.Run("not called", func(t *testing.T) {
		ex := input{body: "b"}.exchange()
		res, err := compile(t, `"x"`, nil).Eval(context.Background(), ex)
		if err != nil {
			t.Fatal(err)
		}
		if res.Written || ex.In().Body() != "b" {
			t.Errorf("Written = %v, body = %v; want false and untouched", res.Written, ex.In().Body())
		}
	})
	t.Run("bad content type", func(t *testing.T) {
		_, err := compile(t, `write("x", 1)`, nil).Eval(context.Background(), input{}.exchange())
		if err == nil || !strings.Contains(err.Error(), "content_type must be a string or None") {
			t.Errorf("err = %v, want content_type error", err)
		}
	})
}

func TestPayloadAndGlobals(t *testing.T) {
	tests := []struct {
		name        string
		src         string
		in          input
		wantPayload any
		wantGlobals map[string]any
	}{
		{
			name:        "mutation in place",
			src:         "total = sum([i[\"price\"] for i in payload[\"items\"]])\npayload[\"total\"] = total",
			in:          input{body: map[string]any{"items": []any{map[string]any{"price": 2}, map[string]any{"price": 3.5}}}},
			wantPayload: map[string]any{"items": []any{map[string]any{"price": int64(2)}, map[string]any{"price": 3.5}}, "total": 5.5},
			wantGlobals: map[string]any{"total": 5.5},
		},
		{
			name:        "mutation through body alias",
			src:         `body.append(4)`,
			in:          input{body: []any{1}},
			wantPayload: []any{int64(1), int64(4)},
			wantGlobals: map[string]any{},
		},
		{
			name:        "reassigned payload",
			src:         `payload = {"new": True}`,
			in:          input{body: "old"},
			wantPayload: map[string]any{"new": true},
			wantGlobals: map[string]any{"payload": map[string]any{"new": true}},
		},
		{
			name:        "enrich assignment",
			src:         `accountId = payload["accountId"]`,
			in:          input{body: map[string]any{"accountId": "acc-7"}},
			wantPayload: map[string]any{"accountId": "acc-7"},
			wantGlobals: map[string]any{"accountId": "acc-7"},
		},
		{
			name:        "functions and modules are not data",
			src:         "def helper():\n    return 1\nj = json\nn = helper()",
			in:          input{},
			wantPayload: nil,
			wantGlobals: map[string]any{"n": int64(1)},
		},
		{
			name:        "seeded name not reassigned at run time",
			src:         "if False:\n    headers = 1\nx = 2",
			in:          input{headers: map[string]any{"A": "b"}},
			wantPayload: nil,
			wantGlobals: map[string]any{"x": int64(2)},
		},
		{
			name:        "shadowed headers",
			src:         "lines = payload.split(\"\\n\")\nheaders = lines[0].split(\",\")",
			in:          input{body: "a,b\n1,2"},
			wantPayload: "a,b\n1,2",
			wantGlobals: map[string]any{"lines": []any{"a,b", "1,2"}, "headers": []any{"a", "b"}},
		},
		{
			name:        "loop variables are globals",
			src:         "for i, r in enumerate([\"x\"]):\n    pass",
			in:          input{},
			wantPayload: nil,
			wantGlobals: map[string]any{"i": int64(0), "r": "x"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := compile(t, tt.src, nil).Eval(context.Background(), tt.in.exchange())
			if err != nil {
				t.Fatalf("Eval: %v", err)
			}
			if !reflect.DeepEqual(res.Payload, tt.wantPayload) {
				t.Errorf("Payload = %#v, want %#v", res.Payload, tt.wantPayload)
			}
			if !reflect.DeepEqual(res.Globals, tt.wantGlobals) {
				t.Errorf("Globals = %#v, want %#v", res.Globals, tt.wantGlobals)
			}
		})
	}

	t.Run("exchange body is not mutated by the script", func(t *testing.T) {
		body := map[string]any{"a": 1}
		if _, err := compile(t, `payload["a"] = 2`, nil).Eval(context.Background(), input{body: body}.exchange()); err != nil {
			t.Fatal(err)
		}
		if body["a"] != 1 {
			t.Errorf("Go body changed to %v: the script must work on its own copy", body["a"])
		}
	})
}

func TestEvalBool(t *testing.T) {
	tests := []struct {
		src  string
		in   input
		want bool
	}{
		{`headers.get("HelixMcpIsError", "false") == "true"`, input{headers: map[string]any{"HelixMcpIsError": "true"}}, true},
		{`headers.get("HelixMcpIsError", "false") == "true"`, input{}, false},
		{`"billing" in payload`, input{body: map[string]any{"billing": 1}}, true},
		{`"billing" in payload`, input{body: "category: billing"}, true},
		{`"billing" in payload`, input{body: "technical"}, false},
		{`response_code == 200`, input{headers: map[string]any{exchange.HeaderHTTPResponseCode: 200}}, true},
		{`[]`, input{}, false},
		{`[0]`, input{}, true},
		{`x = 1`, input{}, false},
		{`None`, input{}, false},
		{`write("x")`, input{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			got, err := compile(t, tt.src, nil).EvalBool(context.Background(), tt.in.exchange())
			if err != nil {
				t.Fatalf("EvalBool: %v", err)
			}
			if got != tt.want {
				t.Errorf("EvalBool = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestFail(t *testing.T) {
	tests := []struct {
		name    string
		src     string
		in      input
		wantMsg string
		wantPos string
	}{
		{"plain", `fail("Value must be non-negative")`, input{}, "Value must be non-negative", "helix.yaml:10:17"},
		{"in top-level if", "if payload.get(\"value\", 0) < 0:\n    fail(\"Value must be non-negative\")\npayload", input{body: map[string]any{"value": -1}}, "Value must be non-negative", "helix.yaml:11:21"},
		{"concatenated message", "for field in [\"customerId\"]:\n    if field not in payload:\n        fail(\"Missing required field: \" ++ field)", input{body: map[string]any{}}, "Missing required field: customerId", "helix.yaml:12:25"},
		{"inside a function", "def check():\n    fail(\"deep\")\ncheck()", input{}, "deep", "helix.yaml:11:21"},
		{"several args", `fail("a", 1, None, sep="-")`, input{}, "a-1-None", "helix.yaml:10:17"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := compile(t, tt.src, nil).Eval(context.Background(), tt.in.exchange())
			var fe *FailError
			if !errors.As(err, &fe) {
				t.Fatalf("err = %v (%T), want *FailError", err, err)
			}
			if err.Error() != tt.wantMsg || fe.Msg != tt.wantMsg {
				t.Errorf("Error() = %q, Msg = %q, want exactly %q", err.Error(), fe.Msg, tt.wantMsg)
			}
			if fe.Pos != tt.wantPos {
				t.Errorf("Pos = %q, want %q", fe.Pos, tt.wantPos)
			}
		})
	}

	t.Run("EvalBool returns it too", func(t *testing.T) {
		_, err := compile(t, `fail("no")`, nil).EvalBool(context.Background(), input{}.exchange())
		var fe *FailError
		if !errors.As(err, &fe) || fe.Msg != "no" {
			t.Errorf("err = %v, want *FailError no", err)
		}
	})
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		line int
		col  int
		want string
	}{
		{"syntax error first line", `x = 1 +* 2`, 14, 13, "helix.yaml:14:20: unexpected '*' (expected a value)"},
		{"syntax error later line", "x = 1\ny = 1 +* 2", 14, 13, "helix.yaml:15:20: unexpected '*' (expected a value)"},
		{"unterminated string", "x = 'abc", 3, 5, "helix.yaml:3:9: unterminated string: the ' opened here"},
		{"resolve error", "x = 1\nbreak", 20, 1, "helix.yaml:21:1: break not in a loop"},
		{"load rejected", `load("lib.star", "f")`, 7, 9, "helix.yaml:7:9: load statements are not supported"},
		{"bad indentation", "if True:\n  x = 1\n    y = 2", 1, 1, "helix.yaml:3:5: unexpected indentation"},
		{"++ error keeps columns", `"a" ++ ++`, 2, 3, "helix.yaml:2:12: unexpected end of script (expected a value)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Compile("helix.yaml", tt.line, tt.col, tt.src, nil)
			if err == nil {
				t.Fatal("Compile succeeded, want error")
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("err = %q, want prefix %q", err.Error(), tt.want)
			}
			var se *Error
			if !errors.As(err, &se) {
				t.Errorf("err is %T, want *Error", err)
			}
		})
	}
}

func TestRuntimeErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		in   input
		want string
	}{
		{"missing key", "x = 1\ny = payload['missing']", input{body: map[string]any{}}, `helix.yaml:11:24: key "missing" not in dict`},
		{"in function", "def f():\n    return 1 / 0\nf()", input{}, "helix.yaml:11:26: floating-point division by zero"},
		{"builtin error", `len(1)`, input{}, "helix.yaml:10:16: len: value of type int has no len"},
		{"concat mismatch", `1 ++ "a"`, input{}, "helix.yaml:10:15: unknown binary op: int + string"},
		{"undefined name", "x = 1\n{\"id\": accountId}", input{}, `helix.yaml:11:20: undefined: accountId`},
		{"undefined suggests", `paylaod`, input{}, "did you mean payload?"},
		{"undefined suggests variable", `acountId`, input{vars: map[string]any{"accountId": 1}}, "did you mean accountId?"},
		{"undefined even in dead branch", "if False:\n    nope", input{}, "helix.yaml:11:17: undefined: nope"},
		{"sum of strings", `sum(["a"])`, input{}, "sum: element 0 is string, want int or float"},
		{"sizeOf int", `sizeOf(3)`, input{}, "sizeOf: got int, want string"},
		{"function value", `len`, input{}, "script value: cannot convert builtin_function_or_method"},
		{"cyclic value", "l = []\nl.append(l)\nl", input{}, "nested deeper than"},
		{"write function", `write(len)`, input{}, "write: cannot convert builtin_function_or_method"},
		{"global reassigned before use", "def f():\n    return x\ny = f()\nx = 1", input{}, "helix.yaml:11:24: global variable x referenced before assignment"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := compile(t, tt.src, nil).Eval(context.Background(), tt.in.exchange())
			if err == nil {
				t.Fatal("Eval succeeded, want error")
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %q, want it to contain %q", err.Error(), tt.want)
			}
			var fe *FailError
			if errors.As(err, &fe) {
				t.Errorf("err is a *FailError, want a plain runtime error")
			}
		})
	}
}

func TestStepLimit(t *testing.T) {
	for _, opts := range []*Options{{MaxSteps: 10_000}, nil} {
		t.Run(fmt.Sprintf("%+v", opts), func(t *testing.T) {
			s := compile(t, "x = 0\nwhile True:\n    pass", opts)
			_, err := s.Eval(context.Background(), input{}.exchange())
			if !errors.Is(err, ErrStepLimit) {
				t.Fatalf("err = %v, want ErrStepLimit", err)
			}
			max := uint64(DefaultMaxSteps)
			if opts != nil {
				max = opts.MaxSteps
			}
			want := fmt.Sprintf("script stopped after %d execution steps (an endless loop?)", max)
			if !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "helix.yaml:1") {
				t.Errorf("err = %q, want a YAML position and %q", err, want)
			}
		})
	}

	t.Run("limit is per evaluation", func(t *testing.T) {
		s := compile(t, "n = 0\nfor i in range(300):\n    n += i\nn", &Options{MaxSteps: 5_000})
		for i := 0; i < 5; i++ {
			if _, err := s.Eval(context.Background(), input{}.exchange()); err != nil {
				t.Fatalf("evaluation %d: %v", i, err)
			}
		}
	})
}

func TestCancellation(t *testing.T) {
	s := compile(t, "while True:\n    pass", &Options{MaxSteps: 1 << 62})

	t.Run("cancelled while running", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan error, 1)
		go func() {
			_, err := s.Eval(ctx, input{}.exchange())
			done <- err
		}()
		time.Sleep(20 * time.Millisecond) // let the loop start; the test does not depend on it
		cancel()
		select {
		case err := <-done:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want context.Canceled", err)
			}
			if !strings.HasPrefix(err.Error(), "helix.yaml:1") || !strings.Contains(err.Error(), "script stopped") {
				t.Errorf("err = %q, want a positioned 'script stopped' message", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("Eval did not stop after the context was cancelled")
		}
	})

	t.Run("deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, err := s.Eval(ctx, input{}.exchange())
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want context.DeadlineExceeded", err)
		}
	})

	t.Run("already cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		ex := input{body: "b"}.exchange()
		_, err := compile(t, `write("changed")`, nil).Eval(ctx, ex)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		if ex.In().Body() != "b" {
			t.Error("script ran although the context was already cancelled")
		}
	})
}

// TestConcurrentEval runs one Script from many goroutines; with -race it checks
// that a compiled script and the shared builtins are safe for concurrent use.
func TestConcurrentEval(t *testing.T) {
	s := compile(t, "payload[\"n\"] = payload[\"n\"] * 2\nwrite({\"n\": payload[\"n\"], \"who\": header(\"who\")})\npayload", nil)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			ex := input{body: map[string]any{"n": i}, headers: map[string]any{"who": fmt.Sprint(i)}}.exchange()
			res, err := s.Eval(context.Background(), ex)
			if err != nil {
				errs <- err
				return
			}
			want := map[string]any{"n": int64(2 * i), "who": fmt.Sprint(i)}
			if !reflect.DeepEqual(ex.In().Body(), want) {
				errs <- fmt.Errorf("goroutine %d: body %v, want %v", i, ex.In().Body(), want)
			}
			if !reflect.DeepEqual(res.Payload, map[string]any{"n": int64(2 * i)}) {
				errs <- fmt.Errorf("goroutine %d: payload %v", i, res.Payload)
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestSource(t *testing.T) {
	src := `"a" ++ "b"`
	if got := compile(t, src, nil).Source(); got != src {
		t.Errorf("Source() = %q, want the original %q", got, src)
	}
}

func TestNilExchange(t *testing.T) {
	if _, err := compile(t, `1`, nil).Eval(context.Background(), nil); err == nil {
		t.Error("Eval(nil exchange) succeeded, want error")
	}
}

func TestVariables(t *testing.T) {
	src := "def f():\n    return userId\nx = accountId\n{\"a\": accountId, \"p\": payload, \"n\": len(x), \"u\": f(), \"y\": y}\ny = 1"
	got := compile(t, src, nil).Variables()
	// y is read at top level before the script assigns it, so that read is of the
	// exchange variable (module-level names resolve as in Python, in order).
	want := []string{"userId", "accountId", "y"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Variables() = %v, want %v", got, want)
	}
}
