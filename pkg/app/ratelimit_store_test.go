package app_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/pkg/app"
)

// limitedYAML is one MCP server allowing 2 requests a minute per client; store,
// when set, is its rate_limit_store line.
func limitedYAML(store string) string {
	y := fourWorkflows + `
mcps:
  - id: tools
    addr: "127.0.0.1:0"
    expose: [code-assistant]
    stateless: true
    api_keys: [k]
    rate_limit: 2
`
	if store != "" {
		y += "    rate_limit_store: " + store + "\n"
	}
	return y
}

// Two replicas (two App instances of one file) with one Redis share each
// client's budget: the 3rd request across both is refused, with the in-process
// limiter's answer; without the store each replica admits 2 on its own.
func TestRateLimitStoreSharedAcrossReplicas(t *testing.T) {
	r := testtools.StartRedis(t)
	rc := newRawClient(t)
	ping := func(a *app.App) (int, string, string) {
		t.Helper()
		resp, body := rc.post(serverURL(t, a, "tools")+"/mcp", pingBody, "X-API-Key", "k")
		return resp.StatusCode, resp.Header.Get("Retry-After"), body
	}

	shared := []*app.App{startSecure(t, limitedYAML(r.URL), nil), startSecure(t, limitedYAML(r.URL), nil)}
	for i := range 2 {
		if code, _, body := ping(shared[i]); code != 200 {
			t.Fatalf("request %d on replica %d: %d %s", i+1, i, code, body)
		}
	}

	alone := []*app.App{startSecure(t, limitedYAML(""), nil), startSecure(t, limitedYAML(""), nil)}
	for _, a := range alone {
		for i := range 2 {
			if code, _, body := ping(a); code != 200 {
				t.Fatalf("without a store, request %d: %d %s (each replica must admit its own 2)", i+1, code, body)
			}
		}
	}
	wantCode, wantRetry, wantBody := ping(alone[0])
	if wantCode != 429 {
		t.Fatalf("the in-process limiter admitted a 3rd request: %d", wantCode)
	}
	for i, a := range shared {
		code, retry, body := ping(a)
		if code != wantCode || body != wantBody || !closeSeconds(retry, wantRetry) {
			t.Errorf("replica %d, 3rd shared request: %d Retry-After %q %q; in-process limiter: %d %q %q",
				i, code, retry, body, wantCode, wantRetry, wantBody)
		}
	}

	// The bucket is the client's (API key #0) in the server's namespace, and expires.
	client := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer client.Close()
	ttl, err := client.PTTL(context.Background(), "helix:ratelimit:tools:key#0").Result()
	if err != nil || ttl <= 0 || ttl > 61*time.Second {
		t.Errorf("bucket key TTL %s (%v), want (0, 61s]", ttl, err)
	}
}

// closeSeconds reports whether two Retry-After values are within two seconds:
// the two limiters' buckets were drained a moment apart.
func closeSeconds(a, b string) bool {
	x, errA := strconv.Atoi(a)
	y, errB := strconv.Atoi(b)
	return errA == nil && errB == nil && x-y <= 2 && y-x <= 2
}

// With the store gone, requests are decided by the replica's own buckets at once
// (local fallback), counted in /metrics and warned about without the password.
func TestRateLimitStoreDown(t *testing.T) {
	r := testtools.StartRedis(t)
	r.Stop()
	var logs testtools.SyncBuffer
	a := startSecure(t, limitedYAML("redis://:hunter2-pw@"+r.Addr+"/0"), &logs)
	rc := newRawClient(t)
	url := serverURL(t, a, "tools") + "/mcp"
	start := time.Now()
	var codes []int
	for range 3 {
		resp, _ := rc.post(url, pingBody, "X-API-Key", "k")
		codes = append(codes, resp.StatusCode)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("3 requests took %s with the store down", took)
	}
	if codes[0] != 200 || codes[1] != 200 || codes[2] != 429 {
		t.Errorf("answers %v, want the local bucket's 200 200 429", codes)
	}
	var errs uint64
	for _, m := range a.Metrics().RateLimitStoreErrors {
		if m.Server == "tools" {
			errs = m.Errors
		}
	}
	if errs != 3 {
		t.Errorf("helix_mcp_rate_limit_store_errors_total{server=tools} = %d, want 3", errs)
	}
	out := logs.String()
	if !strings.Contains(out, "rate limit store cannot decide") || strings.Contains(out, "hunter2-pw") {
		t.Errorf("want the store warning without the password:\n%s", out)
	}
}

// rate_limit_store without rate_limit limits nothing: a warning at the key says
// so; on stdio it is one of the HTTP-only keys that are not applied.
func TestRateLimitStoreWarnings(t *testing.T) {
	a, err := loadYAML(fourWorkflows + `
mcps:
  - id: http
    addr: "127.0.0.1:0"
    rate_limit_store: redis://127.0.0.1:6379
  - id: local
    transport: stdio
    rate_limit: 10
    rate_limit_store: redis://127.0.0.1:6379
`)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range a.Config().Warnings {
		got = append(got, w.Error())
	}
	all := strings.Join(got, "\n")
	for _, want := range []string{
		"mcps[0].rate_limit_store: rate_limit_store has no effect: rate_limit is 0 (off)",
		"mcps[1]: rate_limit, rate_limit_store: not applied to a stdio server",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("warnings lack %q:\n%s", want, all)
		}
	}
}

// A bad store URL is one error, at the key, that never shows the password.
func TestRateLimitStoreBadURL(t *testing.T) {
	_, err := loadYAML(fourWorkflows + `
mcps:
  - id: http
    addr: "127.0.0.1:0"
    rate_limit: 5
    rate_limit_store: "redis://:hunter2-pw@redis:6379/zero"
`)
	if err == nil {
		t.Fatal("accepted")
	}
	msg := err.Error()
	if !strings.Contains(msg, ".rate_limit_store: the path \"/zero\" is not a database number") || strings.Count(msg, "rate_limit_store") != 1 ||
		strings.Contains(msg, "hunter2-pw") {
		t.Errorf("want one positioned error without the password, got:\n%s", msg)
	}
}

// Two helix processes (the real binary) with one Redis share the budget too.
func TestRateLimitStoreTwoProcesses(t *testing.T) {
	r := testtools.StartRedis(t)
	file := filepath.Join(t.TempDir(), "helix.yaml")
	yaml := `helix:
  management:
    enabled: false
` + strings.Replace(limitedYAML(r.URL), `addr: "127.0.0.1:0"`, `addr: "${env:HELIX_TEST_MCP_ADDR}"`, 1)
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	helix := testtools.HelixBinary(t)
	var urls []string
	for range 2 {
		addr := "127.0.0.1:" + strconv.Itoa(testtools.FreePort(t))
		cmd := exec.Command(helix, "run", file)
		cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "HELIX_TEST_MCP_ADDR="+addr)
		var stderr testtools.SyncBuffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			_ = cmd.Wait()
			if t.Failed() {
				t.Logf("helix on %s, stderr:\n%s", addr, stderr.String())
			}
		})
		testtools.WaitForTCP(t, addr, testtools.StartupBound)
		urls = append(urls, "http://"+addr+"/mcp")
	}
	rc := newRawClient(t)
	var codes []int
	for _, u := range []string{urls[0], urls[1], urls[0], urls[1]} {
		resp, _ := rc.post(u, pingBody, "X-API-Key", "k")
		codes = append(codes, resp.StatusCode)
	}
	if fmt.Sprint(codes) != "[200 200 429 429]" {
		t.Errorf("answers across the two processes: %v, want [200 200 429 429] (2 per minute shared)", codes)
	}
}

// Gateway policies with rate: or quota: keep their buckets in rate_limit_store:
// the store is not idle without rate_limit then.
func TestRateLimitStoreOfGatewayPolicies(t *testing.T) {
	a, err := loadYAML(fourWorkflows + `
mcps:
  - id: gw
    addr: "127.0.0.1:0"
    rate_limit_store: redis://127.0.0.1:6379
    policies:
      - { tools: ["*"], quota: 100/day }
`)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range a.Config().Warnings {
		if strings.Contains(w.Error(), "rate_limit_store has no effect") {
			t.Errorf("warning: %v", w)
		}
	}
}
