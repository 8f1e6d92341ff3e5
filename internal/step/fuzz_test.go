package step_test

import (
	"os"
	"path/filepath"
	"testing"

	helixlog "github.com/arvenza/helix/internal/component/log"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/step"
	"github.com/arvenza/helix/pkg/engine"
)

// FuzzBuildSteps builds the steps of arbitrary YAML: whatever the input, the step
// specs' decoding and the builders report errors and never panic.
func FuzzBuildSteps(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/patterns/*.yaml")
	for _, s := range seeds {
		if data, err := os.ReadFile(s); err == nil {
			f.Add(data)
		}
	}
	for _, s := range []string{
		"workflows:\n  - id: w\n    steps:\n      - log: {message: hi, level: loud}\n      - set-body: [1]\n",
		"workflows:\n  - id: w\n    steps:\n      - choice: {when: [{starlang: 'True', steps: [{target: direct://x}]}], otherwise: x}\n",
		"workflows:\n  - id: w\n    steps:\n      - split: {lines: true, chunk_size: 1k, aggregate: {starlang: results}, steps: [{log: x}]}\n",
		"workflows:\n  - id: w\n    steps:\n      - multicast: {strategy: parallel, max_concurrency: 0, steps: []}\n      - aggregate: {completion: {size: 9}}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, _ := config.LoadBytes("fuzz.yaml", data)
		if cfg == nil {
			return
		}
		hc := engine.NewContext("fuzz")
		hc.AddComponent("log", helixlog.New(hc.Logger))
		bc := step.NewBuildContext(hc)
		for _, w := range cfg.Workflows {
			bc.Workflow, bc.Trigger = w.ID, w.From
			step.BuildSteps(bc, w.Steps)
		}
		for _, tl := range cfg.Tools {
			step.BuildSteps(bc, tl.Steps)
		}
		for _, e := range bc.Errors() {
			if e.Msg == "" {
				t.Errorf("an error without a message at %s", e.Pos)
			}
		}
	})
}
