package app_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/pkg/app"
	"github.com/arvenza/helix/pkg/exchange"
)

// specDatabase creates a database of its own on the test server (so the spec's table
// names — orders, customers, invoices — never collide between tests) and returns its
// URL; it is dropped when the test ends.
func specDatabase(t *testing.T, setup ...string) string {
	t.Helper()
	db := testtools.PostgresDatabase(t)
	testtools.PostgresExec(t, db, setup...)
	return db
}

// specYAML reads a spec snippet and replaces what a test machine must (hosts, ports,
// credentials, listen addresses); every replaced text must occur, so the file cannot
// drift from what the test believes it runs.
func specYAML(t *testing.T, file string, replace ...string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "spec", file))
	if err != nil {
		t.Fatal(err)
	}
	src := string(b)
	for i := 0; i+1 < len(replace); i += 2 {
		if !strings.Contains(src, replace[i]) {
			t.Fatalf("%s no longer contains %q; update the test", file, replace[i])
		}
		src = strings.ReplaceAll(src, replace[i], replace[i+1])
	}
	return src
}

func startYAML(t *testing.T, src string) *app.App {
	t.Helper()
	a, err := buildYAML(t, src)
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	return startBuilt(t, a)
}

// callTool calls a tool and returns its text and isError.
func callTool(t *testing.T, cs *sdk.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	if len(res.Content) == 0 {
		t.Fatalf("tools/call %s: no content", name)
	}
	return res.Content[0].(*sdk.TextContent).Text, res.IsError
}

// Spec §1: lookup-order runs the SQL the caller sends (operation=query without query=),
// served by the mcps: server backend-tools.
func TestSpecS1LookupOrderOverMCP(t *testing.T) {
	t.Parallel()
	db := specDatabase(t,
		"CREATE TABLE orders (id text PRIMARY KEY, status text, total numeric(10,2))",
		"INSERT INTO orders VALUES ('ORD-12345', 'shipped', 42.50), ('ORD-2', 'new', 10)")
	a := startYAML(t, specYAML(t, "s1_lookup_order.yaml",
		"postgres://db:5432/orders", db,
		`addr: "0.0.0.0:3100"`, `addr: "127.0.0.1:0"`))
	cs := mcpSession(t, a, "backend-tools")
	text, isErr := callTool(t, cs, "lookup_order", map[string]any{
		"query": "SELECT id, status, total FROM orders WHERE id = $1", "params": []any{"ORD-12345"}})
	if isErr || text != `[{"id":"ORD-12345","status":"shipped","total":42.5}]` {
		t.Errorf("lookup_order: isError=%v %s", isErr, text)
	}
	// No SQL, no rows: the tool says what it needs.
	text, isErr = callTool(t, cs, "lookup_order", map[string]any{"orderId": "ORD-12345"})
	if !isErr || !strings.Contains(text, `"query"`) {
		t.Errorf("lookup_order without SQL: isError=%v %s", isErr, text)
	}
}

// Spec §7.2: Claude Desktop starts `helix run helix.yaml`; the tool runs the fixed
// query with :orderId from the call's arguments.
func TestSpecS7_2StdioLookupOrder(t *testing.T) {
	t.Parallel()
	db := specDatabase(t,
		"CREATE TABLE orders (id text PRIMARY KEY, status text, dispatched_on date, expected_on date)",
		"INSERT INTO orders VALUES ('ORD-789', 'shipped', '2026-03-03', '2026-03-07'), ('ORD-12345', 'new', NULL, NULL)")
	file := filepath.Join(t.TempDir(), "helix.yaml")
	if err := os.WriteFile(file, []byte(specYAML(t, "s7_2_stdio_lookup_order.yaml", "postgres://db:5432/orders", db)), 0o600); err != nil {
		t.Fatal(err)
	}
	helix := testtools.HelixBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.Command(helix, "run", file)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "HELIX_MANAGEMENT_ADDR=127.0.0.1:0")
	client := sdk.NewClient(&sdk.Implementation{Name: "claude-desktop-stand-in", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 1 || tools.Tools[0].Name != "lookup_order" || tools.Tools[0].Description != "Look up an order by ID from the database" {
		t.Fatalf("tools: %v %+v", err, tools)
	}
	text, isErr := callTool(t, cs, "lookup_order", map[string]any{"orderId": "ORD-789"})
	if isErr || text != `[{"dispatched_on":"2026-03-03","expected_on":"2026-03-07","id":"ORD-789","status":"shipped"}]` {
		t.Errorf("lookup_order ORD-789: isError=%v %s", isErr, text)
	}
	text, isErr = callTool(t, cs, "lookup_order", map[string]any{"orderId": "ORD-0"})
	if isErr || text != `[]` {
		t.Errorf("unknown order: isError=%v %s", isErr, text)
	}
	text, isErr = callTool(t, cs, "lookup_order", map[string]any{"id": "ORD-789"})
	if !isErr || !strings.Contains(text, ":orderId") {
		t.Errorf("missing orderId: isError=%v %s", isErr, text)
	}
}

const customersSQL = `CREATE TABLE customers (id text PRIMARY KEY, name text, email text, created_at timestamptz, password_hash text)`
const customersRows = `INSERT INTO customers VALUES
	('C-1', 'Ada Lovelace', 'ada@example.com', '2026-01-02T03:04:05Z', 'h1'),
	('C-2', 'Alan Turing', 'alan@example.org', '2026-02-03T04:05:06Z', 'h2'),
	('C-3', 'Grace Hopper', 'grace@example.com', '2026-03-04T05:06:07Z', 'h3')`

// Spec §12.1 over a real MCP tools/call: search by name, email or id; the input
// schema's enum keeps a caller's field to the three columns.
func TestSpecS12_1DatabaseQueryTool(t *testing.T) {
	t.Parallel()
	db := specDatabase(t, customersSQL, customersRows)
	a := startYAML(t, specYAML(t, "s12_1_database_query_tool.yaml",
		"postgres://localhost:5432/mydb", db,
		`addr: "0.0.0.0:3000"`, `addr: "127.0.0.1:0"`))
	cs := mcpSession(t, a, "db-tools")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 1 {
		t.Fatalf("tools: %v %+v", err, tools)
	}
	tool := tools.Tools[0]
	if tool.Description != "Search customers by name, email, or ID" {
		t.Errorf("description %q", tool.Description)
	}
	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"search": "ada"}, `[{"created_at":"2026-01-02T03:04:05Z","email":"ada@example.com","id":"C-1","name":"Ada Lovelace"}]`},
		{map[string]any{"search": "example.com", "field": "email", "limit": 1}, `[{"created_at":"2026-01-02T03:04:05Z","email":"ada@example.com","id":"C-1","name":"Ada Lovelace"}]`},
		{map[string]any{"search": "C-3", "field": "id"}, `[{"created_at":"2026-03-04T05:06:07Z","email":"grace@example.com","id":"C-3","name":"Grace Hopper"}]`},
		{map[string]any{"search": "nobody"}, `[]`},
	} {
		text, isErr := callTool(t, cs, tool.Name, tc.args)
		if isErr || text != tc.want {
			t.Errorf("%v: isError=%v %s\nwant %s", tc.args, isErr, text, tc.want)
		}
	}
	text, isErr := callTool(t, cs, tool.Name, map[string]any{"search": "x", "field": "name ILIKE '%' OR 1=1 --"})
	if !isErr || strings.Contains(text, "ada@example.com") {
		t.Errorf("an injected field got through the input schema: isError=%v %s", isErr, text)
	}
	text, isErr = callTool(t, cs, tool.Name, map[string]any{"field": "name"})
	if !isErr || !strings.Contains(text, "search") {
		t.Errorf("missing search: isError=%v %s", isErr, text)
	}
}

// §12.1's workflow reached without the MCP input schema (direct://, as another
// workflow or an HTTP trigger would): without a guard an injected field widens the
// query; with allowedColumns on the target every injection is refused.
func TestSpecS12_1FieldInjectionAndAllowedColumns(t *testing.T) {
	t.Parallel()
	db := specDatabase(t, customersSQL, customersRows)
	run := func(target string, field string) (any, error) {
		a := startYAML(t, specYAML(t, "s12_1_database_query_tool.yaml",
			"postgres://localhost:5432/mydb?operation=query", target,
			`addr: "0.0.0.0:3000"`, `addr: "127.0.0.1:0"`))
		return request(a, "direct://query-customers", map[string]any{"search": "nobody", "field": field})
	}
	inject := "name ILIKE $1 OR true OR name"
	body, err := run(db+"?operation=query", inject)
	if err != nil || !strings.Contains(string(asBytes(body)), "grace@example.com") {
		t.Errorf("without the guard the injection is expected to widen the result (the user's risk): %v %s", err, asBytes(body))
	}
	guarded := db + "?operation=query&allowedColumns=id,name,email,created_at,customers"
	for _, field := range []string{inject, "password_hash", "name ILIKE '%' --", "(SELECT password_hash FROM customers LIMIT 1)"} {
		body, err := run(guarded, field)
		if err == nil || !strings.Contains(err.Error(), "allowedColumns refuses") {
			t.Errorf("field %q with allowedColumns: %v %s", field, err, asBytes(body))
		}
	}
	body, err = run(guarded, "email")
	if err != nil || !strings.Contains(string(asBytes(body)), "[]") {
		t.Errorf("an allowed field: %v %s", err, asBytes(body))
	}
}

// request sends body to a direct:// workflow and returns the reply body or the failure.
func request(a *app.App, target string, body any) (any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), testtools.StartupBound) // a bound for a hang, not a speed test
	defer cancel()
	ex := exchange.NewWithBody(exchange.InOut, body)
	if err := a.Context().Send(ctx, target, ex); err != nil {
		return nil, err
	}
	if err := ex.Exception(); err != nil {
		return nil, err
	}
	return ex.In().Body(), nil
}

func asBytes(v any) []byte {
	switch b := v.(type) {
	case []byte:
		return b
	case string:
		return []byte(b)
	}
	out, _ := json.Marshal(v)
	return out
}

// Spec §13 Recipe 2 over a real MCP tools/call: the invoice row is inserted and its
// generated id answered; validation failures are tool errors and insert nothing.
func TestSpecRecipe2CreateInvoice(t *testing.T) {
	t.Parallel()
	db := specDatabase(t, `CREATE TABLE invoices (
		id serial PRIMARY KEY, "customerId" text NOT NULL, items jsonb NOT NULL,
		currency text NOT NULL, total numeric(12,2) NOT NULL, created_at timestamptz DEFAULT now())`)
	src := specYAML(t, "s13_recipe2_create_invoice.yaml", "postgres://localhost:5432/billing", db) +
		"\nmcps:\n  - id: billing-tools\n    addr: \"127.0.0.1:0\"\n"
	a := startYAML(t, src)
	cs := mcpSession(t, a, "billing-tools")
	text, isErr := callTool(t, cs, "create_invoice", map[string]any{
		"customerId": "C-1", "currency": "EUR",
		"items": []any{map[string]any{"sku": "A", "price": 19.99, "qty": 3}, map[string]any{"sku": "B", "price": 5}},
	})
	if isErr || text != `{"currency":"EUR","invoiceId":1,"status":"created","total":64.97}` {
		t.Errorf("create_invoice: isError=%v %s", isErr, text)
	}
	text, isErr = callTool(t, cs, "create_invoice", map[string]any{"customerId": "C-2", "currency": "USD", "items": []any{}})
	if isErr || text != `{"currency":"USD","invoiceId":2,"status":"created","total":0}` {
		t.Errorf("second invoice: isError=%v %s", isErr, text)
	}
	for args, want := range map[string]string{
		`{"customerId":"C-1","currency":"EUR"}`:            "Missing required field: items",
		`{"customerId":"C-1","currency":"JPY","items":[]}`: "Unsupported currency: JPY",
	} {
		var m map[string]any
		_ = json.Unmarshal([]byte(args), &m)
		text, isErr := callTool(t, cs, "create_invoice", m)
		if !isErr || !strings.Contains(text, want) {
			t.Errorf("%s: isError=%v %s, want %q", args, isErr, text, want)
		}
	}
	var items string
	rows := startYAML(t, "workflows:\n  - id: check\n    trigger: direct://check\n    steps:\n      - target: "+db+"?query=SELECT+items%3A%3Atext+AS+items,+%22customerId%22,+count(*)+OVER+()+AS+n+FROM+invoices+ORDER+BY+id\n")
	got, err := request(rows, "direct://check", nil)
	if err != nil {
		t.Fatal(err)
	}
	items = string(asBytes(got))
	if !strings.Contains(items, `"n":2`) || !strings.Contains(items, `\"sku\": \"A\"`) || !strings.Contains(items, `"customerId":"C-1"`) {
		t.Errorf("stored invoices: %s", items)
	}
}
