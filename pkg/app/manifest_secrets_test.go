package app_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/arvenza/helix/internal/management"
)

// The manifest shows http-server:// routes as written: a secret a trigger URI takes
// from ${env:…} is not published on the management address.
func TestManifestShowsTriggerURIsAsWritten(t *testing.T) {
	t.Setenv("HOOK_SECRET", "s3cr3t-value")
	a, err := buildYAML(t, `
workflows:
  - id: hook
    trigger: "http-server://127.0.0.1:0/hook/${env:HOOK_SECRET}"
    steps:
      - log:
          message: "hook"
`)
	if err != nil {
		t.Fatal(err)
	}
	startBuilt(t, a)
	resp, err := http.Get("http://" + a.ManagementAddr() + management.ManifestPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if strings.Contains(string(body), "s3cr3t-value") {
		t.Errorf("manifest publishes the resolved secret: %s", body)
	}
	if !strings.Contains(string(body), `/hook/${env:HOOK_SECRET}`) {
		t.Errorf("manifest does not show the route as written: %s", body)
	}
}
