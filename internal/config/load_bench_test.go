package config_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/arvenza/helix/internal/config"
)

// workflowsYAML generates n workflows of three steps (log, Starlang transform,
// target), the shape of a typical integration file.
func workflowsYAML(n int) []byte {
	var sb strings.Builder
	sb.WriteString("workflows:\n")
	for i := range n {
		fmt.Fprintf(&sb, `  - id: flow-%d
    description: "generated workflow %d"
    trigger: direct://in-%d
    steps:
      - log:
          message: "got ${body.name}"
          level: debug
      - transform:
          starlang: |
            n = payload.get("name", "x")
            {"name": n, "index": %d}
      - target: direct://out-%d
`, i, i, i, i, i)
	}
	return []byte(sb.String())
}

// BenchmarkLoad200Workflows parses and validates a 200-workflow file from memory.
func BenchmarkLoad200Workflows(b *testing.B) {
	data := workflowsYAML(200)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		cfg, err := config.LoadBytes("bench.yaml", data)
		if err != nil {
			b.Fatal(err)
		}
		if len(cfg.Workflows) != 200 {
			b.Fatalf("%d workflows", len(cfg.Workflows))
		}
	}
}
