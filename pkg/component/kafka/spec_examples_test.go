package kafka_test

import (
	"context"
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

	"github.com/arvenza/helix/pkg/app"
	"github.com/arvenza/helix/pkg/component/kafka/kafkatest"
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
	brokers := kafkatest.Brokers(t)
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
		deadline := time.Now().Add(30 * time.Second)
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
