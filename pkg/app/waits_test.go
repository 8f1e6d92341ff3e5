package app_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/arvenza/helix/pkg/app"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// An app with an approve: step serves its callback links on the management
// listener, signed with a key it keeps in helix.data_dir (readable by its
// owner only) and finds again at the next start; a reverse proxy may forward
// the links under the public host name. An app without waiting steps writes
// no key.
func TestApproveCallbackOnTheManagementListener(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "helix.yaml")
	src := `helix:
  data_dir: ` + filepath.Join(dir, "data") + `
workflows:
  - id: ship
    trigger: {uri: direct://ship}
    steps:
      - approve:
          message: "Ship ${body}?"
          notify:
            - target: direct://notify
`
	if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	urls := make(chan string, 1)
	a, _, err := app.Load(quiet, file)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Context().AddWorkflow(&engine.Workflow{ID: "notify", FromURI: "direct://notify", Processors: []engine.Processor{
		engine.ProcessorFunc(func(_ context.Context, ex *exchange.Exchange) error {
			urls <- ex.In().HeaderString("HelixApprovalUrl")
			return nil
		})}}); err != nil {
		t.Fatal(err)
	}
	startBuilt(t, a)
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		done <- a.Context().Run(ctx, "ship", exchange.NewWithBody(exchange.InOut, "order 7"))
	}()
	url := <-urls
	if !strings.HasPrefix(url, "http://"+a.ManagementAddr()+"/helix/callbacks/") {
		t.Fatalf("callback URL %q (management on %s)", url, a.ManagementAddr())
	}
	key := filepath.Join(dir, "data", "callbacks.key")
	if fi, err := os.Stat(key); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the signing key: %v %v", fi, err)
	}
	req, _ := http.NewRequest(http.MethodPost, url+"?decision=approve", nil)
	req.Host = "helix.example.com" // through a reverse proxy
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("approve: %d", resp.StatusCode)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The manifest keeps its loopback host check.
	req, _ = http.NewRequest(http.MethodGet, "http://"+a.ManagementAddr()+"/.well-known/helix-manifest.json", nil)
	req.Host = "helix.example.com"
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("manifest under another host: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}

	before, _ := os.ReadFile(key)
	a2, _, err := app.Load(quiet, file)
	if err != nil {
		t.Fatal(err)
	}
	startBuilt(t, a2)
	if after, _ := os.ReadFile(key); string(after) != string(before) {
		t.Error("a second start made a new key: links sent before a restart would stop working")
	}

	plain := filepath.Join(dir, "plain.yaml")
	if err := os.WriteFile(plain, []byte("helix:\n  data_dir: "+filepath.Join(dir, "plain-data")+"\nworkflows:\n  - id: w\n    trigger: {uri: direct://w}\n    steps: [{sleep: 1ms}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	startApp(t, plain)
	if _, err := os.Stat(filepath.Join(dir, "plain-data")); !os.IsNotExist(err) {
		t.Errorf("an app with nothing to approve wrote to its data dir: %v", err)
	}
}
