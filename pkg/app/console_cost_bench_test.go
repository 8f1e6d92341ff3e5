package app_test

import (
	"context"
	"testing"

	"github.com/arvenza/helix/pkg/exchange"
)

// BenchmarkConsoleExchangeCost is what the console's tracers add to one
// exchange through the engine (a workflow of two steps): the same run with
// the console off and on, side by side, with allocations.
func BenchmarkConsoleExchangeCost(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := "console=off"
		y := "workflows:\n  - id: w\n    trigger: direct://w\n    steps:\n      - set-header: {name: n, constant: \"1\"}\n      - set-body: done\n"
		if on {
			name = "console=on"
			y = "helix:\n  console:\n    auth:\n      api_keys:\n        - {key: bench-operator-key, name: bench, roles: [operator]}\n" + y
		}
		b.Run(name, func(b *testing.B) {
			a := buildScale(b, y)
			b.ReportAllocs()
			for b.Loop() {
				if err := a.Context().Run(context.Background(), "w", exchange.NewWithBody(exchange.InOut, "x")); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
