package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// slimTags are the build tags that leave parts of Helix out, with the module
// paths (prefixes) each must keep out of the binary.
var slimTags = []struct {
	tag  string
	gone []string
}{
	{"helix_nollm", []string{"github.com/openai/", "github.com/anthropics/",
		"github.com/arvenza/helix/internal/agent/openai", "github.com/arvenza/helix/internal/agent/anthropic",
		"github.com/arvenza/helix/internal/rag/embed/openai"}},
	{"helix_noredis", []string{"github.com/redis/", "github.com/arvenza/helix/internal/component/mcp/security/redislimit"}},
	{"helix_noonnx", []string{"github.com/yalue/onnxruntime_go", "github.com/sugarme/tokenizer",
		"github.com/arvenza/helix/internal/rag/embed/onnx", "github.com/arvenza/helix/internal/rag/rerank/crossencoder"}},
	{"helix_nokafka", []string{"github.com/twmb/franz-go", "github.com/arvenza/helix/internal/component/kafka"}},
}

// deps is `go list -deps` of ./cmd/helix built with tags ("" for the default build).
func deps(t *testing.T, tags string) []string {
	t.Helper()
	args := []string{"list", "-deps"}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	cmd := exec.Command("go", append(args, ".")...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderrOf(err))
	}
	return strings.Fields(string(out))
}

func stderrOf(err error) []byte {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.Stderr
	}
	return nil
}

// matching returns the packages of pkgs under any of the prefixes.
func matching(pkgs, prefixes []string) []string {
	var hit []string
	for _, p := range pkgs {
		for _, pre := range prefixes {
			if p == pre || strings.HasPrefix(p, pre) {
				hit = append(hit, p)
				break
			}
		}
	}
	return hit
}

// Each slim tag leaves its SDKs out of the binary, which the default build keeps.
func TestSlimTagsLeaveTheirDependenciesOut(t *testing.T) {
	t.Parallel()
	all := deps(t, "")
	for _, s := range slimTags {
		if len(matching(all, s.gone)) == 0 {
			t.Errorf("the default build has none of %v: it must keep everything (is the list of %s current?)", s.gone, s.tag)
		}
	}
	for _, s := range slimTags {
		if left := matching(deps(t, s.tag), s.gone); len(left) > 0 {
			t.Errorf("-tags %s still links %d packages it should leave out: %v", s.tag, len(left), left)
		}
	}
}

// A configuration that uses a part the build left out is refused by `helix
// validate` at the part's position, naming the tag; one build with every slim tag.
func TestSlimBuildRefusesLeftOutParts(t *testing.T) {
	if testing.Short() {
		t.Skip("builds helix (-short)")
	}
	t.Parallel()
	var tags []string
	for _, s := range slimTags {
		tags = append(tags, s.tag)
	}
	tagList := strings.Join(tags, ",")
	bin := filepath.Join(t.TempDir(), "helix")
	if out, err := exec.Command("go", "build", "-tags", tagList, "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build -tags %s: %v\n%s", tagList, err, out)
	}
	cases := []struct {
		name, yaml string
		want       []string
	}{
		{"agent provider openai", `agents:
  - id: a
    model:
      provider: openai
      model: gpt-4o-mini
`, []string{"helix.yaml:4:17: agents[0].model.provider: openai is not available in this build (built with -tags helix_nollm); use a build without it"}},
		{"agent provider anthropic", `agents:
  - id: a
    model: {provider: anthropic, model: claude-sonnet-4-20250514}
`, []string{"helix.yaml:3:23: agents[0].model.provider: anthropic is not available in this build (built with -tags helix_nollm); use a build without it"}},
		{"openai embedder", pipelineYAML("openai"), []string{"helix.yaml:5:9: ",
			"rag-embed provider openai is not available in this build (built with -tags helix_nollm); use a build without it"}},
		{"onnx embedder", pipelineYAML("onnx"), []string{"helix.yaml:5:9: ",
			"rag-embed provider onnx is not available in this build (built with -tags helix_noonnx); use a build without it"}},
		{"onnx reranker in a pipeline", `pipelines:
  - id: docs
    steps:
      - rag-rerank: {provider: onnx, model_path: model.onnx}
`, []string{"helix.yaml:4:9: ",
			"rag-rerank provider onnx is not available in this build (built with -tags helix_noonnx); use a build without it"}},
		{"onnx reranker in a workflow", `workflows:
  - id: w
    trigger: direct://w
    steps:
      - rag-rerank: {provider: onnx, model_path: model.onnx}
`, []string{"helix.yaml:5:32: workflows[0].steps[0].provider: rag-rerank provider onnx is not available in this build (built with -tags helix_noonnx); use a build without it"}},
		{"redis rate-limit store", `mcps:
  - id: s
    addr: "127.0.0.1:0"
    api_keys: [k]
    rate_limit: 60
    rate_limit_store: redis://127.0.0.1:6379
`, []string{"helix.yaml:6:23: mcps[0].rate_limit_store: redis is not available in this build (built with -tags helix_noredis); use a build without it"}},
		{"kafka trigger, target and settings", `helix:
  kafka:
    brokers: [127.0.0.1:9092]
workflows:
  - id: w
    trigger:
      uri: kafka://orders
    steps:
      - target: kafka://out
`, []string{"helix.yaml:3:5: helix.kafka: kafka:// is not available in this build (built with -tags helix_nokafka)",
			"helix.yaml:7:12: workflows[0].trigger: kafka:// is not available in this build (built with -tags helix_nokafka)",
			"kafka:// is not available in this build (built with -tags helix_nokafka)"}},
	}
	for _, c := range cases {
		dir := t.TempDir()
		file := filepath.Join(dir, "helix.yaml")
		if err := os.WriteFile(file, []byte(c.yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "validate", "helix.yaml")
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Errorf("%s: validate passed in a build without it:\n%s", c.name, out)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(string(out), w) {
				t.Errorf("%s: output lacks %q:\n%s", c.name, w, out)
			}
		}
		if strings.Contains(string(out), "panic") {
			t.Errorf("%s: helix panicked:\n%s", c.name, out)
		}
	}
}

func pipelineYAML(provider string) string {
	extra := ""
	if provider == "onnx" {
		extra = ", model_path: model.onnx"
	}
	return `pipelines:
  - id: docs
    steps:
      - rag-chunk: {strategy: recursive}
      - rag-embed: {provider: ` + provider + extra + `}
      - rag-store: {store: embedded}
`
}
