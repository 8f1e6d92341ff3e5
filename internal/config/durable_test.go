package config

import (
	"strings"
	"testing"
)

func TestDurableKeys(t *testing.T) {
	t.Setenv("HELIX_TEST_PGPASSWORD", "s3cret")
	cfg, errs := load(t, `
helix:
  durable: true
  durable_store: postgres://helix:${env:HELIX_TEST_PGPASSWORD}@db:5432/runs
  replica_id: web-1
  durable_max_checkpoint: 2MiB
workflows:
  - id: orders
    durable: true
    trigger: direct://orders
    steps:
      - log: x
tools:
  - id: slow
    description: slow
    input: {n: integer}
    output: {m: integer}
    durable: true
    steps:
      - log: x
agents:
  - id: helper
    durable: true
    model: {provider: openai, model: gpt-4o}
`)
	if errs != nil {
		t.Fatal(errs)
	}
	h := cfg.Helix
	if !h.Durable || h.DurableStore != "postgres://helix:s3cret@db:5432/runs" || h.ReplicaID != "web-1" || h.DurableMaxCheckpoint != 2<<20 {
		t.Fatalf("helix %+v", h)
	}
	if !cfg.Workflows[0].Durable || !cfg.Tools[0].Durable || !cfg.Agents[0].Durable {
		t.Fatalf("durable: workflow %v tool %v agent %v", cfg.Workflows[0].Durable, cfg.Tools[0].Durable, cfg.Agents[0].Durable)
	}
	cfg, errs = load(t, "workflows:\n  - id: a\n    trigger: direct://a\n    steps:\n      - log: x\n")
	if errs != nil || cfg.Workflows[0].Durable || cfg.Helix.Durable {
		t.Fatalf("default: %v %+v", errs, cfg.Workflows[0])
	}
}

func TestDurableErrors(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		want []string
	}{
		{"helix:\n  durable_store: not a url\n", []string{"helix.yaml:2:18", "helix.durable_store must be a PostgreSQL URL"}},
		{"helix:\n  durable: maybe\n", []string{"helix.yaml:2:12", "helix.durable"}},
		{"helix:\n  durable_max_checkpoint: lots\n", []string{"helix.yaml:2:27", "helix.durable_max_checkpoint"}},
		{"workflows:\n  - id: a\n    durable: 3\n    trigger: direct://a\n    steps:\n      - log: x\n", []string{"helix.yaml:3:14", "durable"}},
	} {
		_, errs := load(t, tc.yaml)
		if errs == nil {
			t.Errorf("%q: no error", tc.yaml)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(errs.Error(), w) {
				t.Errorf("%q: %v\nwant %q", tc.yaml, errs, w)
			}
		}
	}
}
