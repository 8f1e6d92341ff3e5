package starlang

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// specCase is one `starlang:` snippet from the Helix documentation (the MCP guide and
// the mcp:// component page), copied verbatim, with an input and what it must produce.
type specCase struct {
	name string
	src  string
	in   input

	want        any            // Result.Value when wantHas
	wantHas     bool           // the snippet ends in an expression with a value
	wantBody    any            // exchange body after write(), when wantWritten
	wantWritten bool           //
	wantGlobals map[string]any // subset of Result.Globals, for enrich snippets
	wantFail    string         // the *FailError message, if the snippet must fail
	wantBool    *bool          // EvalBool result, for choice conditions
}

func ptr[T any](v T) *T { return &v }

var specCases = []specCase{
	{
		name: "search tool stub",
		src: `q = payload["query"]
limit = payload.get("limit", 10)
write({"results": [], "total": 0}, "application/json")
`,
		in:          input{body: map[string]any{"query": "helix"}},
		wantWritten: true,
		wantBody:    map[string]any{"results": []any{}, "total": int64(0)},
		wantGlobals: map[string]any{"q": "helix", "limit": int64(10)},
	},
	{
		name: "greet",
		src: `name = payload.get("name", "World")
"Hello, " ++ name ++ "!"
`,
		in:      input{body: map[string]any{"name": "Ada"}},
		want:    "Hello, Ada!",
		wantHas: true,
	},
	{
		name: "greet default",
		src: `name = payload.get("name", "World")
"Hello, " ++ name ++ "!"
`,
		in:      input{body: map[string]any{}},
		want:    "Hello, World!",
		wantHas: true,
	},
	{
		name: "calculate tax",
		src: `amount = float(payload.get("amount", 0))
rate = float(payload.get("rate", 0.1))
str(amount * rate)
`,
		in:      input{body: map[string]any{"amount": 200, "rate": 0.25}},
		want:    "50.0",
		wantHas: true,
	},
	{
		name:    "prepare code formatting arguments",
		src:     "{\"code\": payload, \"language\": \"python\"}\n",
		in:      input{body: "print( 1 )"},
		want:    map[string]any{"code": "print( 1 )", "language": "python"},
		wantHas: true,
	},
	{
		name:    "dynamic tool name",
		src:     "\"analyze-\" ++ headers.get(\"dataType\", \"generic\")\n",
		in:      input{headers: map[string]any{"dataType": "sales"}},
		want:    "analyze-sales",
		wantHas: true,
	},
	{
		name:    "dynamic tool name default",
		src:     "\"analyze-\" ++ headers.get(\"dataType\", \"generic\")\n",
		in:      input{},
		want:    "analyze-generic",
		wantHas: true,
	},
	{
		name:        "return order as json",
		src:         "write(payload, \"application/json\")\n",
		in:          input{body: []any{map[string]any{"id": "ORD-12345", "total": 9.5}}},
		wantWritten: true,
		wantBody:    []any{map[string]any{"id": "ORD-12345", "total": 9.5}},
	},
	{
		name: "non-negative check fails",
		src: `if payload.get("value", 0) < 0:
    fail("Value must be non-negative")
payload
`,
		in:       input{body: map[string]any{"value": -1}},
		wantFail: "Value must be non-negative",
	},
	{
		name: "non-negative check passes",
		src: `if payload.get("value", 0) < 0:
    fail("Value must be non-negative")
payload
`,
		in:      input{body: map[string]any{"value": 3}},
		want:    map[string]any{"value": int64(3)},
		wantHas: true,
	},
	{
		name:     "mcp error condition",
		src:      "headers.get(\"HelixMcpIsError\", \"false\") == \"true\"\n",
		in:       input{headers: map[string]any{"HelixMcpIsError": "true"}},
		wantBool: ptr(true),
	},
	{
		name:     "mcp success condition",
		src:      "headers.get(\"HelixMcpIsError\", \"false\") == \"true\"\n",
		in:       input{},
		wantBool: ptr(false),
	},
	{
		name: "query customers",
		src: `field = payload.get("field", "name")
limit = payload.get("limit", 10)
search = payload.get("search", "")
{
  "query": "SELECT id, name, email, created_at FROM customers WHERE " ++ field ++ " ILIKE $1 LIMIT $2",
  "params": ["%" ++ search ++ "%", limit]
}
`,
		in: input{body: map[string]any{"search": "ada", "limit": 5}},
		want: map[string]any{
			"query":  "SELECT id, name, email, created_at FROM customers WHERE name ILIKE $1 LIMIT $2",
			"params": []any{"%ada%", int64(5)},
		},
		wantHas: true,
	},
	{
		name:        "write query result",
		src:         "write(payload, \"application/json\")\n",
		in:          input{body: []any{map[string]any{"id": 1, "name": "Ada"}}},
		wantWritten: true,
		wantBody:    []any{map[string]any{"id": int64(1), "name": "Ada"}},
	},
	deployValidation("missing service", map[string]any{"version": "1.2"}, "service name is required"),
	deployValidation("missing version", map[string]any{"service": "api"}, "version is required"),
	deployValidation("production without approval", map[string]any{"service": "api", "version": "1.2", "environment": "production"}, "production deployments require approval=true"),
	{
		name:    "deploy validation passes",
		src:     deploySrc,
		in:      input{body: map[string]any{"service": "api", "version": "1.2", "environment": "production", "approved": true}},
		want:    map[string]any{"service": "api", "version": "1.2", "environment": "production", "approved": true},
		wantHas: true,
	},
	{
		name: "kubernetes deployment",
		src: `{
  "apiVersion": "apps/v1",
  "kind": "Deployment",
  "metadata": {"name": payload["service"]},
  "spec": {"image": payload["service"] ++ ":" ++ payload["version"]}
}
`,
		in: input{body: map[string]any{"service": "api", "version": "1.2"}},
		want: map[string]any{
			"apiVersion": "apps/v1",
			"kind":       "Deployment",
			"metadata":   map[string]any{"name": "api"},
			"spec":       map[string]any{"image": "api:1.2"},
		},
		wantHas: true,
	},
	{
		name:        "deployed status",
		src:         "write({\"status\": \"deployed\", \"service\": payload[\"service\"], \"version\": payload[\"version\"]}, \"application/json\")\n",
		in:          input{body: map[string]any{"service": "api", "version": "1.2"}},
		wantWritten: true,
		wantBody:    map[string]any{"status": "deployed", "service": "api", "version": "1.2"},
	},
	{
		name: "health url",
		src: `service = payload.get("service", "")
{"url": "http://" ++ service ++ ".default.svc:8080/health"}
`,
		in:      input{body: map[string]any{"service": "billing"}},
		want:    map[string]any{"url": "http://billing.default.svc:8080/health"},
		wantHas: true,
	},
	{
		name:        "health result",
		src:         "write({\"service\": payload[\"service\"], \"healthy\": response_code == 200}, \"application/json\")\n",
		in:          input{body: `{"service": "billing"}`, headers: map[string]any{"Content-Type": "application/json", "HelixHttpResponseCode": 200}},
		wantWritten: true,
		wantBody:    map[string]any{"service": "billing", "healthy": true},
	},
	{
		name: "categorize ticket",
		src: `{
  "text": payload["subject"] ++ "\n" ++ payload["payload"],
  "categories": ["billing", "technical", "account", "feature-request", "other"]
}
`,
		in: input{body: map[string]any{"subject": "Refund", "payload": "I was charged twice"}},
		want: map[string]any{
			"text":       "Refund\nI was charged twice",
			"categories": []any{"billing", "technical", "account", "feature-request", "other"},
		},
		wantHas: true,
	},
	{name: "billing route", src: "\"billing\" in payload\n", in: input{body: "billing"}, wantBool: ptr(true)},
	{name: "technical route", src: "\"technical\" in payload\n", in: input{body: "billing"}, wantBool: ptr(false)},
	{
		name: "research report",
		src: `results = payload  # list of 3 results
report = "# Research Report\n\n"
for i, r in enumerate(results):
    report = report ++ "## Source " ++ str(i+1) ++ "\n" ++ str(r) ++ "\n\n"
report
`,
		in:      input{body: []any{"alpha", "beta", "gamma"}},
		want:    "# Research Report\n\n## Source 1\nalpha\n\n## Source 2\nbeta\n\n## Source 3\ngamma\n\n",
		wantHas: true,
	},
	{
		name:        "rest proxy result",
		src:         `write(payload, "application/json")`,
		in:          input{body: `{"userId": 7}`, headers: map[string]any{"Content-Type": "application/json"}},
		wantWritten: true,
		wantBody:    map[string]any{"userId": int64(7)},
	},
	invoiceValidation("missing field", map[string]any{"customerId": "c1", "currency": "USD"}, "Missing required field: items"),
	invoiceValidation("bad currency", map[string]any{"customerId": "c1", "items": []any{}, "currency": "JPY"}, "Unsupported currency: JPY"),
	{
		name: "invoice total",
		src:  invoiceSrc,
		in: input{body: map[string]any{"customerId": "c1", "currency": "EUR", "items": []any{
			map[string]any{"price": 10, "qty": 2},
			map[string]any{"price": 2.5},
		}}},
		want: map[string]any{"customerId": "c1", "currency": "EUR", "total": 22.5, "items": []any{
			map[string]any{"price": int64(10), "qty": int64(2)},
			map[string]any{"price": 2.5},
		}},
		wantHas:     true,
		wantGlobals: map[string]any{"total": 22.5},
	},
	{
		name: "invoice confirmation",
		src: `write({
  "invoiceId": payload["id"],
  "total": payload["total"],
  "currency": payload["currency"],
  "status": "created"
}, "application/json")
`,
		in:          input{body: map[string]any{"id": 42, "total": 22.5, "currency": "EUR"}},
		wantWritten: true,
		wantBody:    map[string]any{"invoiceId": int64(42), "total": 22.5, "currency": "EUR", "status": "created"},
	},
	{
		name: "csv path required",
		src: `path = payload.get("filePath", "")
if not path:
    fail("filePath is required")
{"path": path}
`,
		in:       input{body: map[string]any{}},
		wantFail: "filePath is required",
	},
	{
		name: "csv path",
		src: `path = payload.get("filePath", "")
if not path:
    fail("filePath is required")
{"path": path}
`,
		in:      input{body: map[string]any{"filePath": "/data/x.csv"}},
		want:    map[string]any{"path": "/data/x.csv"},
		wantHas: true,
	},
	{
		// The guide's snippet reads headers_list, which nothing defines: it only runs
		// when an earlier step set an exchange variable of that name.
		name: "csv statistics",
		src: `lines = payload.strip().split("\n")
headers = lines[0].split(",")
rows = sizeOf(lines) - 1
write({
  "fileName": headers_list,
  "columns": sizeOf(headers_list),
  "rows": rows,
  "headers": headers,
  "sample": lines[1] if rows > 0 else ""
}, "application/json")
`,
		in:          input{body: "a,b,c\n1,2,3\n4,5,6\n", vars: map[string]any{"headers_list": []any{"a", "b", "c"}}},
		wantWritten: true,
		wantBody: map[string]any{
			"fileName": []any{"a", "b", "c"},
			"columns":  int64(3),
			"rows":     int64(2),
			"headers":  []any{"a", "b", "c"},
			"sample":   "1,2,3",
		},
	},
	{
		name:        "onboarding enrich",
		src:         "accountId = payload[\"accountId\"]\n",
		in:          input{body: map[string]any{"accountId": "acc-9", "email": "a@example.com"}},
		wantGlobals: map[string]any{"accountId": "acc-9"},
	},
	{
		name:    "welcome email",
		src:     "{\"to\": payload[\"email\"], \"template\": \"welcome\", \"accountId\": payload[\"accountId\"]}\n",
		in:      input{body: map[string]any{"accountId": "acc-9", "email": "a@example.com"}},
		want:    map[string]any{"to": "a@example.com", "template": "welcome", "accountId": "acc-9"},
		wantHas: true,
	},
	{
		name:    "provision with enriched variable",
		src:     "{\"accountId\": accountId, \"plan\": payload.get(\"plan\", \"free\")}\n",
		in:      input{body: map[string]any{"sent": true}, vars: map[string]any{"accountId": "acc-9"}},
		want:    map[string]any{"accountId": "acc-9", "plan": "free"},
		wantHas: true,
	},
	{
		name: "onboarding summary",
		src: `write({
  "status": "onboarding_complete",
  "accountId": accountId,
  "steps": ["account_created", "welcome_sent", "resources_provisioned"]
}, "application/json")
`,
		in:          input{vars: map[string]any{"accountId": "acc-9"}},
		wantWritten: true,
		wantBody:    map[string]any{"status": "onboarding_complete", "accountId": "acc-9", "steps": []any{"account_created", "welcome_sent", "resources_provisioned"}},
	},
	// The mcp:// component page.
	{
		name:    "search arguments",
		src:     `{ "query": payload, "limit": 5 }`,
		in:      input{body: "vector databases"},
		want:    map[string]any{"query": "vector databases", "limit": int64(5)},
		wantHas: true,
	},
	{
		name:    "tool from header",
		src:     `header("X-Intent")`,
		in:      input{headers: map[string]any{"X-Intent": "summarize"}},
		want:    "summarize",
		wantHas: true,
	},
	{
		name:    "research query",
		src:     `{ "query": payload }`,
		in:      input{body: "helix"},
		want:    map[string]any{"query": "helix"},
		wantHas: true,
	},
	{
		// An MCP tool result is text, often JSON text; it must stay a string here.
		name:    "summarize prompt",
		src:     `"Summarize: " ++ payload`,
		in:      input{body: `{"hits": 2}`},
		want:    `Summarize: {"hits": 2}`,
		wantHas: true,
	},
}

const deploySrc = `service = payload.get("service", "")
version = payload.get("version", "")
env = payload.get("environment", "staging")
if not service:
    fail("service name is required")
if not version:
    fail("version is required")
if env == "production" and not payload.get("approved", False):
    fail("production deployments require approval=true")
payload
`

func deployValidation(name string, body map[string]any, msg string) specCase {
	return specCase{name: "deploy validation: " + name, src: deploySrc, in: input{body: body}, wantFail: msg}
}

const invoiceSrc = `required = ["customerId", "items", "currency"]
for field in required:
    if field not in payload:
        fail("Missing required field: " ++ field)
if payload["currency"] not in ["USD", "EUR", "GBP"]:
    fail("Unsupported currency: " ++ payload["currency"])
total = sum([item.get("price", 0) * item.get("qty", 1) for item in payload["items"]])
payload["total"] = total
payload
`

func invoiceValidation(name string, body map[string]any, msg string) specCase {
	return specCase{name: "invoice validation: " + name, src: invoiceSrc, in: input{body: body}, wantFail: msg}
}

func TestSpecSnippets(t *testing.T) {
	for _, tc := range specCases {
		t.Run(tc.name, func(t *testing.T) {
			// Column 13: the guide indents block scalars by 12 spaces.
			s, err := Compile("helix.yaml", 100, 13, tc.src, nil)
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			ex := tc.in.exchange()
			if tc.wantBool != nil {
				got, err := s.EvalBool(context.Background(), ex)
				if err != nil {
					t.Fatalf("EvalBool: %v", err)
				}
				if got != *tc.wantBool {
					t.Errorf("EvalBool = %v, want %v", got, *tc.wantBool)
				}
				return
			}
			res, err := s.Eval(context.Background(), ex)
			if tc.wantFail != "" {
				var fe *FailError
				if !errors.As(err, &fe) || fe.Msg != tc.wantFail {
					t.Fatalf("err = %v, want *FailError %q", err, tc.wantFail)
				}
				if !strings.HasPrefix(fe.Pos, "helix.yaml:1") {
					t.Errorf("fail position %q is not in the YAML file", fe.Pos)
				}
				return
			}
			if err != nil {
				t.Fatalf("Eval: %v", err)
			}
			if res.HasValue != tc.wantHas || !reflect.DeepEqual(res.Value, tc.want) {
				t.Errorf("value = %#v (HasValue %v), want %#v (HasValue %v)", res.Value, res.HasValue, tc.want, tc.wantHas)
			}
			if res.Written != tc.wantWritten {
				t.Errorf("Written = %v, want %v", res.Written, tc.wantWritten)
			}
			if tc.wantWritten {
				if got := ex.In().Body(); !reflect.DeepEqual(got, tc.wantBody) {
					t.Errorf("body = %#v, want %#v", got, tc.wantBody)
				}
				if ct := ex.In().Header("Content-Type"); ct != "application/json" {
					t.Errorf("Content-Type = %v, want application/json", ct)
				}
			}
			for k, want := range tc.wantGlobals {
				if got, ok := res.Globals[k]; !ok || !reflect.DeepEqual(got, want) {
					t.Errorf("Globals[%q] = %#v, want %#v (all globals %v)", k, got, want, res.Globals)
				}
			}
		})
	}
}

// TestSpecCSVSnippetWithoutVariable pins the behaviour of the guide's CSV recipe as
// written: headers_list is defined nowhere, so the script is reported as using an
// undefined name, at its position in the YAML file.
func TestSpecCSVSnippetWithoutVariable(t *testing.T) {
	var csv specCase
	for _, tc := range specCases {
		if tc.name == "csv statistics" {
			csv = tc
		}
	}
	s, err := Compile("helix.yaml", 1313, 13, csv.src, nil)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	_, err = s.Eval(context.Background(), input{body: "a,b\n1,2"}.exchange())
	if err == nil || !strings.HasPrefix(err.Error(), "helix.yaml:1317:27: undefined: headers_list") {
		t.Errorf("err = %v, want helix.yaml:1317:27: undefined: headers_list", err)
	}
}
