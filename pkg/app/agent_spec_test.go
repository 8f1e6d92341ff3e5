package app_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"flag"
	"fmt"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/pkg/app"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/agent/agenttest"
	"github.com/arvenza/helix/internal/management"
	"github.com/arvenza/helix/pkg/exchange"
)

// The spec's agent examples, kept as printed in testdata/agent_spec_*.yaml (each with
// a comment header listing the edits its test makes). Every test first builds the
// file unchanged — what `helix validate` does — and then runs it with the edits,
// applied here by string replacement so that each edit is visible in the test.

// agentSpec reads testdata/agent_spec_<name>.yaml with the replacements (pairs of
// old, new; each old text must occur).
func agentSpec(t *testing.T, name string, replace ...string) string {
	t.Helper()
	return specYAML(t, filepath.Join("..", "agent_spec_"+name+".yaml"), replace...)
}

// buildsAsPrinted builds the file unchanged. Building sends nothing and spawns
// nothing, so the printed hosts and commands need not exist.
func buildsAsPrinted(t *testing.T, name string) {
	t.Helper()
	if _, err := buildYAML(t, agentSpec(t, name)); err != nil {
		t.Fatalf("agent_spec_%s.yaml as printed: %v", name, err)
	}
}

// openAIFromEnv points the OpenAI SDK at fake through the variables it reads when
// the configuration has no base_url or api_key (the spec's examples have neither).
func openAIFromEnv(t *testing.T, fake *agenttest.Server) {
	t.Setenv("OPENAI_BASE_URL", fake.BaseURL())
	t.Setenv("OPENAI_API_KEY", "sk-from-env")
	t.Setenv("OPENAI_MODEL", "")
}

// quoteTool answers as a model would that calls tool once and then quotes what it
// returned.
func quoteTool(t *testing.T, tool string, args string) func(agenttest.Request) agenttest.Reply {
	return func(req agenttest.Request) agenttest.Reply {
		if len(req.ToolResults) == 0 {
			if !slices.Contains(req.Tools, tool) {
				t.Errorf("request %d offers %v, not %s", req.N, req.Tools, tool)
			}
			return agenttest.Reply{Calls: []agenttest.Call{{ID: "call_1", Name: tool, Args: args}}}
		}
		r := req.ToolResults[0]
		if r.IsError {
			return agenttest.Reply{Text: "tool failed: " + r.Text}
		}
		return agenttest.Reply{Text: "tool said: " + r.Text}
	}
}

// §1 "Single MCP Server Exposing Agents": the assistant answers its HTTP trigger and,
// through mcps: my-tools, an MCP client.
func TestAgentSpecS1Assistant(t *testing.T) {
	fake := agenttest.NewOpenAIFunc(t, func(req agenttest.Request) agenttest.Reply {
		if req.System != "You are a helpful assistant." {
			t.Errorf("system prompt %q", req.System)
		}
		return agenttest.Reply{Text: "You said: " + req.UserMessage}
	})
	openAIFromEnv(t, fake)
	buildsAsPrinted(t, "s1_assistant")
	a := startYAML(t, agentSpec(t, "s1_assistant",
		"http-server://0.0.0.0:8080/chat", "http-server://127.0.0.1:0/chat",
		`addr: "0.0.0.0:3100"`, `addr: "127.0.0.1:0"`))

	if code, got := post(t, httpBase(t, a, "127.0.0.1:0")+"/chat", `{"message":"Hi over HTTP"}`); code != 200 || got != "You said: Hi over HTTP" {
		t.Fatalf("POST /chat: %d %q", code, got)
	}
	cs := mcpSession(t, a, "my-tools")
	if got := strings.Join(listedNames(t, cs), ","); got != "assistant" {
		t.Fatalf("my-tools lists %s", got)
	}
	if got, isErr := callTool(t, cs, "assistant", map[string]any{"message": "Hi over MCP"}); isErr || got != "You said: Hi over MCP" {
		t.Fatalf("assistant over MCP: %q (isError %v)", got, isErr)
	}
	for i, req := range fake.Requests() {
		if req["model"] != "gpt-4o" {
			t.Errorf("request %d: model %v", i, req["model"])
		}
	}
	for i, h := range fake.Headers() {
		if got := h.Get("Authorization"); got != "Bearer sk-from-env" {
			t.Errorf("request %d: Authorization %q", i, got)
		}
	}
}

// §1 "Tools with Guaranteed Schemas": search answers its transform's JSON; translate's
// agent: step asks the model for structured output in the tool's output schema, and
// the MCP client gets the model's JSON as structured content.
func TestAgentSpecS1Tools(t *testing.T) {
	fake := agenttest.NewOpenAIFunc(t, func(req agenttest.Request) agenttest.Reply {
		return agenttest.Reply{Text: `{"translated": "Hallo Welt", "confidence": 0.93}`}
	})
	openAIFromEnv(t, fake)
	buildsAsPrinted(t, "s1_tools")
	a := startYAML(t, agentSpec(t, "s1_tools", `addr: "0.0.0.0:3100"`, `addr: "127.0.0.1:0"`))
	cs := mcpSession(t, a, "my-tools")

	lt, err := cs.ListTools(callCtx(t), nil)
	if err != nil || len(lt.Tools) != 2 {
		t.Fatalf("tools/list: %v %+v", err, lt)
	}
	for _, tool := range lt.Tools {
		if tool.OutputSchema == nil {
			t.Errorf("%s has no output schema", tool.Name)
		}
	}

	res, err := cs.CallTool(callCtx(t), &sdk.CallToolParams{Name: "search", Arguments: map[string]any{"query": "helix"}})
	if err != nil || res.IsError {
		t.Fatalf("search: %v %+v", err, res)
	}
	if sc, _ := json.Marshal(res.StructuredContent); string(sc) != `{"results":[],"total":0}` {
		t.Errorf("search structured content %s", sc)
	}

	res, err = cs.CallTool(callCtx(t), &sdk.CallToolParams{Name: "translate", Arguments: map[string]any{"text": "Hello world", "target_lang": "de"}})
	if err != nil || res.IsError {
		t.Fatalf("translate: %v %+v", err, res)
	}
	if sc, _ := json.Marshal(res.StructuredContent); string(sc) != `{"confidence":0.93,"translated":"Hallo Welt"}` {
		t.Fatalf("translate structured content %s", sc)
	}
	reqs := fake.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d model requests, want 1", len(reqs))
	}
	format, _ := reqs[0]["response_format"].(map[string]any)
	schema, _ := json.Marshal(format["json_schema"])
	if format["type"] != "json_schema" || !strings.Contains(string(schema), `"translated"`) || !strings.Contains(string(schema), `"confidence"`) {
		t.Errorf("the model was not asked for the output schema: response_format %v", format)
	}
	if msgs, _ := json.Marshal(reqs[0]["messages"]); !strings.Contains(string(msgs), "Hello world") || !strings.Contains(string(msgs), "You are a translator.") {
		t.Errorf("messages %s", msgs)
	}
}

// whoamiMCP is an MCP server whose tool whoami answers with the caller that
// principal (the server's authentication check) found in the request; a request
// principal refuses gets 401. With tlsConfig, it serves HTTPS.
func whoamiMCP(t *testing.T, principal func(*http.Request) string, tlsConfig *tls.Config) string {
	t.Helper()
	const principalHeader = "X-Test-Principal"
	srv := sdk.NewServer(&sdk.Implementation{Name: "whoami", Version: "1"}, nil)
	srv.AddTool(&sdk.Tool{Name: "whoami", Description: "Who the server thinks the caller is", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "you are " + req.Extra.Header.Get(principalHeader)}}}, nil
		})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := principal(r)
		if p == "" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		r.Header.Set(principalHeader, p)
		h.ServeHTTP(w, r)
	}))
	if tlsConfig != nil {
		ts.TLS = tlsConfig
		ts.StartTLS()
	} else {
		ts.Start()
	}
	t.Cleanup(func() {
		ts.Close()
		for ss := range srv.Sessions() {
			_ = ss.Close()
		}
	})
	return ts.URL
}

// clientCredentials is an OAuth2 token endpoint (client credentials grant) that
// remembers the tokens it issued and the scope each was issued for.
type clientCredentials struct {
	id, secret string
	mu         sync.Mutex
	issued     map[string]string // token → scope
}

func (cc *clientCredentials) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil || r.Form.Get("grant_type") != "client_credentials" {
		http.Error(w, `{"error":"unsupported_grant_type"}`, http.StatusBadRequest)
		return
	}
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = r.Form.Get("client_id"), r.Form.Get("client_secret")
	}
	w.Header().Set("Content-Type", "application/json")
	if id != cc.id || secret != cc.secret {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"error":"invalid_client"}`)
		return
	}
	cc.mu.Lock()
	tok := fmt.Sprintf("issued-%d", len(cc.issued)+1)
	cc.issued[tok] = r.Form.Get("scope")
	cc.mu.Unlock()
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": 3600})
}

// scopeOf returns the scope a bearer token was issued for, "" for a token this
// endpoint never issued.
func (cc *clientCredentials) scopeOf(r *http.Request) string {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return ""
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	scope, ok := cc.issued[tok]
	if !ok {
		return ""
	}
	return "client with scope " + scope
}

// mtlsFiles is a test PKI: a CA, a server certificate for 127.0.0.1 and a client
// certificate (CN helix-agent) with its key, the client's side written to files.
type mtlsFiles struct {
	server                    tls.Certificate
	cas                       *x509.CertPool
	certFile, keyFile, caFile string
}

func newMTLSFiles(t *testing.T) *mtlsFiles {
	t.Helper()
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	caKey := newKey()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "agent spec test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	issue := func(serial int64, cn string, usage x509.ExtKeyUsage, ips []net.IP) ([]byte, *ecdsa.PrivateKey) {
		key := newKey()
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}, IPAddresses: ips}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return der, key
	}
	srvDER, srvKey := issue(2, "127.0.0.1", x509.ExtKeyUsageServerAuth, []net.IP{net.ParseIP("127.0.0.1")})
	cliDER, cliKey := issue(3, "helix-agent", x509.ExtKeyUsageClientAuth, nil)
	cliKeyDER, err := x509.MarshalECPrivateKey(cliKey)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, typ string, der []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	m := &mtlsFiles{server: tls.Certificate{Certificate: [][]byte{srvDER}, PrivateKey: srvKey}, cas: x509.NewCertPool()}
	m.cas.AddCert(ca)
	m.certFile = write("client.crt", "CERTIFICATE", cliDER)
	m.keyFile = write("client.key", "EC PRIVATE KEY", cliKeyDER)
	m.caFile = write("ca.crt", "CERTIFICATE", caDER)
	return m
}

// §4.7 "Authenticated MCP Calls", all four forms: each agent (without model:, so
// openai gpt-4o-mini from the environment) calls the tool of an MCP server that
// admits only the credential its auth: block describes, and the model sees who the
// server took the caller for.
func TestAgentSpecS4_7Auth(t *testing.T) {
	cases := []struct {
		name string
		// setup sets the printed variables, starts the server and returns the
		// edits.
		setup func(t *testing.T) (replace []string)
		want  string
		// printedWarn, when set, is the warning building the printed text gives
		// (LINE stands for the line of auth's first key, type:), and startErr what
		// starting it says.
		printedWarn, startErr string
	}{{
		name: "bearer",
		setup: func(t *testing.T) []string {
			t.Setenv("MCP_TOKEN", "tok-bearer-1")
			u := whoamiMCP(t, func(r *http.Request) string {
				if r.Header.Get("Authorization") == "Bearer tok-bearer-1" {
					return "bearer tok-bearer-1"
				}
				return ""
			}, nil)
			return []string{`url: "http://mcp.internal:3100"`, `url: "` + u + `"`}
		},
		want: "tool said: you are bearer tok-bearer-1",
	}, {
		name: "api_key",
		setup: func(t *testing.T) []string {
			t.Setenv("VENDOR_API_KEY", "vendor-key-2")
			u := whoamiMCP(t, func(r *http.Request) string {
				if r.Header.Get("X-API-Key") == "vendor-key-2" && r.Header.Get("Authorization") == "" {
					return "api key vendor-key-2"
				}
				return ""
			}, nil)
			return []string{`url: "https://api.vendor.com/mcp"`, `url: "` + u + `/mcp"`}
		},
		want: "tool said: you are api key vendor-key-2",
	}, {
		name: "oauth2",
		setup: func(t *testing.T) []string {
			t.Setenv("OAUTH_CLIENT_ID", "helix-agent")
			t.Setenv("OAUTH_CLIENT_SECRET", "s3cret")
			cc := &clientCredentials{id: "helix-agent", secret: "s3cret", issued: map[string]string{}}
			tokens := httptest.NewServer(cc)
			t.Cleanup(tokens.Close)
			u := whoamiMCP(t, cc.scopeOf, nil)
			return []string{
				`url: "https://tools.corp.internal/mcp"`, `url: "` + u + `/mcp"`,
				`token_url: "https://auth.corp.internal/token"`, `token_url: "` + tokens.URL + `/token"`,
			}
		},
		want: "tool said: you are client with scope tools:read",
	}, {
		name: "mtls",
		setup: func(t *testing.T) []string {
			pki := newMTLSFiles(t)
			u := whoamiMCP(t, func(r *http.Request) string {
				if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
					return ""
				}
				return "certificate " + r.TLS.PeerCertificates[0].Subject.CommonName
			}, &tls.Config{Certificates: []tls.Certificate{pki.server}, ClientCAs: pki.cas,
				ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12})
			return []string{
				`url: "https://mcp.internal:3100"`, `url: "` + u + `"`,
				`"/certs/client.crt"`, `"` + pki.certFile + `"`,
				`"/certs/client.key"`, `"` + pki.keyFile + `"`,
				`"/certs/ca.crt"`, `"` + pki.caFile + `"`,
			}
		},
		want: "tool said: you are certificate helix-agent",
		// Certificates are often mounted only where Helix runs: the printed file
		// validates with a warning at auth:, and fails at start.
		printedWarn: `helix.yaml:LINE:11: agents[0].tools[0].auth: agent "my-agent": cert_file /certs/client.crt, key_file /certs/client.key, ca_file /certs/ca.crt not found here; the agent fails to start unless it exists where Helix runs`,
		startErr:    `MCP tool entry secure-tools: mcp client https://mcp.internal:3100: auth mtls: load cert_file /certs/client.crt and key_file /certs/client.key: open /certs/client.crt: no such file or directory`,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fake := agenttest.NewOpenAIFunc(t, quoteTool(t, "whoami", `{}`))
			openAIFromEnv(t, fake)
			replace := tc.setup(t)
			file := "s4_7_" + tc.name
			if tc.printedWarn == "" {
				buildsAsPrinted(t, file)
			} else {
				printed := agentSpec(t, file)
				before, _, _ := strings.Cut(printed, "type: mtls")
				want := strings.Replace(tc.printedWarn, "LINE", strconv.Itoa(strings.Count(before, "\n")+1), 1)
				cfg, err := config.LoadBytes("helix.yaml", []byte(printed))
				if err != nil {
					t.Fatal(err)
				}
				a, err := app.Build(cfg, quiet)
				if err != nil {
					t.Fatalf("as printed: %v", err)
				}
				var warnings []string
				for _, w := range cfg.Warnings {
					warnings = append(warnings, w.Error())
				}
				if !slices.ContainsFunc(warnings, func(w string) bool { return strings.HasPrefix(w, want) }) {
					t.Fatalf("as printed: warnings %q lack %s", warnings, want)
				}
				if err := a.Start(callCtx(t)); err == nil || !strings.Contains(err.Error(), tc.startErr) {
					_ = a.Stop(context.Background())
					t.Fatalf("starting as printed: %v, want %s", err, tc.startErr)
				}
			}
			a := startYAML(t, agentSpec(t, file, replace...))
			ex := exchange.NewWithBody(exchange.InOut, "Who am I to the tool server?")
			if err := a.Context().Run(callCtx(t), "my-agent", ex); err != nil {
				t.Fatal(err)
			}
			if got := ex.In().Body(); got != tc.want {
				t.Fatalf("answer %q, want %q", got, tc.want)
			}
			if m := fake.Requests()[0]["model"]; m != "gpt-4o-mini" {
				t.Errorf("model %v, want the default gpt-4o-mini", m)
			}
		})
	}
}

// §4.8 browser-agent: the printed stdio server (npx @playwright/mcp) is replaced by
// the reference MCP server over stdio; the anthropic model reaches it through the
// agent's HTTP trigger.
func TestAgentSpecS4_8BrowserAgent(t *testing.T) {
	command, args := everythingStdio(t)
	fake := agenttest.NewAnthropicFunc(t, quoteTool(t, "echo", `{"message":"navigated"}`))
	t.Setenv("ANTHROPIC_BASE_URL", fake.BaseURL())
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-from-env")
	buildsAsPrinted(t, "s4_8_browser")
	a := startYAML(t, agentSpec(t, "s4_8_browser",
		"http-server://0.0.0.0:8080/browse", "http-server://127.0.0.1:0/browse",
		"command: npx", "command: "+command,
		`args: ["@playwright/mcp"]`, "args: "+args))
	code, got := post(t, httpBase(t, a, "127.0.0.1:0")+"/browse", `{"message":"Open the home page"}`)
	if code != 200 || got != "tool said: Echo: navigated" {
		t.Fatalf("POST /browse: %d %q", code, got)
	}
	reqs := fake.Requests()
	if reqs[0]["model"] != "claude-sonnet-4-20250514" {
		t.Errorf("model %v", reqs[0]["model"])
	}
	// The Anthropic SDK sends the key as X-Api-Key or, in this version, as a bearer token.
	if h := fake.Headers()[0]; h.Get("X-Api-Key") != "sk-ant-from-env" && h.Get("Authorization") != "Bearer sk-ant-from-env" {
		t.Errorf("the key from ANTHROPIC_API_KEY was not sent: %v", h)
	}
}

// dbServerRun selects TestAgentSpecDBServer in the re-executed test binary.
const dbServerRun = "-test.run=^TestAgentSpecDBServer$"

// TestAgentSpecDBServer is not a test: run by TestAgentSpecS4_8DBAgent as the
// printed /usr/local/bin/db-mcp-server (this test binary, with "--dsn DSN" after
// "--"), it serves over stdin/stdout one tool, query, that answers with the DSN it
// was started with.
func TestAgentSpecDBServer(t *testing.T) {
	t.Parallel()
	args := flag.Args()
	if len(args) != 2 || args[0] != "--dsn" {
		t.Skip("helper process for TestAgentSpecS4_8DBAgent")
	}
	srv := sdk.NewServer(&sdk.Implementation{Name: "db-mcp-server", Version: "1"}, nil)
	srv.AddTool(&sdk.Tool{Name: "query", Description: "Run a query", InputSchema: json.RawMessage(`{"type":"object","properties":{"sql":{"type":"string"}}}`)},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var in struct{ SQL string }
			_ = json.Unmarshal(req.Params.Arguments, &in)
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: in.SQL + " on " + args[1]}}}, nil
		})
	_ = srv.Run(context.Background(), &sdk.StdioTransport{})
	os.Exit(0) // nothing of the test framework may reach stdout
}

// §4.8 db-agent: the printed server command is this test binary serving MCP over
// stdio; ${env:DATABASE_URL} in its args reaches the subprocess, and its tool's
// answer the model.
func TestAgentSpecS4_8DBAgent(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const dsn = "postgres://helix:pw@db.example:5432/orders"
	t.Setenv("DATABASE_URL", dsn)
	fake := agenttest.NewOpenAIFunc(t, quoteTool(t, "query", `{"sql":"select count(*) from orders"}`))
	openAIFromEnv(t, fake)
	buildsAsPrinted(t, "s4_8_db")
	cmd, _ := json.Marshal(exe)
	a := startYAML(t, agentSpec(t, "s4_8_db",
		"http-server://0.0.0.0:8080/query", "http-server://127.0.0.1:0/query",
		"command: /usr/local/bin/db-mcp-server", "command: "+string(cmd),
		`args: ["--dsn", `, `args: ["`+dbServerRun+`", "--", "--dsn", `))
	code, got := post(t, httpBase(t, a, "127.0.0.1:0")+"/query", `{"message":"How many orders?"}`)
	if want := "tool said: select count(*) from orders on " + dsn; code != 200 || got != want {
		t.Fatalf("POST /query: %d %q, want %q", code, got, want)
	}
	if m := fake.Requests()[0]["model"]; m != "gpt-4o" {
		t.Errorf("model %v", m)
	}
}

// synaptX is a fake SynaptX gateway: it serves the OpenAI API under /ai/openai
// (forwarding to a fake model) and records the path and Authorization of each
// request.
type synaptX struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string // "path Authorization"
}

func newSynaptX(t *testing.T, model *agenttest.Server) *synaptX {
	t.Helper()
	target, _ := url.Parse(model.URL + "/v1")
	proxy := httputil.NewSingleHostReverseProxy(target)
	s := &synaptX{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.seen = append(s.seen, r.URL.Path+" "+r.Header.Get("Authorization"))
		s.mu.Unlock()
		rest, ok := strings.CutPrefix(r.URL.Path, "/ai/openai/")
		if !ok {
			http.NotFound(w, r)
			return
		}
		r.URL.Path = "/" + rest
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *synaptX) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.seen)
}

// §15 "Multi-MCP Architecture" and §16 "Virtual Keys": each server admits only its
// own key, lists only what it exposes, and answers a call of the blocked summarizer
// on admin-tools like a call of a tool that does not exist (docs/security.md); the
// code-assistant reaches the model through SynaptX's base_url with its virtual key;
// the manifest lists the agents without their keys.
func TestAgentSpecS15S16(t *testing.T) {
	t.Parallel()
	fake := agenttest.NewOpenAIFunc(t, func(req agenttest.Request) agenttest.Reply {
		return agenttest.Reply{Text: "answer to: " + req.UserMessage}
	})
	gw := newSynaptX(t, fake)
	buildsAsPrinted(t, "s15_s16")
	a := startYAML(t, agentSpec(t, "s15_s16",
		"addr: 0.0.0.0:3100", "addr: 127.0.0.1:0",
		"addr: 0.0.0.0:3101", "addr: 127.0.0.1:0",
		"http://localhost:7080/ai/openai", gw.URL+"/ai/openai"))
	public := serverURL(t, a, "public-tools") + "/mcp"
	admin := serverURL(t, a, "admin-tools") + "/mcp"
	key := func(k string) http.Header { return http.Header{"Authorization": {"Bearer " + k}} }

	// Cross-key access is rejected, as is no key.
	for _, c := range []struct {
		endpoint string
		h        http.Header
	}{{public, key("mcp-admin-key")}, {admin, key("mcp-public-key")}, {public, nil}, {admin, nil}} {
		if _, err := sdkSession(t, c.endpoint, c.h); err == nil {
			t.Errorf("%s admitted %v", c.endpoint, c.h)
		}
	}

	pub, err := sdkSession(t, public, key("mcp-public-key"))
	if err != nil {
		t.Fatalf("public key on public-tools: %v", err)
	}
	if got := strings.Join(listedNames(t, pub), ","); got != "code_assistant,math_agent,summarizer" {
		t.Errorf("public-tools lists %s", got)
	}
	if got, isErr := call(t, pub, "code_assistant", map[string]any{"message": "Write hello world in Go"}); isErr || got != "answer to: Write hello world in Go" {
		t.Fatalf("code_assistant: %q (isError %v)", got, isErr)
	}
	if got := gw.requests(); len(got) != 1 || got[0] != "/ai/openai/chat/completions Bearer sk-vk-xxxxx" {
		t.Errorf("SynaptX saw %q, want the virtual key on /ai/openai/chat/completions", got)
	}
	if got, isErr := call(t, pub, "summarizer", map[string]any{"message": "Summarize: a long text"}); isErr || got != "answer to: Summarize: a long text" {
		t.Errorf("summarizer on public-tools: %q (isError %v)", got, isErr)
	}

	adm, err := sdkSession(t, admin, key("mcp-admin-key"))
	if err != nil {
		t.Fatalf("admin key on admin-tools: %v", err)
	}
	if got := strings.Join(listedNames(t, adm), ","); got != "admin_tool,code_assistant" {
		t.Errorf("admin-tools lists %s", got)
	}
	if got, isErr := call(t, adm, "admin_tool", nil); isErr || got != "admin done" {
		t.Errorf("admin_tool: %q (isError %v)", got, isErr)
	}
	if err := callRefused(t, adm, "summarizer", map[string]any{"message": "x"}); err != nil {
		t.Errorf("summarizer on admin-tools: %v", err)
	}
	if err := callRefused(t, adm, "no_such_tool", map[string]any{"message": "x"}); err != nil {
		t.Errorf("an unknown tool on admin-tools: %v", err)
	}

	// §16: the manifest lists the agents with their models and never a key.
	resp, err := http.Get("http://" + a.ManagementAddr() + management.ManifestPath)
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	validateManifest(t, doc)
	if strings.Contains(string(doc), "sk-vk-") || strings.Contains(string(doc), "mcp-public-key") || strings.Contains(string(doc), "mcp-admin-key") {
		t.Fatalf("the manifest publishes a key: %s", doc)
	}
	var m management.Manifest
	if err := json.Unmarshal(doc, &m); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, ag := range m.Agents {
		ids = append(ids, ag.ID)
		if ag.Type != "react" || ag.Provider != "openai" || ag.Model != "gpt-4o-mini" || ag.Tools == nil || ag.Capabilities == nil {
			t.Errorf("manifest agent %+v", ag)
		}
	}
	if strings.Join(ids, ",") != "code-assistant,math-agent,summarizer" {
		t.Errorf("manifest agents %v", ids)
	}
}
