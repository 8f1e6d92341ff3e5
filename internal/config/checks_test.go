package config

import (
	"strings"
	"testing"

	"github.com/arvenza/helix/internal/depcheck"
)

// The YAML model knows no module's values: what a PostgreSQL or Redis URL, a
// pgvector table must look like is checked by the module that uses them, through
// a registered ValueCheck. This test binary links no module, so nothing checks
// them here; the modules' own tests show their errors (internal/cluster,
// internal/component/mcp/security/redislimit, internal/rag/store/pgvector).
func TestModelLeavesModuleValuesToTheirModules(t *testing.T) {
	cfg, errs := load(t, `
helix:
  cluster:
    leader: mysql://db/x
mcps:
  - id: s
    rate_limit: 60
    rate_limit_store: http://cache:6379
pipelines:
  - id: p
    steps:
      - rag-store: {store: pgvector, dsn: "mysql://x", table: "bad table"}
`)
	if errs != nil {
		t.Fatalf("the model checks a module's values itself:\n%v", errs)
	}
	if cfg.Helix.Cluster.Leader != "mysql://db/x" || cfg.MCPs[0].Security.RateLimitStore != "http://cache:6379" ||
		cfg.Pipelines[0].Store.DSN != "mysql://x" || cfg.Pipelines[0].Store.Table != "bad table" {
		t.Errorf("decoded %+v %+v %+v", cfg.Helix.Cluster, cfg.MCPs[0].Security, cfg.Pipelines[0].Store)
	}
}

// A registered check runs on its value, and its error has the value's position.
func TestRegisteredValueCheckReportsAtTheValue(t *testing.T) {
	restore := swapValueChecks(map[string]ValueCheck{
		CheckClusterLeader: func(v string) (string, string) {
			if strings.HasPrefix(v, "mysql:") {
				return "not mysql", "use postgres"
			}
			return "", ""
		},
	})
	defer restore()
	_, errs := load(t, "helix:\n  cluster:\n    leader: mysql://db/x\n")
	if got := errs.Error(); got != "helix.yaml:3:13: helix.cluster.leader: not mysql (use postgres)" {
		t.Errorf("errors: %s", got)
	}
	if _, errs := load(t, "helix:\n  cluster:\n    leader: postgres://db/x\n"); errs != nil {
		t.Errorf("a value the check accepts: %v", errs)
	}
}

// Registering a check twice under one name is a programming error, reported
// rather than letting the second silently win.
func TestRegisterValueCheckTwicePanics(t *testing.T) {
	restore := swapValueChecks(map[string]ValueCheck{})
	defer restore()
	RegisterValueCheck("x", func(string) (string, string) { return "", "" })
	defer func() {
		if recover() == nil {
			t.Error("a second registration under one name was accepted")
		}
	}()
	RegisterValueCheck("x", func(string) (string, string) { return "", "" })
}

// internal/config is the YAML model only: it depends on no component, no RAG or
// agent code and no SDK; modules depend on it, not the other way round.
func TestConfigImportsNoModule(t *testing.T) {
	g, err := depcheck.Load(".", ".")
	if err != nil {
		t.Fatal(err)
	}
	const module = "github.com/arvenza/helix/"
	forbidden := func(p string) bool {
		for _, prefix := range []string{"internal/component", "internal/rag", "internal/agent", "internal/cluster",
			"internal/step", "internal/tracing", "pkg/app", "pkg/component", "pkg/engine"} {
			if rel, ours := strings.CutPrefix(p, module); ours && (rel == prefix || strings.HasPrefix(rel, prefix+"/")) {
				return true
			}
		}
		for _, sdk := range []string{"github.com/openai/", "github.com/anthropics/", "github.com/redis/", "github.com/twmb/franz-go",
			"github.com/jackc/", "go.opentelemetry.io/"} {
			if strings.HasPrefix(p, sdk) {
				return true
			}
		}
		return false
	}
	for _, v := range g.Forbidden(module+"internal/config", forbidden) {
		t.Errorf("internal/config depends on %s: %s", v.Package, v)
	}
}
