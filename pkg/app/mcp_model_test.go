package app_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/pkg/app"
)

// Servers of helix.mcp.servers and mcps: are built from one list with the same
// rules; the spellings differ only as the spec writes them (workflows: [] means
// all, expose: [] nothing; an mcps: id is also the server's name).
func TestMCPServersFromBothListsBuildAlike(t *testing.T) {
	t.Parallel()
	cfg, err := config.LoadBytes("helix.yaml", []byte(`
helix:
  mcp:
    servers:
      - enabled: true
        addr: 127.0.0.1:0
        workflows: []
      - enabled: true
        name: picked
        addr: 127.0.0.1:0
        expose: [b]
        stateless: true
      - name: off
        addr: 127.0.0.1:0
mcps:
  - id: none
    addr: 127.0.0.1:0
    expose: []
  - id: renamed
    name: Renamed Tools
    addr: 127.0.0.1:0
    tools:
      a: {description: Custom A}
workflows:
  - {id: a, description: A, trigger: direct://a, steps: []}
  - {id: b, description: B, trigger: direct://b, steps: []}
`))
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.Build(cfg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range a.MCPServers().Servers() {
		var tools []string
		for _, tl := range s.Tools {
			tools = append(tools, tl.Name+"="+tl.Description)
		}
		got = append(got, fmt.Sprintf("%s name=%q stateless=%v tools=[%s]", s.ID, s.Name, s.Stateless, strings.Join(tools, " ")))
	}
	want := []string{
		`helix.mcp.servers[0] name="helix-mcp" stateless=false tools=[a=A b=B]`,
		`none name="none" stateless=false tools=[]`,
		`picked name="picked" stateless=true tools=[b=B]`,
		`renamed name="Renamed Tools" stateless=false tools=[a=Custom A b=B]`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("servers:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Listeners beyond loopback without keys draw the same warning from either list,
// at the entry's own path.
func TestOpenListenerWarningFromBothLists(t *testing.T) {
	t.Parallel()
	cfg, err := config.LoadBytes("helix.yaml", []byte(`
helix:
  mcp:
    servers:
      - enabled: true
        addr: 0.0.0.0:0
mcps:
  - id: pub
    addr: 0.0.0.0:0
  - id: keyed
    addr: 0.0.0.0:0
    api_keys: [k]
`))
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.Build(cfg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	w := a.Config().Warnings.Error()
	for _, want := range []string{
		`helix.yaml:5:9: helix.mcp.servers[0]: mcp server "helix.mcp.servers[0]" listens on 0.0.0.0:0, beyond loopback`,
		`helix.yaml:8:5: mcps[0]: mcp server "pub" listens on 0.0.0.0:0, beyond loopback`,
	} {
		if !strings.Contains(w, want) {
			t.Errorf("warnings:\n%s\nwant %q", w, want)
		}
	}
	if strings.Contains(w, `"keyed"`) {
		t.Errorf("a server with api_keys is warned about:\n%s", w)
	}
}
