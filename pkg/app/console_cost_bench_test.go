package app_test

import (
	"context"
	"testing"

	"github.com/arvenza/helix/pkg/app"
	"github.com/arvenza/helix/pkg/exchange"
)

// BenchmarkConsoleExchangeCost is what the console's tracers add to one
// exchange through the engine (a workflow of two steps): the same run with
// the console off and on, side by side, with allocations.
func BenchmarkConsoleExchangeCost(b *testing.B) {
	const workflows = "workflows:\n  - id: w\n    trigger: direct://w\n    steps:\n      - set-header: {name: n, constant: \"1\"}\n      - set-body: done\n"
	for _, on := range []bool{false, true} {
		// Off is said explicitly: the management server's default address is
		// loopback, where the console is on unless told otherwise.
		name, y := "console=off", "helix:\n  console:\n    enabled: false\n"
		if on {
			name, y = "console=on", "helix:\n  console:\n    auth:\n      api_keys:\n        - {key: bench-operator-key, name: bench, roles: [operator]}\n"
		}
		b.Run(name, func(b *testing.B) {
			a := buildScale(b, y+workflows)
			if got := len(app.ConsolePages(a)) > 0; got != on {
				b.Fatalf("console on = %v, want %v", got, on)
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := a.Context().Run(context.Background(), "w", exchange.NewWithBody(exchange.InOut, "x")); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
