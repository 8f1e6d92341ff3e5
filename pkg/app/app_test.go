package app_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/component/httpserver"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/pkg/app"
)

// quiet discards logs and keeps the management server off the shared default
// port, which parallel test packages would otherwise fight over.
var quiet = app.Options{Logger: slog.New(slog.DiscardHandler), ManagementAddr: "127.0.0.1:0"}

// startApp loads files, starts the app and stops it when the test ends.
func startApp(t *testing.T, files ...string) *app.App {
	t.Helper()
	a, _, err := app.Load(quiet, files...)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	return startBuilt(t, a)
}

// startBuilt starts a built app and stops it (with a 30 s drain) when the test ends.
func startBuilt(t *testing.T, a *app.App) *app.App {
	t.Helper()
	if err := a.Start(context.Background()); err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := a.Stop(stopCtx); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return a
}

func httpBase(t *testing.T, a *app.App, hostport string) string {
	t.Helper()
	comp, ok := a.Context().Component("http-server")
	if !ok {
		t.Fatal("no http-server component")
	}
	addr, ok := comp.(*httpserver.Component).Addr(hostport)
	if !ok {
		t.Fatalf("no listener for %s", hostport)
	}
	return "http://" + addr.String()
}

func post(t *testing.T, url, body string) (int, string) {
	t.Helper()
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The spec §3.1 workflows, reached over HTTP through direct://.
func TestSpecQuickstartOverHTTP(t *testing.T) {
	t.Parallel()
	a := startApp(t, "testdata/spec/s3_1_quickstart.yaml", "testdata/greet_http.yaml")
	base := httpBase(t, a, "127.0.0.1:0")
	for _, tc := range []struct{ path, body, want string }{
		{"/greet", `{"name":"Ada"}`, "Hello, Ada!"},
		{"/greet", `{}`, "Hello, World!"},
		{"/tax", `{"amount":200,"rate":0.1}`, "20.0"},
		{"/tax", `{"amount":"50"}`, "5.0"},
	} {
		code, got := post(t, base+tc.path, tc.body)
		if code != 200 || got != tc.want {
			t.Errorf("POST %s %s = %d %q, want 200 %q", tc.path, tc.body, code, got, tc.want)
		}
	}
	if got := a.Context().WorkflowState("greet"); got != "Started" {
		t.Errorf("greet state %s", got)
	}
}

// Every spec snippet that needs only the components and steps of this package loads.
func TestSpecSnippetsValidate(t *testing.T) {
	t.Setenv("API_TOKEN", "test-token") // spec §13 recipe 1 references it
	files, err := filepath.Glob("testdata/spec/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no spec snippets: %v", err)
	}
	// Spec §13 Recipe 3 reads headers_list, which nothing defines: every call would
	// fail, so validate reports it where it is written.
	wantErr := map[string]string{
		"s13_recipe3_csv.yaml": "s13_recipe3_csv.yaml:21:27: workflows[0].steps[2].starlang: starlang: undefined: headers_list",
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			if want, ok := wantErr[filepath.Base(f)]; ok {
				if _, _, err := app.Load(quiet, f); err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("error %v, want %s", err, want)
				}
				return
			}
			if _, _, err := app.Load(quiet, f); err != nil {
				t.Errorf("%v", err)
			}
		})
	}
}

func loadErrors(t *testing.T, src string) config.Errors {
	t.Helper()
	cfg, err := config.LoadBytes("helix.yaml", []byte(src))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	_, err = app.Build(cfg, quiet)
	var errs config.Errors
	if !errors.As(err, &errs) {
		t.Fatalf("want config.Errors, got %v", err)
	}
	return errs
}

func TestBuildErrors(t *testing.T) {
	t.Parallel()
	errs := loadErrors(t, `workflows:
  - id: a
    trigger: mcp://localhost:8080/tool
    steps:
      - tranform:
          starlang: x
      - target: htp://example.com
      - target: http-server://0.0.0.0:1/x
      - set-body: {constant: 1, starlang: "2"}
      - log: {message: "${bodyy}"}
      - target: {uri: "log://x?level=loud"}
      - agent: {type: react}
      - target: {uri: "direct://b", auth: {type: bearer}}
  - id: b
    trigger: kafka://orders
    error_handler:
      dead_letter_channel: nowhere://dlq
  - id: c
    trigger: direct://c
  - id: d
    trigger: direct://c
`)
	want := []string{
		`helix.yaml:3:14: workflows[0].trigger: mcp:// is producer-only: it can be used as a target, not as a trigger`,
		`helix.yaml:5:9: workflows[0].steps[0]: unknown step "tranform" (did you mean "transform"?)`,
		`helix.yaml:7:17: workflows[0].steps[1]: unknown scheme "htp" in target htp://example.com (did you mean "http"?)`,
		`helix.yaml:8:17: workflows[0].steps[2]: http-server:// is consumer-only`,
		`helix.yaml:9:19: workflows[0].steps[3]: set-body has both constant: and starlang:`,
		`helix.yaml:10:14: workflows[0].steps[4]: unknown placeholder ${bodyy}`,
		`helix.yaml:11:23: workflows[0].steps[5]: log://x?level=loud: option level="loud" is not one of the allowed values (use debug, info, warn or error)`,
		`helix.yaml:12:16: workflows[0].steps[6]: an inline agent needs model: {provider: …, model: …}`,
		`helix.yaml:13:43: workflows[0].steps[7].auth: auth: is not supported on direct:// targets`,
		`helix.yaml:17:7: workflows[1].error_handler.dead_letter_channel: unknown scheme "nowhere"`,
		`helix.yaml:21:14: workflows[3].trigger: trigger direct://c is already used by the workflow at helix.yaml:19:14`,
	}
	got := strings.Split(errs.Error(), "\n")
	for i := range max(len(got), len(want)) {
		switch {
		case i >= len(want):
			t.Errorf("unexpected error: %s", got[i])
		case i >= len(got):
			t.Errorf("missing error: %s", want[i])
		case !strings.HasPrefix(got[i], want[i]):
			t.Errorf("error %d:\n got %s\nwant %s…", i, got[i], want[i])
		}
	}
}
