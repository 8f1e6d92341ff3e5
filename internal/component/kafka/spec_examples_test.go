package kafka_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/arvenza/helix/internal/component/kafka/kafkatest"
	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/pkg/app"
	"github.com/arvenza/helix/pkg/exchange"
)

// categorizer is the stub of spec §12.3's external AI server: an MCP server (the
// official go-sdk over Streamable HTTP) with the tool categorize-text, which
// answers with one of the categories it was given, as text.
func categorizer(t *testing.T) (addr string, calls func() []map[string]any) {
	t.Helper()
	srv := sdk.NewServer(&sdk.Implementation{Name: "ai-server", Version: "1"}, nil)
	seen := make(chan map[string]any, 100)
	sdk.AddTool(srv, &sdk.Tool{Name: "categorize-text", Description: "pick the category of a text"},
		func(_ context.Context, _ *sdk.CallToolRequest, in map[string]any) (*sdk.CallToolResult, any, error) {
			seen <- in
			text, _ := in["text"].(string)
			cat := "other"
			switch {
			case strings.Contains(text, "invoice"):
				cat = "billing"
			case strings.Contains(text, "crash"):
				cat = "technical"
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: cat}}}, nil, nil
		})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	return strings.TrimPrefix(hs.URL, "http://"), func() []map[string]any {
		var out []map[string]any
		for {
			select {
			case m := <-seen:
				out = append(out, m)
			default:
				return out
			}
		}
	}
}

// specFile copies a spec example from testdata into a temp dir, replacing the
// given hosts (hosts and ports aside, the YAML is the spec's, as printed).
func specFile(t *testing.T, name string, hosts map[string]string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	for from, to := range hosts {
		if !strings.Contains(text, from) {
			t.Fatalf("%s does not mention %s", name, from)
		}
		text = strings.ReplaceAll(text, from, to)
	}
	return writeFile(t, name, text)
}

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// brokersFile is a second configuration file holding helix.kafka.brokers, so the
// spec's YAML runs unchanged against the test's cluster.
func brokersFile(t *testing.T, brokers []string) string {
	return writeFile(t, "brokers.yaml", brokersYAML(brokers))
}

func brokersYAML(brokers []string) string {
	return "helix:\n  kafka:\n    brokers: [" + strings.Join(brokers, ", ") + "]\n  management:\n    enabled: false\n"
}

func loadApp(files []string) (*app.App, any, error) {
	logger := slog.New(slog.DiscardHandler)
	if os.Getenv("HELIX_TEST_LOG") != "" { // see the Helix logs of a failing test
		logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	a, cfg, err := app.Load(app.Options{Logger: logger}, files...)
	return a, cfg, err
}

func startApp(t *testing.T, files ...string) *app.App {
	t.Helper()
	a, _, err := loadApp(files)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.Start(ctx); err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := a.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return a
}

// TestSpec12_3SmartCategorize runs spec §12.3 as printed: tickets arriving on
// support-tickets are sent to the external MCP tool categorize-text, and the choice
// routes each to billing-tickets, tech-tickets or general-tickets.
func TestSpec12_3SmartCategorize(t *testing.T) {
	t.Parallel()
	brokers := kafkatest.Brokers(t)
	kafkatest.EnsureTopics(t, brokers, "support-tickets", "billing-tickets", "tech-tickets", "general-tickets")
	ai, calls := categorizer(t)
	run := fmt.Sprint(time.Now().UnixNano()) // tells this run's records from a real broker's older ones
	tickets := map[string]struct{ subject, text, topic string }{
		"t1": {"Invoice wrong", "my invoice shows twice the amount", "billing-tickets"},
		"t2": {"App crash", "the app shows a crash on start", "tech-tickets"},
		"t3": {"Hello", "how do I change my avatar", "general-tickets"},
		"t4": {"Second invoice", "another invoice question", "billing-tickets"},
	}
	for id, tk := range tickets {
		kafkatest.Produce(t, brokers, &kgo.Record{Topic: "support-tickets", Key: []byte(id),
			Headers: []kgo.RecordHeader{{Key: "ticket-id", Value: []byte(run + "/" + id)}},
			Value:   fmt.Appendf(nil, `{"subject": %q, "payload": %q}`, tk.subject, tk.text)})
	}
	readers := map[string]*kafkatest.Reader{}
	for _, topic := range []string{"billing-tickets", "tech-tickets", "general-tickets"} {
		readers[topic] = kafkatest.Read(t, brokers, topic)
	}
	startApp(t, specFile(t, "spec-12.3.yaml", map[string]string{"ai-server.internal:8080": ai}), brokersFile(t, brokers))

	want := map[string]int{"billing-tickets": 2, "tech-tickets": 1, "general-tickets": 1}
	for topic, n := range want {
		deadline := time.Now().Add(testtools.StartupBound)
		for {
			var mine []*kgo.Record
			for _, r := range readers[topic].All() {
				if id := header(r, "ticket-id"); strings.HasPrefix(id, run+"/") {
					mine = append(mine, r)
				}
			}
			if len(mine) >= n {
				for _, r := range mine {
					id := strings.TrimPrefix(header(r, "ticket-id"), run+"/")
					if tickets[id].topic != topic {
						t.Errorf("ticket %s went to %s, want %s", id, topic, tickets[id].topic)
					}
					if string(r.Key) != id {
						t.Errorf("ticket %s: key %q, want the input record's key", id, r.Key)
					}
					if cat := string(r.Value); !strings.HasPrefix(topic, map[string]string{"billing": "billing", "technical": "tech", "other": "general"}[cat]) {
						t.Errorf("ticket %s on %s carries the category %q", id, topic, cat)
					}
				}
				if len(mine) > n {
					t.Errorf("%s got %d records, want %d", topic, len(mine), n)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d of %d tickets arrived", topic, len(mine), n)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// The tool got the text the transform built from the JSON record.
	for _, in := range calls() {
		text, _ := in["text"].(string)
		if !strings.Contains(text, "\n") || len(in["categories"].([]any)) != 5 {
			t.Errorf("tool input %v, want the subject and payload joined by a newline and 5 categories", in)
		}
	}
}

func header(r *kgo.Record, name string) string {
	for _, h := range r.Headers {
		if h.Key == name {
			return string(h.Value)
		}
	}
	return ""
}

// TestSpec12_2WiretapToAuditLog runs the Kafka part of spec §12.2: the wiretap
// kafka://deployments?topic=audit-log writes the validated request to the topic
// audit-log (topic= replaces the address), and the workflow goes on with its
// own copy. (The whole §12.2 example, with Slack and a stub Kubernetes API, is
// tested with the slack:// component.)
func TestSpec12_2WiretapToAuditLog(t *testing.T) {
	t.Parallel()
	brokers := kafkatest.Brokers(t)
	kafkatest.EnsureTopics(t, brokers, "audit-log")
	audit := kafkatest.Read(t, brokers, "audit-log")
	yaml := `
workflows:
  - id: deploy-service
    trigger:
      uri: direct://deploy-service
    steps:
      - process:
          starlang: |
            service = payload.get("service", "")
            version = payload.get("version", "")
            if not service:
                fail("service name is required")
            payload

      # Record in audit log
      - wiretap: kafka://deployments?topic=audit-log

      - transform:
          starlang: |
            write({"status": "deployed", "service": payload["service"], "version": payload["version"]}, "application/json")
`
	a := startApp(t, writeFile(t, "helix.yaml", yaml), brokersFile(t, brokers))
	run := fmt.Sprint(time.Now().UnixNano())
	ex := exchange.NewWithBody(exchange.InOut, map[string]any{"service": "api-" + run, "version": "1.2.3"})
	ex.In().SetHeader("X-Request-Id", run)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := a.Context().Send(ctx, "direct://deploy-service", ex); err != nil {
		t.Fatal(err)
	}
	if got := exchange.Stringify(ex.In().Body()); !strings.Contains(got, `"status":"deployed"`) {
		t.Fatalf("reply %s", got)
	}
	for {
		r := audit.Next(t)
		if header(r, "X-Request-Id") != run {
			continue // an older run's record on a real broker
		}
		var m map[string]any
		if err := json.Unmarshal(r.Value, &m); err != nil || m["service"] != "api-"+run || m["version"] != "1.2.3" {
			t.Fatalf("audit-log record %q, want the validated request as JSON", r.Value)
		}
		if r.Topic != "audit-log" {
			t.Fatalf("record on %s", r.Topic)
		}
		return
	}
}
