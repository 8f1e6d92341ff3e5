package starlang_test

import (
	"context"
	"testing"

	"github.com/arvenza/helix/internal/starlang"
	"github.com/arvenza/helix/pkg/exchange"
)

// BenchmarkTransformSmall is the quickstart's transform: compiled once, evaluated
// per exchange with a small JSON-like payload. Goal: ≤ 20 µs.
func BenchmarkTransformSmall(b *testing.B) {
	s, err := starlang.Compile("bench.yaml", 1, 1, `name = payload.get("name", "World")
{"greeting": "Hello, " ++ name ++ "!", "length": len(name)}`, nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		ex := exchange.NewWithBody(exchange.InOut, map[string]any{"name": "Ada"})
		r, err := s.Eval(ctx, ex)
		if err != nil {
			b.Fatal(err)
		}
		m, ok := r.Value.(map[string]any)
		if !ok || m["greeting"] != "Hello, Ada!" {
			b.Fatalf("value %#v", r.Value)
		}
	}
}

// BenchmarkPredicate is a boolean condition (as choice/filter steps use).
func BenchmarkPredicate(b *testing.B) {
	s, err := starlang.Compile("bench.yaml", 1, 1, `payload["amount"] > 100 and header("X-Tier") == "gold"`, nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		ex := exchange.NewWithBody(exchange.InOut, map[string]any{"amount": 150})
		ex.In().SetHeader("X-Tier", "gold")
		ok, err := s.EvalBool(ctx, ex)
		if err != nil || !ok {
			b.Fatalf("%v %v", ok, err)
		}
	}
}

// BenchmarkCompile is the one-time cost paid per script at load.
func BenchmarkCompile(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := starlang.Compile("bench.yaml", 1, 1, `name = payload.get("name", "World")
{"greeting": "Hello, " ++ name ++ "!", "length": len(name)}`, nil); err != nil {
			b.Fatal(err)
		}
	}
}
