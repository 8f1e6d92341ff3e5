package app_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// The overview's Connectors name the components workflows only send to —
// a target: in a choice branch, a to: written as a mapping, a wiretap — and
// not just their triggers; a placeholder in a target does not hide its scheme, and no
// part of a target URI but its scheme is shown.
func TestConsoleOverviewConnectorsFromTargets(t *testing.T) {
	t.Parallel()
	a, err := buildYAML(t, `helix:
  console:
    auth:
      api_keys:
        - {key: viewer-key-123, name: vera, roles: [viewer]}
workflows:
  - id: route
    trigger: direct://route
    steps:
      - wiretap: {uri: "log://tapped?level=debug"}
      - choice:
          when:
            - starlang: "False"
              steps:
                - target: "http://127.0.0.1:1/secret-path?token=abc"
          otherwise:
            steps: [{log: "no"}]
  - id: write
    trigger: direct://write
    steps:
      - to: {uri: "file:///tmp/helix-never-written?operation=write"}
      - target: "direct://${header.where}"
tools:
  - id: fetch
    description: fetches
    input:
      q: {type: string}
    output:
      r: {type: string}
    steps:
      - target: "http://127.0.0.1:1/other"
`)
	if err != nil {
		t.Fatal(err)
	}
	startBuilt(t, a)
	u, err := url.Parse(a.ConsoleURL())
	if err != nil {
		t.Fatal(err)
	}
	resp, body := consoleGet(t, &http.Client{}, "http://"+u.Host+"/console/overview.json", "Authorization", "Bearer viewer-key-123")
	if resp.StatusCode != 200 {
		t.Fatalf("overview.json: %d %s", resp.StatusCode, body)
	}
	var ov struct {
		Sections []struct {
			Kind string
			Rows []struct{ ID, State, Detail string }
		}
	}
	if err := json.Unmarshal([]byte(body), &ov); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, s := range ov.Sections {
		if s.Kind == "connector" {
			for _, r := range s.Rows {
				got[r.ID] = r.State + ", " + r.Detail
			}
		}
	}
	want := map[string]string{
		"direct": "in use, used by 2 workflows",
		"http":   "in use, used by 2 workflows", // route (in a branch) and the tool fetch
		"log":    "in use, used by 1 workflow",
		"file":   "in use, used by 1 workflow",
		"tool":   "in use, used by 1 workflow", // the tool's own trigger
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("connector %s: %q, want %q (all: %v)", id, got[id], w, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("connectors %v, want %v", got, want)
	}
	for _, leak := range []string{"secret-path", "token=abc", "helix-never-written", "${header"} {
		if strings.Contains(body, leak) {
			t.Errorf("overview shows %q of a target URI", leak)
		}
	}
}
