package cli

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/testtools"
)

var update = flag.Bool("update", false, "rewrite golden files")

func execute(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Execute(args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func TestValidateReportsEveryMistake(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := execute(t, "validate", "testdata/mistakes.yaml")
	if code != ExitConfig {
		t.Errorf("exit code %d, want %d", code, ExitConfig)
	}
	if stdout != "" {
		t.Errorf("stdout must stay empty on errors, got %q", stdout)
	}
	golden := "testdata/mistakes.golden"
	if *update {
		if err := os.WriteFile(golden, []byte(stderr), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if stderr != string(want) {
		t.Errorf("stderr differs from %s:\n got:\n%s\nwant:\n%s", golden, stderr, want)
	}
}

func TestValidateExamples(t *testing.T) {
	// A slack:// target without credentials is an error at load; the cookbook's Slack
	// report takes its bot token from SLACK_BOT_TOKEN, as a deployment would.
	t.Setenv("SLACK_BOT_TOKEN", "xoxb-validate-examples")
	files, err := filepath.Glob("../../examples/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			code, stdout, stderr := execute(t, "validate", f)
			if code != ExitOK || !strings.HasPrefix(stdout, "ok: ") {
				t.Errorf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
			}
		})
	}
}

func TestVersionAndUsageErrors(t *testing.T) {
	t.Parallel()
	code, stdout, _ := execute(t, "version")
	if code != ExitOK || !strings.HasPrefix(stdout, "helix "+Version+" (") {
		t.Errorf("version: %d %q", code, stdout)
	}
	if code, _, stderr := execute(t, "bogus"); code != ExitConfig || !strings.Contains(stderr, "unknown command") {
		t.Errorf("unknown command: %d %q", code, stderr)
	}
	if code, _, _ := execute(t, "validate"); code != ExitConfig {
		t.Errorf("validate without file: %d", code)
	}
	if code, _, stderr := execute(t, "validate", "testdata/does-not-exist.yaml"); code != ExitConfig || !strings.Contains(stderr, "does-not-exist.yaml") {
		t.Errorf("missing file: %d %q", code, stderr)
	}
	if code, _, stderr := execute(t, "--log-level", "loud", "run", "../../examples/quickstart.yaml"); code != ExitConfig || !strings.Contains(stderr, "unknown log level") {
		t.Errorf("bad log level: %d %q", code, stderr)
	}
}

// The quickstart runs end to end: helix run serves HTTP until its context is
// cancelled (as SIGINT would), then drains and exits 0. Its port comes from
// QUICKSTART_PORT, as the file says.
func TestRunQuickstart(t *testing.T) {
	src, err := os.ReadFile("../../examples/quickstart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(src, []byte("127.0.0.1:${env:QUICKSTART_PORT:-8080}")) {
		t.Fatal("quickstart no longer listens on 127.0.0.1:${env:QUICKSTART_PORT:-8080}; update this test")
	}
	port := testtools.FreePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	t.Setenv("QUICKSTART_PORT", fmt.Sprint(port))
	// Its MCP server too, so that the test never needs port 8090 free.
	t.Setenv("QUICKSTART_MCP_PORT", fmt.Sprint(testtools.FreePort(t)))
	file := "../../examples/quickstart.yaml"

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr testtools.SyncBuffer
	done := make(chan int, 1)
	go func() {
		done <- ExecuteContext(ctx, []string{"--log-format", "json", "--log-level", "debug", "run", file}, strings.NewReader(""), &stdout, &stderr)
	}()
	testtools.WaitForTCP(t, addr, testtools.StartupBound)

	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Post("http://"+addr+"/greet", "application/json", strings.NewReader(`{"name":"Ada"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || strings.TrimSpace(string(body)) != `{"greeting":"Hello, Ada!","length":3}` {
		t.Errorf("POST /greet = %d %s", resp.StatusCode, body)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type %q", ct)
	}

	cancel()
	select {
	case code := <-done:
		if code != ExitOK {
			t.Errorf("exit code %d; stderr:\n%s", code, stderr.String())
		}
	case <-time.After(testtools.StartupBound):
		t.Fatal("helix run did not stop after cancellation")
	}
	if stdout.String() != "" {
		t.Errorf("helix run wrote to stdout (reserved for MCP stdio): %q", stdout.String())
	}
	logs := stderr.String()
	for _, want := range []string{`"msg":"helix started"`, `"msg":"greeting Ada"`, `"msg":"helix stopped"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs lack %s:\n%s", want, logs)
		}
	}
}
