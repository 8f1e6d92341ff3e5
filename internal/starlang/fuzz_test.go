package starlang

import (
	"context"
	"errors"
	"testing"
	"time"
)

// FuzzEval checks that Compile and Eval never panic, whatever the source: every
// failure must come back as an error. Steps are bounded so generated endless loops
// end quickly.
//
//	go test -run=^$ -fuzz=FuzzEval -fuzztime=10s ./internal/starlang
func FuzzEval(f *testing.F) {
	for _, tc := range specCases {
		f.Add(tc.src)
	}
	for _, seed := range []string{
		`"a" ++ "b"`, `[1] ++ [2]`, `x ++= y`, `'''++''' ++ r"\"++" ++ b'+'`,
		"while True:\n    pass", "def f(n):\n    return f(n + 1)\nf(0)",
		`fail("x")`, `write(payload)`, `sum([1, 2.5], start=1)`, `sizeOf(None)`,
		`json.decode(payload)`, `json.encode(headers)`, `header("X")`, `variables`, `response_code`,
		`load("x", "y")`, `payload = payload`, "l = []\nl.append(l)\nl", `accountId`,
		`time.now()`, `math.sqrt(2)`, "if x:\n\ty", `"unterminated`, "#",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, src string) {
		s, err := Compile("fuzz.yaml", 3, 7, src, &Options{MaxSteps: 20_000})
		if err != nil {
			var se *Error
			if !errors.As(err, &se) {
				t.Fatalf("Compile(%q) error %T is not a *Error: %v", src, err, err)
			}
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ex := input{
			body:    map[string]any{"value": 1, "items": []any{map[string]any{"price": 2}}},
			headers: map[string]any{"X": "y", "Content-Type": "application/json"},
			vars:    map[string]any{"accountId": "a"},
		}.exchange()
		_, _ = s.Eval(ctx, ex)
		_, _ = s.EvalBool(ctx, ex)
	})
}
