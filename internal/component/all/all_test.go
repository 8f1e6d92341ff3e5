package all_test

import (
	"context"
	"errors"
	"net/http"
	"sort"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/arvenza/helix/internal/component/all"
	"github.com/arvenza/helix/internal/component/httpserver"
	mcpclient "github.com/arvenza/helix/internal/component/mcp/client"
	mcpserver "github.com/arvenza/helix/internal/component/mcp/server"
	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestSchemeTable(t *testing.T) {
	s := all.Schemes()
	if !sort.SliceIsSorted(s, func(i, j int) bool { return s[i].Scheme < s[j].Scheme }) {
		t.Fatal("Schemes() is not sorted")
	}
	want := map[string]component.Direction{
		"direct": component.Both, "log": component.ProducerOnly, "timer": component.ConsumerOnly,
		"file": component.Both, "http-server": component.ConsumerOnly, "http": component.ProducerOnly,
		"https": component.ProducerOnly, "mcp": component.ProducerOnly, "mcp-server": component.ConsumerOnly,
		"tool": component.Both, "agent": component.Both, "pipeline": component.Both,
	}
	want["postgres"] = component.Both
	if _, leftOut := component.Absent("kafka"); !leftOut { // -tags helix_nokafka
		want["kafka"] = component.Both
	}
	want["slack"] = component.ProducerOnly
	if len(s) != len(want) {
		t.Fatalf("Schemes() has %d entries, want %d", len(s), len(want))
	}
	for scheme, dir := range want {
		info, ok := all.Lookup(scheme)
		if !ok || info.Direction != dir || info.Description == "" {
			t.Errorf("Lookup(%q) = %+v, %v; want direction %v and a description", scheme, info, ok, dir)
		}
	}
	if _, ok := all.Lookup("kafkaa"); ok {
		t.Error("Lookup of an unknown scheme succeeded")
	}
	s[0].Scheme = "mutated"
	if all.Schemes()[0].Scheme == "mutated" {
		t.Error("Schemes() exposes the table itself")
	}
}

// Every spec is well formed, and no scheme is both registered and planned.
func TestSpecsAreWellFormed(t *testing.T) {
	seen := map[string]bool{}
	for _, sp := range all.Specs() {
		if err := sp.Check(); err != nil {
			t.Error(err)
		}
		for _, s := range sp.Schemes() {
			if seen[s] {
				t.Errorf("scheme %s is registered twice", s)
			}
			seen[s] = true
			if m, ok := component.Lookup(s); !ok || m.Spec != sp {
				t.Errorf("Spec(%q) does not return its spec", s)
			}
			if _, ok := component.Absent(s); ok {
				t.Errorf("scheme %s is both registered and planned", s)
			}
		}
	}
	if _, ok := component.Absent("agent"); ok {
		t.Error("agent is still planned")
	}
	if _, ok := component.Lookup("agent"); !ok {
		t.Error("agent has no spec")
	}
}

// The components that declare a spec return it from their Spec method, so that the
// engine and the CLI find it through component.Described.
func TestRegisteredComponentsDescribeThemselves(t *testing.T) {
	hc := engine.NewContext("described")
	all.Register(hc)
	for _, scheme := range hc.Schemes() {
		c, _ := hc.Component(scheme)
		d, ok := c.(component.Described)
		if !ok {
			t.Errorf("%s:// does not implement component.Described", scheme)
			continue
		}
		if sp := component.SpecOf(scheme); d.Spec() != sp {
			t.Errorf("%s:// describes itself with another spec than its registration", scheme)
		}
	}
}

// The three misspellings of the issue, and a wrong type, are refused when the
// endpoint is built (which is what helix validate does), with a did-you-mean.
func TestMisspelledOptionsAreRefused(t *testing.T) {
	hc := engine.NewContext("typos")
	all.Register(hc)
	for raw, want := range map[string]string{
		"timer://tick?peroid=5s":           `unknown option "peroid" (did you mean "period"?)`,
		"log://out?levl=debug":             `unknown option "levl" (did you mean "level"?)`,
		"file:///tmp?fileNam=x":            `unknown option "fileNam" (did you mean "fileName"?)`,
		"timer://tick?period=often":        `option period="often" is not a duration`,
		"http-server://:0/x?maxBodyByte=1": `did you mean "maxBodyBytes"?`,
		"direct://x?timeout=1s":            "direct:// takes no options",
		"tool://x?a=1":                     "tool:// takes no options",
		"http://h/x?timeout=1":             "",
		"http://h/x?q=1&anything=2":        "",
	} {
		_, err := hc.Endpoint(raw)
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", raw, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: got %v, want an error containing %q", raw, err, want)
		}
	}
}

// Every scheme registered on a context behaves as the table says: a consumer-only
// component refuses producers and vice versa, the others accept both.
func TestRegisteredComponentsMatchTable(t *testing.T) {
	hc := engine.NewContext("table")
	all.Register(hc)
	samples := map[string]string{
		"direct": "direct://x", "log": "log://x", "timer": "timer://x", "file": "file://" + t.TempDir(),
		"http-server": "http-server://127.0.0.1:0/x", "http": "http://h/x", "https": "https://h/x", "tool": "tool://t",
		"agent": "agent://a", "pipeline": "pipeline://p",
	}
	samples["postgres"] = "postgres://db:5432/orders"
	if _, leftOut := component.Absent("kafka"); !leftOut { // -tags helix_nokafka
		samples["kafka"] = "kafka://orders"
	}
	samples["slack"] = "slack://ops?token=xoxb-sample"
	for _, scheme := range hc.Schemes() {
		raw, ok := samples[scheme]
		if !ok {
			t.Errorf("scheme %q registered but no sample URI in this test", scheme)
			continue
		}
		info, ok := all.Lookup(scheme)
		if !ok {
			t.Errorf("scheme %q registered but missing from all.Schemes()", scheme)
			continue
		}
		comp, _ := hc.Component(scheme)
		u, err := uri.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		ep, err := comp.CreateEndpoint(u)
		if err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		_, perr := ep.CreateProducer()
		_, cerr := ep.CreateConsumer(component.ProcessorFunc(func(context.Context, *exchange.Exchange) error { return nil }))
		if got := errors.Is(perr, component.ErrConsumerOnly); got != (info.Direction == component.ConsumerOnly) {
			t.Errorf("%s: CreateProducer error %v does not match direction %v", scheme, perr, info.Direction)
		}
		if got := errors.Is(cerr, component.ErrProducerOnly); got != (info.Direction == component.ProducerOnly) {
			t.Errorf("%s: CreateConsumer error %v does not match direction %v", scheme, cerr, info.Direction)
		}
	}
	if len(hc.Schemes()) != len(samples) {
		t.Errorf("registered %v, want the %d schemes of this test", hc.Schemes(), len(samples))
	}
}

// An http-server workflow answering JSON, called by an http:// target of another
// Helix context: method, headers, body, status and failures across the wire.
func TestHTTPRoundTrip(t *testing.T) {
	ctx := context.Background()
	server := engine.NewContext("server")
	all.Register(server)
	if err := server.AddWorkflow(&engine.Workflow{
		ID:      "research",
		FromURI: "http-server://127.0.0.1:0/research",
		Processors: []engine.Processor{engine.ProcessorFunc(func(_ context.Context, ex *exchange.Exchange) error {
			in, _ := ex.In().Body().(map[string]any)
			if in["topic"] == nil {
				return errors.New("topic is required")
			}
			ex.In().SetHeader(exchange.HeaderHTTPResponseCode, 201)
			ex.In().SetHeader("X-Served-By", "research")
			ex.In().SetBody(map[string]any{
				"topic":  in["topic"],
				"method": ex.In().HeaderString(httpserver.HeaderHTTPMethod),
				"auth":   ex.In().HeaderString("Authorization"),
			})
			return nil
		})},
	}); err != nil {
		t.Fatal(err)
	}
	if err := server.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer server.Stop(ctx)
	comp, _ := server.Component("http-server")
	addr, ok := comp.(*httpserver.Component).Addr("127.0.0.1:0")
	if !ok {
		t.Fatal("server not listening")
	}

	client := engine.NewContext("client")
	all.Register(client)
	auth := engine.ProcessorFunc(func(_ context.Context, ex *exchange.Exchange) error {
		ex.In().SetHeader("Authorization", "Bearer abc")
		return nil
	})
	target := "http://" + addr.String() + "/research"
	for id, to := range map[string]string{"ask": target + "?throwExceptionOnFailure=false", "ask-strict": target} {
		if err := client.AddWorkflow(&engine.Workflow{ID: id, FromURI: "direct://" + id, Processors: []engine.Processor{auth}, ToURIs: []string{to}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := client.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer client.Stop(ctx)

	ex := exchange.NewWithBody(exchange.InOut, map[string]any{"topic": "otters"})
	if err := client.Send(ctx, "direct://ask", ex); err != nil {
		t.Fatal(err)
	}
	body, _ := ex.In().Body().(map[string]any)
	if body["topic"] != "otters" || body["method"] != http.MethodPost || body["auth"] != "Bearer abc" {
		t.Fatalf("reply %#v", ex.In().Body())
	}
	if ex.In().Header(exchange.HeaderHTTPResponseCode) != 201 || ex.In().HeaderString("X-Served-By") != "research" {
		t.Fatalf("reply headers %v", ex.In().Headers())
	}

	// A failing server workflow is a 500 with {"error": …}; with
	// throwExceptionOnFailure=false that is data.
	ex = exchange.NewWithBody(exchange.InOut, map[string]any{"nothing": true})
	if err := client.Send(ctx, "direct://ask", ex); err != nil {
		t.Fatal(err)
	}
	body, _ = ex.In().Body().(map[string]any)
	if ex.In().Header(exchange.HeaderHTTPResponseCode) != 500 || !strings.Contains(exchange.Stringify(body["error"]), "topic is required") {
		t.Fatalf("failure reply %d %#v", ex.In().Header(exchange.HeaderHTTPResponseCode), ex.In().Body())
	}
	// … and by default an error.
	err := client.Send(ctx, "direct://ask-strict", exchange.NewWithBody(exchange.InOut, map[string]any{}))
	if err == nil || !strings.Contains(err.Error(), "HTTP 500") || !strings.Contains(err.Error(), "topic is required") {
		t.Fatalf("got %v, want the server's 500 as an error", err)
	}
}

// An endpoint error names the URI with its secret option values hidden.
func TestEndpointErrorsHideSecrets(t *testing.T) {
	hc := engine.NewContext("secrets")
	spec := &component.Spec{Scheme: "vault", Summary: "s", Syntax: "vault://x",
		Options: []component.Option{{Name: "token", Type: component.TypeString, Secret: true, Description: "d"}}}
	hc.AddComponent("vault", describedComponent{spec})
	_, err := hc.Endpoint("vault://x?token=s3cret&tokn=s3cret2") // a misspelled secret option is hidden too
	if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "vault://x?token=***&tokn=***") ||
		!strings.Contains(err.Error(), `did you mean "token"?`) {
		t.Fatalf("got %v", err)
	}
}

type describedComponent struct{ spec *component.Spec }

func (d describedComponent) Spec() *component.Spec { return d.spec }

func (d describedComponent) CreateEndpoint(u *uri.URI) (component.Endpoint, error) {
	_, err := d.spec.Parse(u)
	return nil, err
}

// The components pkg/app registers itself describe themselves with their
// registration's spec too, and their URIs are checked against it.
func TestMCPComponentsDescribeThemselves(t *testing.T) {
	hc := engine.NewContext("mcp-specs")
	for scheme, c := range map[string]component.Component{"mcp": mcpclient.New(), "mcp-server": mcpserver.New(hc)} {
		sp := component.SpecOf(scheme)
		if d, isD := c.(component.Described); sp == nil || !isD || d.Spec() != sp {
			t.Errorf("%s:// does not describe itself with its registered spec", scheme)
		}
		hc.AddComponent(scheme, c)
	}
	for raw, want := range map[string]string{
		"mcp://localhost:1/search?tranport=sse":                  `unknown option "tranport" (did you mean "transport"?)`,
		"mcp-server://127.0.0.1:0?stateles=true":                 `unknown option "stateles" (did you mean "stateless"?)`,
		"mcp://srv/t?transport=stdio&env=TOKEN=s3cret&timeot=1s": `mcp://srv/t?transport=stdio&env=***&timeot=1s: unknown option "timeot"`,
	} {
		_, err := hc.Endpoint(raw)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("%s: got %v, want %q", raw, err, want)
		}
	}
}

// Every option a spec declares is accepted by its component with the documented
// default written out, so the spec and the code cannot drift apart: an option the
// code no longer reads, or a default it refuses, fails here.
func TestSpecDefaultsAreAcceptedByTheComponents(t *testing.T) {
	hc := engine.NewContext("defaults")
	all.Register(hc)
	hc.AddComponent("mcp", mcpclient.New())
	hc.AddComponent("mcp-server", mcpserver.New(hc))
	samples := map[string]string{
		"direct": "direct://x", "log": "log://x", "timer": "timer://x", "file": "file://" + t.TempDir(),
		"http-server": "http-server://127.0.0.1:0/x", "http": "http://h/x", "tool": "tool://t",
		"mcp": "mcp://localhost:1/tool", "mcp-server": "mcp-server://127.0.0.1:0", "agent": "agent://a",
		"pipeline": "pipeline://p",
	}
	samples["postgres"] = "postgres://db/orders"
	if _, leftOut := component.Absent("kafka"); !leftOut { // -tags helix_nokafka
		samples["kafka"] = "kafka://orders"
	}
	t.Setenv("SLACK_BOT_TOKEN", "xoxb-sample") // slack://ops takes its token from there
	samples["slack"] = "slack://ops"
	for _, sp := range all.Specs() {
		base, ok := samples[sp.Scheme]
		if !ok {
			t.Errorf("no sample URI for %s://", sp.Scheme)
			continue
		}
		if _, err := hc.Endpoint(base); err != nil {
			t.Errorf("%s: %v", base, err)
		}
		for _, o := range sp.Options {
			if o.Default == "" {
				continue
			}
			raw := base + "?" + o.Name + "=" + o.Default
			if _, err := hc.Endpoint(raw); err != nil {
				t.Errorf("%s: the documented default is refused: %v", raw, err)
			}
		}
	}
}

// The example URIs of every spec (shown by helix components and in docs/components)
// are valid: they build, or, with per-exchange placeholders, pass CheckTemplate.
func TestSpecExamplesAreValid(t *testing.T) {
	t.Setenv("SLACK_BOT_TOKEN", "xoxb-sample") // slack://ops-channel (spec §12.2) takes its token from there
	hc := engine.NewContext("examples")
	all.Register(hc)
	hc.AddComponent("mcp", mcpclient.New())
	hc.AddComponent("mcp-server", mcpserver.New(hc))
	for _, sp := range all.Specs() {
		if len(sp.Examples) == 0 {
			t.Errorf("%s:// has no example", sp.Scheme)
		}
		for _, ex := range sp.Examples {
			if ex.Description == "" {
				t.Errorf("%s: example without a description", ex.URI)
			}
			if uri.HasPlaceholders(ex.URI) {
				u, err := uri.Parse(ex.URI)
				if err == nil {
					err = sp.CheckTemplate(u)
				}
				if err != nil {
					t.Errorf("%s: %v", ex.URI, err)
				}
				continue
			}
			if _, err := hc.Endpoint(ex.URI); err != nil {
				t.Errorf("%s: %v", ex.URI, err)
			}
		}
	}
}
