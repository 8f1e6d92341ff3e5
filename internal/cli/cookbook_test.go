package cli

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/agent/agenttest"
	"github.com/arvenza/helix/internal/component/kafka/kafkatest"
	"github.com/arvenza/helix/internal/component/slack/slacktest"
	"github.com/arvenza/helix/internal/testtools"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The recipes of docs/cookbook.md are files in examples/; each test below runs one as
// its header says, against a real PostgreSQL (HELIX_POSTGRES_URL), an in-process Kafka
// (kfake) and HTTP fakes speaking Anthropic's and Slack's wire formats.

const ordersTable = `CREATE TABLE orders (id serial PRIMARY KEY, customer text NOT NULL,
	amount numeric(12,2) NOT NULL, created_at timestamptz DEFAULT now())`

// cookbookDatabase creates a fresh database with the recipes' orders table and points
// the PG* variables the recipes read at it.
func cookbookDatabase(t *testing.T) string {
	t.Helper()
	dsn := testtools.PostgresDatabase(t)
	testtools.PostgresExec(t, dsn, ordersTable)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	password, _ := u.User.Password()
	t.Setenv("PGHOST", u.Hostname())
	t.Setenv("PGPORT", u.Port())
	t.Setenv("PGDATABASE", strings.TrimPrefix(u.Path, "/"))
	t.Setenv("PGUSER", u.User.Username())
	t.Setenv("PGPASSWORD", password)
	t.Setenv("PGSSLMODE", "disable")
	return dsn
}

func post(t *testing.T, url, contentType, body string) (int, string) {
	t.Helper()
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Post(url, contentType, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Recipe: webhook → PostgreSQL → MCP tool. The webhook records an order (the id comes
// back from RETURNING), list_orders finds it over MCP, record_order refuses a negative
// amount as a tool error.
func TestCookbookWebhookPostgres(t *testing.T) {
	cookbookDatabase(t)
	webhook := freeLocalPort(t, "COOKBOOK_WEBHOOK_PORT")
	mcpAddr := freeLocalPort(t, "COOKBOOK_DB_MCP_PORT")
	runExample(t, []string{"../../examples/cookbook-webhook-postgres.yaml"}, webhook, mcpAddr)

	if status, body := post(t, "http://"+webhook+"/orders", "application/json", `{"customer":"ada","amount":59.9}`); status != 200 || body != `{"id":1,"status":"recorded"}` {
		t.Errorf("POST /orders = %d %s", status, body)
	}
	code, out, errOut := execute(t, "mcp", "call", mcpAddr, "record_order", "customer=ada", "amount=12")
	if code != ExitOK || !strings.Contains(out, `"id":2`) {
		t.Errorf("record_order: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = execute(t, "mcp", "call", mcpAddr, "list_orders", "customer=ada")
	if code != ExitOK || strings.TrimSpace(out) != `{"orders":[{"amount":59.9,"customer":"ada","id":1},{"amount":12,"customer":"ada","id":2}]}` {
		t.Errorf("list_orders: exit %d\n%s%s", code, out, errOut)
	}
	code, _, errOut = execute(t, "mcp", "call", mcpAddr, "record_order", "customer=bob", "amount=-1")
	if code != 1 || !strings.Contains(errOut, "amount must be positive") {
		t.Errorf("record_order with a negative amount: exit %d, stderr %q", code, errOut)
	}
}

// waitForStart waits until a running example logged that it started: a file that
// listens on no port.
func waitForStart(t *testing.T, run *runningExample) {
	t.Helper()
	eventually(t, 30*time.Second, func() string {
		if strings.Contains(run.stderr.String(), "helix started") {
			return ""
		}
		return "helix did not start:\n" + run.stderr.String()
	})
}

// Recipe: Kafka router. A large order goes to orders-review, a French one to orders-eu
// (with its region added and its key kept), a Canadian one to orders-other, and a
// record that is not an order to orders-dead.
func TestCookbookKafkaRouter(t *testing.T) {
	brokers := kafkatest.Brokers(t)
	kafkatest.EnsureTopics(t, brokers, "orders", "orders-review", "orders-eu", "orders-other", "orders-dead")
	t.Setenv("KAFKA_BROKERS", strings.Join(brokers, ","))
	review, eu := kafkatest.Read(t, brokers, "orders-review"), kafkatest.Read(t, brokers, "orders-eu")
	other, dead := kafkatest.Read(t, brokers, "orders-other"), kafkatest.Read(t, brokers, "orders-dead")

	waitForStart(t, runExample(t, []string{"../../examples/cookbook-kafka-router.yaml"}))
	kafkatest.Produce(t, brokers,
		&kgo.Record{Topic: "orders", Key: []byte("cust-1"), Value: []byte(`{"id": "o-1", "amount": 25, "country": "FR"}`)},
		&kgo.Record{Topic: "orders", Key: []byte("cust-2"), Value: []byte(`{"id": "o-2", "amount": 4000, "country": "DE"}`)},
		&kgo.Record{Topic: "orders", Key: []byte("cust-3"), Value: []byte(`{"id": "o-3", "amount": 10, "country": "CA"}`)},
		&kgo.Record{Topic: "orders", Key: []byte("cust-4"), Value: []byte(`hello`)},
	)
	if rec := eu.Next(t); string(rec.Key) != "cust-1" || string(rec.Value) != `{"amount":25,"country":"FR","id":"o-1","region":"eu"}` {
		t.Errorf("orders-eu got %s %s", rec.Key, rec.Value)
	}
	if rec := review.Next(t); !strings.Contains(string(rec.Value), `"id":"o-2"`) {
		t.Errorf("orders-review got %s", rec.Value)
	}
	if rec := other.Next(t); !strings.Contains(string(rec.Value), `"region":"other"`) {
		t.Errorf("orders-other got %s", rec.Value)
	}
	if rec := dead.Next(t); string(rec.Value) != "hello" {
		t.Errorf("orders-dead got %s", rec.Value)
	}
}

// Recipe: an agent with tools. Against a fake speaking Anthropic's Messages API, the
// agent calls order-status before it answers, over HTTP and as an MCP tool, with the
// model, key and tools the file gives it.
func TestCookbookAgentTools(t *testing.T) {
	model := agenttest.NewAnthropicFunc(t, func(r agenttest.Request) agenttest.Reply {
		if len(r.ToolResults) == 0 {
			return agenttest.Reply{Calls: []agenttest.Call{{ID: "t1", Name: "order_status", Args: `{"order_id":"A-1001"}`}}}
		}
		return agenttest.Reply{Text: "order-status says " + r.ToolResults[0].Text}
	})
	t.Setenv("ANTHROPIC_BASE_URL", model.BaseURL())
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-cookbook")
	t.Setenv("ANTHROPIC_MODEL", "cookbook-model")
	httpAddr := freeLocalPort(t, "COOKBOOK_AGENT_HTTP_PORT")
	mcpAddr := freeLocalPort(t, "COOKBOOK_AGENT_MCP_PORT")
	runExample(t, []string{"../../examples/cookbook-agent-tools.yaml"}, httpAddr, mcpAddr)

	if status, body := post(t, "http://"+httpAddr+"/support", "text/plain", "Where is my order A-1001?"); status != 200 || !strings.Contains(body, `"status":"shipped"`) {
		t.Errorf("POST /support = %d %s", status, body)
	}
	code, out, errOut := execute(t, "mcp", "call", mcpAddr, "support", "message=Where is my order A-1001?")
	if code != ExitOK || !strings.Contains(out, `"eta":"2026-03-07"`) {
		t.Errorf("mcp call support: exit %d\n%s%s", code, out, errOut)
	}
	reqs := model.Requests()
	if len(reqs) != 4 {
		t.Fatalf("the model got %d requests, want 4 (two runs of two turns)", len(reqs))
	}
	if reqs[0]["model"] != "cookbook-model" || !strings.Contains(fmt.Sprint(reqs[0]["tools"]), "name:order_status") {
		t.Errorf("first request: model %v, tools %v", reqs[0]["model"], reqs[0]["tools"])
	}
	if got := model.Headers()[0]; got.Get("X-Api-Key") != "sk-ant-cookbook" && got.Get("Authorization") != "Bearer sk-ant-cookbook" {
		t.Errorf("the API key is not in the headers %v", got)
	}
}

// Recipe: a scheduled report to Slack. With two recent orders and one older than a
// day, the first firing posts "2 orders, 71.9 in total" to #sales as Block Kit.
func TestCookbookSlackReport(t *testing.T) {
	dsn := cookbookDatabase(t)
	testtools.PostgresExec(t, dsn,
		`INSERT INTO orders (customer, amount) VALUES ('ada', 59.9), ('bob', 12)`,
		`INSERT INTO orders (customer, amount, created_at) VALUES ('old', 1000, now() - interval '3 days')`)
	slack := slacktest.NewServer(t, "xoxb-cookbook")
	t.Setenv("SLACK_BOT_TOKEN", "xoxb-cookbook")
	t.Setenv("SLACK_API_URL", slack.APIURL())
	t.Setenv("REPORT_DELAY", "0s")
	t.Setenv("REPORT_PERIOD", "1h")
	runExample(t, []string{"../../examples/cookbook-slack-report.yaml"})

	m := slack.Next(t)
	if m.Channel != slacktest.ChannelID("sales") && m.Channel != "sales" {
		t.Errorf("posted to %q", m.Channel)
	}
	if m.Text != "Sales of the last 24 hours: 2 orders, 71.9 in total" || len(m.Blocks) != 2 {
		t.Errorf("message %q with %d blocks", m.Text, len(m.Blocks))
	}
}

// cookbookListing matches a recipe's file listing in docs/cookbook.md: the line
// "`examples/NAME.yaml`:" and the YAML block under it.
var cookbookListing = regexp.MustCompile("(?ms)^`(examples/[a-z-]+\\.yaml)`:\n\n```yaml\n(.*?)^```")

// withoutHeader is a file's text after its leading comment block (how to run it), which
// the cookbook tells in prose.
func withoutHeader(text string) string {
	lines := strings.Split(text, "\n")
	i := 0
	for i < len(lines) && (strings.HasPrefix(lines[i], "#") || lines[i] == "") {
		i++
	}
	return strings.Join(lines[i:], "\n")
}

// docs/cookbook.md shows each recipe's file as it is in examples/ (the files the tests
// above run), and every cookbook-*.yaml file has its recipe.
func TestCookbookShowsTheExampleFiles(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/cookbook.md")
	if err != nil {
		t.Fatal(err)
	}
	shown := map[string]bool{}
	for _, m := range cookbookListing.FindAllStringSubmatch(string(doc), -1) {
		shown[m[1]] = true
		file, err := os.ReadFile("../../" + m[1])
		if err != nil {
			t.Errorf("docs/cookbook.md lists %s: %v", m[1], err)
			continue
		}
		if got, want := m[2], withoutHeader(string(file)); strings.TrimSpace(got) != strings.TrimSpace(want) {
			t.Errorf("docs/cookbook.md shows %s differently from the file; paste the file (after its comment header) again", m[1])
		}
	}
	recipes, _ := filepath.Glob("../../examples/cookbook-*.yaml")
	for _, f := range append(recipes, "../../examples/rag.yaml") {
		if name := strings.TrimPrefix(f, "../../"); !shown[name] {
			t.Errorf("docs/cookbook.md has no listing of %s", name)
		}
	}
	if len(shown) != 5 {
		t.Errorf("docs/cookbook.md lists %d recipe files, want 5", len(shown))
	}
}
