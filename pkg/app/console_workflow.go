package app

import (
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/console/stepstats"
	"github.com/arvenza/helix/internal/console/workflow"
)

// The Workflows pages (internal/console/workflow): every workflow, tool,
// agent and pipeline drawn from its YAML, with live counts from a step
// counter traced beside OpenTelemetry.
func init() {
	registerConsolePart(consolePart{Name: "workflows", Setup: setupWorkflowPage})
}

func setupWorkflowPage(a *App) (consoleSetup, error) {
	src := newWorkflowSource(a.cfg)
	return consoleSetup{Tracer: src.stats, Page: workflow.NewPage(src)}, nil
}

// workflowSource is what the Workflows pages read: the graphs, built once
// from the configuration and its files as written, and the step counters.
type workflowSource struct {
	graphs []*workflow.Graph
	files  *workflow.Files
	stats  *stepstats.Stats
}

func newWorkflowSource(cfg *config.Config) *workflowSource {
	files := workflow.ReadFiles(cfg.Files)
	graphs := workflow.Build(cfg, files)
	defs := make([]stepstats.Def, len(graphs))
	for i, g := range graphs {
		defs[i] = stepstats.Def{Kind: g.Kind, ID: g.ID, Steps: len(g.Steps), Nested: g.NestedPositions()}
	}
	return &workflowSource{graphs: graphs, files: files, stats: stepstats.New(defs)}
}

func (s *workflowSource) Graphs() []*workflow.Graph { return s.graphs }

func (s *workflowSource) Counts(kind, id string) (stepstats.Snapshot, bool) {
	return s.stats.Get(kind, id)
}

func (s *workflowSource) YAML(p config.Pos) (string, bool, bool) { return s.files.Snippet(p) }
