package starlang

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"runtime"
	"strings"
	"testing"
)

// evalErr compiles src, runs it against body and returns the evaluation error.
func evalErr(t *testing.T, src string, body any, opts *Options) error {
	t.Helper()
	s := compile(t, src, opts)
	_, err := s.Eval(context.Background(), input{body: body}.exchange())
	return err
}

func wantLimit(t *testing.T, err error, kind error, words ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %v", kind)
	}
	if !errors.Is(err, kind) {
		t.Fatalf("error %q (%T) is not %v", err, err, kind)
	}
	var se *Error
	if !errors.As(err, &se) {
		t.Fatalf("error %T is not a *Error: %v", err, err)
	}
	if !strings.HasPrefix(se.Pos, "helix.yaml:") {
		t.Errorf("error position %q is not in the YAML file", se.Pos)
	}
	for _, w := range words {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %q", err, w)
		}
	}
}

// Deeply nested JSON handed to json.decode used to overflow the goroutine stack, a
// fatal error that no recover can catch: one tool argument killed the process.
func TestJSONDecodeDeepNestingIsAnError(t *testing.T) {
	for _, open := range []string{"[", "{\"a\":", "[{\"a\":"} {
		deep := strings.Repeat(open, 1_500_000)
		err := evalErr(t, `json.decode(payload["s"])`, map[string]any{"s": deep}, nil)
		wantLimit(t, err, ErrNesting, "json.decode", "1000")
	}
}

func TestJSONDecodeNestingLimitIsExact(t *testing.T) {
	ok := strings.Repeat("[", DefaultMaxNesting) + strings.Repeat("]", DefaultMaxNesting)
	if err := evalErr(t, `json.decode(payload["s"])`, map[string]any{"s": ok}, nil); err != nil {
		t.Fatalf("%d levels: %v", DefaultMaxNesting, err)
	}
	tooDeep := "[" + ok + "]"
	wantLimit(t, evalErr(t, `json.decode(payload["s"])`, map[string]any{"s": tooDeep}, nil), ErrNesting)
	// Brackets inside strings do not count.
	quoted := `["` + strings.Repeat("[", 5000) + `\"["]`
	if err := evalErr(t, `json.decode(payload["s"])`, map[string]any{"s": quoted}, nil); err != nil {
		t.Fatalf("brackets in a string: %v", err)
	}
}

// Bodies decoded from JSON by components (MCP arguments, HTTP requests) reach the
// script through ToStarlark, which bounds nesting the same way.
func TestDeepGoBodyIsAnError(t *testing.T) {
	var v any = "leaf"
	for range 5000 {
		v = []any{map[string]any{"a": v}}
	}
	err := evalErr(t, `payload`, v, nil)
	if err == nil || !errors.Is(err, ErrNesting) || !strings.Contains(err.Error(), "1000") {
		t.Fatalf("err = %v, want a nesting error naming the limit", err)
	}
	if _, err := ToStarlark(v); !errors.Is(err, ErrNesting) {
		t.Fatalf("ToStarlark: %v, want ErrNesting", err)
	}
}

func TestMemoryBudget(t *testing.T) {
	body := map[string]any{"n": 200_000_000, "s": strings.Repeat("y", 1<<20)}
	for _, src := range []string{
		`"x" * payload["n"]`,
		`payload["n"] * "xy"`,
		`[0] * payload["n"]`,
		`b"x" * payload["n"]`,
		"s = 'x'\nfor i in range(28):\n    s = s + s\nlen(s)",
		"s = 'x'\nfor i in range(28):\n    s += s\nlen(s)",
		"l = [0]\nfor i in range(28):\n    l += l\nlen(l)",
		`len(",".join([payload["s"]] * 100))`,
		`len(str([payload["s"]] * 100))`,
		`len("%s" % ([payload["s"]] * 100,))`,
		`len("{}".format([payload["s"]] * 100))`,
		`len(json.encode([payload["s"]] * 100))`,
		`len(payload["s"].replace("y", "0123456789" * 10))`,
		"l = []\nfor i in range(100):\n    l.extend(range(1000000))\nlen(l)",
		"l = []\nfor i in range(100):\n    l += range(1000000)\nlen(l)",
		"n = 0\nfor i in range(100):\n    n += len(list(range(1000000)))\nn",
		`[payload["s"]] * 100`,
		"d = {'a': [payload['s']] * 100}\nd",
		"write([payload['s']] * 100)",
		"payload['big'] = [payload['s']] * 100",
		"d = {'a': 'x'}\nk = lambda: 'a'\nd[k()] *= payload['n']",
		"d = [{'a': 'x'}]\nk = lambda: 0\nd[k()]['a'] += payload['s'] * 100",
	} {
		t.Run(src, func(t *testing.T) {
			wantLimit(t, evalErr(t, src, body, nil), ErrMemoryLimit, "64 MiB", "starlang_max_memory")
		})
	}
}

// Squaring a number 40 times would build an integer of 2^40 digits; arithmetic on
// huge integers is slow long before they are big, so their size has its own limit.
func TestHugeIntegerIsRefused(t *testing.T) {
	for _, src := range []string{"x = 10\nfor i in range(40):\n    x = x * x\nx > 0", "x = 1\nfor i in range(1000):\n    x = x << 500\nx > 0"} {
		wantLimit(t, evalErr(t, src, nil, nil), ErrMemoryLimit, "integer too large")
	}
	if err := evalErr(t, "x = 3\nfor i in range(10):\n    x = x * x\nx > 0", nil, nil); err != nil {
		t.Fatal(err)
	}
}

// A range longer than the step limit could never be iterated by the script, but a
// builtin iterating over it (sum, max, list.extend) would never reach a step check.
func TestHugeRangeIsRefused(t *testing.T) {
	for _, src := range []string{`max(range(1 << 62))`, "l = []\nl.extend(range(100000000))", `len(list(range(100000000)))`} {
		wantLimit(t, evalErr(t, src, nil, nil), ErrStepLimit, "range(", "steps")
	}
	if err := evalErr(t, `sum(range(1000))`, nil, nil); err != nil {
		t.Fatal(err)
	}
}

func TestMemoryBudgetIsConfigurable(t *testing.T) {
	src := `len("x" * payload["n"])`
	body := map[string]any{"n": 2 << 20}
	if err := evalErr(t, src, body, nil); err != nil {
		t.Fatalf("2 MiB under the default budget: %v", err)
	}
	wantLimit(t, evalErr(t, src, body, &Options{MaxMemory: 1 << 20}), ErrMemoryLimit, "1 MiB")
}

// Ordinary scripts, including ones that build strings and lists in loops, stay well
// inside the budget and keep their Starlark meaning (+= on a list extends it in place).
func TestMemoryBudgetKeepsSemantics(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"a = [1]\nb = a\na += [2]\nb", "[1,2]"},
		{"a = [1]\nb = a\na = a + [2]\nb", "[1]"},
		{"d = {'k': [1]}\nd['k'] += [2]\nd", `{"k":[1,2]}`},
		{"calls = []\ndef k():\n    calls.append(1)\n    return 'a'\nd = {'a': [1]}\ne = d['a']\nd[k()] += [2]\n[d, e, len(calls)]", `[{"a":[1,2]},[1,2],1]`},
		{"def f():\n    o = [[1], [5]]\n    i = [0]\n    o[i.pop()] += [2]\n    return o\nf()", `[[1,2],[5]]`},
		{"s = ''\nfor i in range(1000):\n    s += str(i)\nlen(s)", "2890"},
		{"x = 2\nx *= 3\nx <<= 2\nx |= 1\nx %= 7\nx", "4"},
		{"s = set([1])\nt = s\ns |= set([2])\nsorted(t)", "[1]"},
		{"d = {'a': 1}\nd |= {'b': 2}\nd", `{"a":1,"b":2}`},
		{`"%s-%d" % ("a", 3)`, `"a-3"`},
		{`"-" * 3 ++ "x"`, `"---x"`},
		{`(1, 2) + (3,)`, "[1,2,3]"},
		{`sorted({"b": 1, "a": 2}.items())`, `[["a",2],["b",1]]`},
		{"f = lambda n: n * 2\nf(21)", "42"},
		{`", ".join(["a", "b"])`, `"a, b"`},
		{`str(1) + repr("x")`, `"1\"x\""`},
	} {
		t.Run(tc.src, func(t *testing.T) {
			s := compile(t, tc.src, nil)
			res, err := s.Eval(context.Background(), input{}.exchange())
			if err != nil {
				t.Fatal(err)
			}
			got, err := jsonText(res.Value)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("value = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestMemoryBudgetErrorPosition(t *testing.T) {
	s := compile(t, "a = 1\nb = 'x' * 100000000", nil)
	_, err := s.Eval(context.Background(), input{}.exchange())
	var se *Error
	if !errors.As(err, &se) || se.Pos != "helix.yaml:11:21" {
		t.Fatalf("err = %v, want a *Error at helix.yaml:11:21 (the *)", err)
	}
}

func TestCallDepthLimit(t *testing.T) {
	src := "def f(n):\n    return f(n + 1) if n < payload['n'] else n\nf(0)"
	if err := evalErr(t, src, map[string]any{"n": 500}, nil); err != nil {
		t.Fatalf("500 levels: %v", err)
	}
	wantLimit(t, evalErr(t, src, map[string]any{"n": 5000}, nil), ErrCallDepth, "1000")
	lambda := "f = lambda n: f(n + 1)\nf(0)"
	wantLimit(t, evalErr(t, lambda, nil, nil), ErrCallDepth)
	wantLimit(t, evalErr(t, src, map[string]any{"n": 100}, &Options{MaxCallDepth: 50}), ErrCallDepth, "50")
}

func TestHeadersAreCaseInsensitive(t *testing.T) {
	in := input{headers: map[string]any{"Datatype": "csv", "X-Count": 2}}
	for _, tc := range []struct{ src, want string }{
		{`headers.get("dataType")`, `"csv"`},
		{`headers.get("DATATYPE", "none")`, `"csv"`},
		{`headers.get("missing", "none")`, `"none"`},
		{`headers["x-count"]`, "2"},
		{`"datatype" in headers`, "true"},
		{`"nope" in headers`, "false"},
		{`sorted(headers.keys())`, `["Datatype","X-Count"]`},
		{`sorted([k for k in headers])`, `["Datatype","X-Count"]`},
		{`len(headers)`, "2"},
		{`type(headers)`, `"dict"`},
		{`headers`, `{"Datatype":"csv","X-Count":2}`},
		{`json.decode(json.encode(headers))["Datatype"]`, `"csv"`},
		{`dict(headers)["Datatype"]`, `"csv"`},
		{"h = headers\nh['New'] = 1\nh.get('NEW')", "1"},
	} {
		t.Run(tc.src, func(t *testing.T) {
			s := compile(t, tc.src, nil)
			res, err := s.Eval(context.Background(), in.exchange())
			if err != nil {
				t.Fatal(err)
			}
			got, err := jsonText(res.Value)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("value = %s, want %s", got, tc.want)
			}
		})
	}
	s := compile(t, `headers["absent"]`, nil)
	if _, err := s.Eval(context.Background(), in.exchange()); err == nil || !strings.Contains(err.Error(), "absent") {
		t.Errorf("missing key: err = %v", err)
	}
}

// A client (an MCP caller, an HTTP client) must not learn file names or positions;
// the log keeps them. Error() has the position, ClientMessage() does not.
func TestClientMessage(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{`fail("boom")`, "boom"},
		{`1 // 0`, "floored division by zero"},
		{`undefinedName`, "undefined: undefinedName"},
	} {
		err := evalErr(t, tc.src, nil, nil)
		cm, ok := err.(interface{ ClientMessage() string })
		if !ok {
			t.Fatalf("%s: error %T has no ClientMessage", tc.src, err)
		}
		msg := cm.ClientMessage()
		if !strings.HasPrefix(msg, tc.want) || strings.Contains(msg, "helix.yaml") {
			t.Errorf("%s: ClientMessage() = %q, want %q without position", tc.src, msg, tc.want)
		}
		if !strings.Contains(err.Error(), "helix.yaml:") && tc.src != `fail("boom")` {
			t.Errorf("%s: Error() = %q lost its position", tc.src, err)
		}
	}
}

func jsonText(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

// print goes through a guard builtin; the log still names the script line that
// called it.
func TestPrintLogsScriptPosition(t *testing.T) {
	var buf bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	defer slog.SetDefault(old)
	s := compile(t, "x = 1\nprint('hello', x)", nil)
	if _, err := s.Eval(context.Background(), input{}.exchange()); err != nil {
		t.Fatal(err)
	}
	if out := buf.String(); !strings.Contains(out, "pos=helix.yaml:11:18") || !strings.Contains(out, `msg="hello 1"`) {
		t.Errorf("log %q, want pos=helix.yaml:11:18", out)
	}
}

// Builtins that build a collection are charged before they allocate when the size
// is known up front: zip(*[l] * 100) must be refused before it builds 160 MB of
// tuples, not after.
func TestCollectionBuiltinsChargeBeforeAllocating(t *testing.T) {
	for _, src := range []string{
		"l = list(range(100000))\nlen(zip(*([l] * 100)))",
		"l = list(range(100000))\nt = [l] * 100\nlen([x for x in enumerate(l)] + list(enumerate(l)) * 0) + len(zip(*t))",
	} {
		s := compile(t, src, nil)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, err := s.Eval(context.Background(), input{}.exchange())
		runtime.ReadMemStats(&after)
		wantLimit(t, err, ErrMemoryLimit)
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 100<<20 {
			t.Errorf("%q allocated %d MiB before failing", src, grew>>20)
		}
	}
}
