package app_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	helixhttp "github.com/arvenza/helix/internal/component/http"
	"github.com/arvenza/helix/internal/component/kafka"
	"github.com/arvenza/helix/internal/component/slack"
	"github.com/arvenza/helix/internal/component/slack/slacktest"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/pkg/app"
	"github.com/arvenza/helix/pkg/component"
)

// ops12_2 is the world around spec §12.2: a stub Kubernetes API, stub health
// endpoints of the services, a kfake Kafka cluster and a fake Slack, all reached by a
// Helix built from one of the testdata/spec12_2 files.
type ops12_2 struct {
	app   *app.App
	k8s   *k8sStub
	slack *slacktest.Server
	audit *kgo.Client // reads the topic audit-log
	mcp   *sdk.ClientSession
}

// k8sStub answers POST /apis/apps/v1/namespaces/NS/deployments as the Kubernetes API
// server does: 201 Created with the object it stored (metadata filled in).
type k8sStub struct {
	mu      sync.Mutex
	created []map[string]any
}

func (k *k8sStub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	const prefix = "/apis/apps/v1/namespaces/"
	ns, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, prefix), "/")
	if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, prefix) || rest != "deployments" {
		http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`, http.StatusNotFound)
		return
	}
	var obj map[string]any
	if err := json.NewDecoder(r.Body).Decode(&obj); err != nil || r.Header.Get("Content-Type") != "application/json" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"BadRequest","code":400}`)
		return
	}
	k.mu.Lock()
	k.created = append(k.created, obj)
	k.mu.Unlock()
	stored := map[string]any{}
	for key, v := range obj {
		stored[key] = v
	}
	meta, _ := obj["metadata"].(map[string]any)
	stored["metadata"] = map[string]any{"name": meta["name"], "namespace": ns, "uid": "0b7c9d51-6f0e-4bd1-9f2e-5b1c2a3d4e5f",
		"resourceVersion": "4711", "generation": 1, "creationTimestamp": "2026-12-01T06:00:00Z"}
	stored["status"] = map[string]any{}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(stored)
}

func (k *k8sStub) deployments() []map[string]any {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]map[string]any(nil), k.created...)
}

// healthStub is the /health endpoint of every service NAME.default.svc:8080: "api" is
// up (200), "billing" is down (503); other names do not resolve.
func healthStub(w http.ResponseWriter, r *http.Request) {
	host, _, _ := net.SplitHostPort(r.Host)
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.URL.Path != "/health":
		w.WriteHeader(http.StatusNotFound)
	case host == "api.default.svc":
		_, _ = io.WriteString(w, `{"status":"UP"}`)
	default:
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, `{"status":"DOWN"}`)
	}
}

// clusterDNS is the http:// component's transport in these tests: it sends requests
// for kubernetes.default.svc and for the health endpoints of api and billing to the
// stubs (the Host header stays as written), and answers "no such host" for any other
// name, as a cluster's DNS does for a service that does not exist.
type clusterDNS struct {
	base       *http.Transport
	k8s, probe string // host:port of the stubs
}

func (c *clusterDNS) RoundTrip(r *http.Request) (*http.Response, error) {
	var to string
	switch r.URL.Host {
	case "kubernetes.default.svc":
		to = c.k8s
	case "api.default.svc:8080", "billing.default.svc:8080":
		to = c.probe
	default:
		return nil, &net.DNSError{Err: "no such host", Name: r.URL.Hostname(), IsNotFound: true}
	}
	r = r.Clone(r.Context())
	r.Host = r.URL.Host
	r.URL.Host = to
	return c.base.RoundTrip(r)
}

func start12_2(t *testing.T, file string) *ops12_2 {
	t.Helper()
	o := &ops12_2{k8s: &k8sStub{}}
	k8sSrv := httptest.NewServer(o.k8s)
	t.Cleanup(k8sSrv.Close)
	probeSrv := httptest.NewServer(http.HandlerFunc(healthStub))
	t.Cleanup(probeSrv.Close)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	dns := &clusterDNS{base: tr, k8s: strings.TrimPrefix(k8sSrv.URL, "http://"), probe: strings.TrimPrefix(probeSrv.URL, "http://")}

	o.slack = slacktest.NewServer(t, "xoxb-ops-bot")
	t.Setenv(slack.EnvBotToken, "xoxb-ops-bot") // slack://ops-channel takes its token from there

	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.DefaultNumPartitions(1), kfake.SeedTopics(1, "audit-log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	brokers := cluster.ListenAddrs()
	o.audit, err = kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ConsumeTopics("audit-log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(o.audit.Close)

	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.LoadBytes(file, src)
	if err != nil {
		t.Fatal(err)
	}
	httpComp := helixhttp.New(&helixhttp.Options{Transport: dns})
	opts := quiet
	opts.Components = map[string]component.Component{
		"http": httpComp, "https": httpComp,
		"kafka": kafka.New(kafka.Options{Brokers: brokers}),
		"slack": slack.New(&slack.Options{APIURL: o.slack.APIURL()}),
	}
	a, err := app.Build(cfg, opts)
	if err != nil {
		t.Fatalf("build %s: %v", file, err)
	}
	o.app = startBuilt(t, a)
	o.mcp = mcpSession(t, a, "ops-tools")
	return o
}

// call calls tool over MCP and returns its text and isError.
func (o *ops12_2) call(t *testing.T, tool string, args map[string]any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := o.mcp.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("tools/call %s %v: %v", tool, args, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("tools/call %s: %d content parts", tool, len(res.Content))
	}
	return res.Content[0].(*sdk.TextContent).Text, res.IsError
}

// nextAudit waits for the next record on audit-log.
func (o *ops12_2) nextAudit(t *testing.T) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		fs := o.audit.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatal("no audit record arrived on audit-log within 30s")
		}
		for _, e := range fs.Errors() {
			t.Fatalf("audit-log: %v", e.Err)
		}
		var recs []*kgo.Record
		fs.EachRecord(func(r *kgo.Record) { recs = append(recs, r) })
		if len(recs) > 1 {
			t.Fatalf("%d audit records at once, want one per deployment", len(recs))
		}
		if len(recs) == 1 {
			var v map[string]any
			if err := json.Unmarshal(recs[0].Value, &v); err != nil {
				t.Fatalf("audit record %q: %v", recs[0].Value, err)
			}
			return v
		}
	}
}

func jsonOf(t *testing.T, text string) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		t.Fatalf("answer %q is not a JSON object: %v", text, err)
	}
	return v
}

// Spec §12.2 end to end (testdata/spec12_2/orchestration.yaml, the printed YAML with
// the edits its header lists), through a running Helix and real MCP tools/call
// requests: refused requests come back as isError with the script's message and touch
// nothing; a deployment reaches the Kubernetes API as the Deployment JSON, its
// request is audited on Kafka's audit-log, the Slack channel is told, and the caller
// gets {"status": "deployed", …}; check-health says healthy true for a service that
// answers 200 and false for one that answers 503.
func TestSpec12_2EndToEnd(t *testing.T) {
	o := start12_2(t, "testdata/spec12_2/orchestration.yaml")

	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{}, "service name is required"},
		{map[string]any{"service": "api"}, "version is required"},
		{map[string]any{"service": "api", "version": "1.2", "environment": "production"}, "production deployments require approval=true"},
		{map[string]any{"service": "api", "version": "1.2", "environment": "production", "approved": false}, "production deployments require approval=true"},
	} {
		text, isError := o.call(t, "deploy_service", tc.args)
		if !isError || !strings.Contains(text, tc.want) {
			t.Errorf("deploy_service %v: isError=%v %q, want an error with %q", tc.args, isError, text, tc.want)
		}
	}
	if n := len(o.k8s.deployments()); n != 0 {
		t.Fatalf("%d refused requests reached Kubernetes", n)
	}

	for _, args := range []map[string]any{
		{"service": "api", "version": "1.2"},
		{"service": "billing", "version": "2.0.1", "environment": "production", "approved": true},
	} {
		text, isError := o.call(t, "deploy_service", args)
		want := map[string]any{"status": "deployed", "service": args["service"], "version": args["version"]}
		if isError || !reflect.DeepEqual(jsonOf(t, text), want) {
			t.Fatalf("deploy_service %v: isError=%v %s, want %v", args, isError, text, want)
		}
		deps := o.k8s.deployments()
		wantDep := map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": args["service"]},
			"spec": map[string]any{"image": args["service"].(string) + ":" + args["version"].(string)}}
		if len(deps) == 0 || !reflect.DeepEqual(deps[len(deps)-1], wantDep) {
			t.Fatalf("Kubernetes received %v, want %v last", deps, wantDep)
		}
		if got := o.nextAudit(t); !reflect.DeepEqual(got, args) {
			t.Errorf("audit record %v, want the validated request %v", got, args)
		}
		// The notice is the Kubernetes API's answer (the payload at the wiretap), shown
		// as JSON in a code block.
		m := o.slack.Next(t)
		if m.Channel != "ops-channel" || !strings.HasPrefix(m.Text, "```\n{") ||
			!strings.Contains(m.Text, `"name": "`+args["service"].(string)+`"`) || !strings.Contains(m.Text, `"uid": "0b7c9d51`) {
			t.Errorf("Slack received %+v", m)
		}
	}
	if n := len(o.k8s.deployments()); n != 2 {
		t.Errorf("Kubernetes received %d deployments, want 2", n)
	}

	for _, tc := range []struct {
		service string
		healthy bool
	}{{"api", true}, {"billing", false}} {
		text, isError := o.call(t, "check_health", map[string]any{"service": tc.service})
		if want := map[string]any{"service": tc.service, "healthy": tc.healthy}; isError || !reflect.DeepEqual(jsonOf(t, text), want) {
			t.Errorf("check_health %s: isError=%v %s, want %v", tc.service, isError, text, want)
		}
	}
	// A service whose name does not resolve cannot be asked at all: the call fails and
	// says why (the spec's script only looks at response codes).
	text, isError := o.call(t, "check_health", map[string]any{"service": "ghost"})
	if !isError || !strings.Contains(text, "ghost.default.svc") || !strings.Contains(text, "no such host") {
		t.Errorf("check_health ghost: isError=%v %q", isError, text)
	}
}

// The §12.2 YAML as printed (testdata/spec12_2/printed.yaml; only the MCP address
// changed) loads and runs up to its last steps, which read payload["service"] after
// an http:// target replaced the payload: deploy-service makes the deployment, audits
// it and tells Slack, then fails; check-health fails for a healthy service (the
// answer has no "service") and, since http:// fails on a non-2xx answer, for an
// unhealthy one with that answer. TestSpec12_2EndToEnd runs the edited YAML.
func TestSpec12_2AsPrinted(t *testing.T) {
	o := start12_2(t, "testdata/spec12_2/printed.yaml")

	text, isError := o.call(t, "deploy_service", map[string]any{"service": "api"})
	if !isError || !strings.Contains(text, "version is required") {
		t.Errorf("deploy_service without version: isError=%v %q", isError, text)
	}
	args := map[string]any{"service": "api", "version": "1.2"}
	text, isError = o.call(t, "deploy_service", args)
	if !isError || !strings.Contains(text, `key "service" not in dict`) {
		t.Errorf("deploy_service as printed: isError=%v %q, want the last transform's failure", isError, text)
	}
	if deps := o.k8s.deployments(); len(deps) != 1 {
		t.Errorf("Kubernetes received %v", deps)
	}
	if got := o.nextAudit(t); !reflect.DeepEqual(got, args) {
		t.Errorf("audit record %v", got)
	}
	if m := o.slack.Next(t); !strings.Contains(m.Text, `"kind": "Deployment"`) {
		t.Errorf("Slack received %+v", m)
	}

	text, isError = o.call(t, "check_health", map[string]any{"service": "api"})
	if !isError || !strings.Contains(text, `key "service" not in dict`) {
		t.Errorf("check_health api as printed: isError=%v %q", isError, text)
	}
	text, isError = o.call(t, "check_health", map[string]any{"service": "billing"})
	if !isError || !strings.Contains(text, "HTTP 503 Service Unavailable") || !strings.Contains(text, "billing.default.svc:8080") {
		t.Errorf("check_health billing as printed: isError=%v %q", isError, text)
	}
}
