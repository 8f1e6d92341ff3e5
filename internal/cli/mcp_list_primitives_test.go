package cli

import (
	"os"
	"strings"
	"testing"
)

func TestMCPListShowsResourcesAndPrompts(t *testing.T) {
	t.Parallel()
	file := t.TempDir() + "/primitives.yaml"
	yaml := `mcps:
  - id: docs
    addr: 127.0.0.1:0
  - id: bare
    addr: 127.0.0.1:0
    expose: []
resources:
  - {uri: app://motd, name: motd, text: hello}
  - {uri_template: "app://orders/{id}", name: order, workflow: get-order}
prompts:
  - {name: review, messages: [{content: "Review it"}]}
workflows:
  - id: get-order
    steps: [{transform: {starlang: 'payload["id"]'}}]
`
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := execute(t, "mcp", "list", file)
	if code != ExitOK {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	for _, want := range []string{"resources: app://motd, app://orders/{id}\n", "prompts:   review\n"} {
		if strings.Count(stdout, want) != 1 {
			t.Errorf("want %q once (server docs only) in\n%s", want, stdout)
		}
	}
}
