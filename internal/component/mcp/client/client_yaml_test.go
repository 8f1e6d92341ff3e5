package client_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/arvenza/helix/pkg/app"
	"github.com/arvenza/helix/pkg/exchange"
)

// writeYAML writes a helix.yaml into a temp dir and returns its path.
func writeYAML(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "helix.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestClientAuthFromYAML runs spec §4.7's auth: block on a workflow target: the token
// comes from the environment and reaches the server; a second target on the same
// server without auth is refused.
func TestClientAuthFromYAML(t *testing.T) {
	t.Setenv("HELIX_TEST_YAML_TOKEN", "yaml-token")
	srv := httptest.NewServer(guarded(func(r *http.Request) bool {
		return r.Header.Get("Authorization") == "Bearer yaml-token"
	}))
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "http://")

	path := writeYAML(t, `
workflows:
  - id: secure
    trigger: { uri: direct://secure }
    steps:
      - target:
          uri: mcp://`+addr+`/mcp/whoami
          auth:
            type: bearer
            token: "${env:HELIX_TEST_YAML_TOKEN}"
  - id: anonymous
    trigger: { uri: direct://anonymous }
    steps:
      - target: mcp://`+addr+`/mcp/whoami?timeout=20s
`)
	a, _, err := app.Load(app.Options{Logger: slog.New(slog.DiscardHandler)}, path)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := a.Start(ctx); err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() {
		if err := a.Stop(context.Background()); err != nil {
			t.Errorf("stop: %v", err)
		}
	})

	ex := exchange.NewWithBody(exchange.InOut, nil)
	if err := a.Context().Send(ctx, "direct://secure", ex); err != nil {
		t.Fatalf("secure call: %v", err)
	}
	if got := ex.In().Body(); got != "Authorization=Bearer yaml-token" {
		t.Fatalf("tool saw %q, want the token from the environment", got)
	}
	ex = exchange.NewWithBody(exchange.InOut, nil)
	if err := a.Context().Send(ctx, "direct://anonymous", ex); err == nil || !strings.Contains(err.Error(), "Unauthorized") {
		t.Fatalf("call without auth: err = %v, want Unauthorized", err)
	}
}

// TestClientAuthYAMLErrors checks that auth mistakes are configuration errors with
// the position of the auth: block.
func TestClientAuthYAMLErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, target, want string }{
		{"unknown key", `{uri: "mcp://localhost:1/t", auth: {type: bearer, tokn: x}}`, "unknown key(s) tokn"},
		{"missing value", `{uri: "mcp://localhost:1/t", auth: {type: api-key}}`, "needs key"},
		{"unset env", `{uri: "mcp://localhost:1/t", auth: {type: bearer, token: "${env:HELIX_TEST_SURELY_UNSET_TOKEN}"}}`, "HELIX_TEST_SURELY_UNSET_TOKEN"},
		{"stdio", `{uri: "mcp:///bin/srv/t?transport=stdio", auth: {type: bearer, token: x}}`, "not stdio"},
		{"placeholder uri", `{uri: "mcp://localhost:1/${header.tool}", auth: {type: bearer, token: x}}`, "fixed mcp:// URI"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeYAML(t, "workflows:\n  - id: w\n    trigger: { uri: direct://w }\n    steps:\n      - target: "+tc.target+"\n")
			_, _, err := app.Load(app.Options{Logger: slog.New(slog.DiscardHandler)}, path)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if !strings.Contains(err.Error(), "helix.yaml:5:") {
				t.Errorf("err = %v, want the position of the step (line 5)", err)
			}
		})
	}
}
