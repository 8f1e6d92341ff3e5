package server

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arvenza/helix/internal/component/mcp/internal/mcptest"
	"github.com/arvenza/helix/pkg/uri"
)

// TestHTTPTransportsServeTheSameClient runs the go-sdk client's full flow (calls,
// panics, failures, a call the client abandons) against both Streamable HTTP
// implementations, stateful and stateless, in both protocol eras, so that the sdk
// fallback stays working: a 2026-07-28 client is served without a session by
// every server, a 2025-11-25 client gets one from a stateful server only.
func TestHTTPTransportsServeTheSameClient(t *testing.T) {
	t.Parallel()
	for _, impl := range []string{HTTPTransportHelix, HTTPTransportSDK} {
		for _, stateless := range []bool{false, true} {
			for _, version := range []string{"2026-07-28", "2025-11-25"} {
				name := impl + map[bool]string{false: "/stateful/", true: "/stateless/"}[stateless] + version
				t.Run(name, func(t *testing.T) {
					var slowCancelled atomic.Bool
					hc := newTestContext(t, troubleWorkflows(&slowCancelled)...)
					comp := startContext(t, hc, Options{ID: "s", Addr: "127.0.0.1:0", Stateless: stateless, HTTPTransport: impl})
					cs := connectHTTPAt(t, &sdk.StreamableClientTransport{Endpoint: serverURL(t, comp, "s", "/mcp"), MaxRetries: -1}, version)
					if got, want := cs.ID() != "", !stateless && version < "2026-07-28"; got != want {
						t.Fatalf("session id %q with stateless=%v at %s", cs.ID(), stateless, version)
					}
					if got := cs.InitializeResult().ProtocolVersion; got != version {
						t.Fatalf("negotiated %s, want %s", got, version)
					}
					exerciseTrouble(t, cs, &slowCancelled)
				})
			}
		}
	}
}

func TestHTTPTransportOption(t *testing.T) {
	t.Parallel()
	c := New(newTestContext(t))
	o := Options{HTTPTransport: " SDK "}
	if err := c.normalize(&o); err != nil || o.HTTPTransport != HTTPTransportSDK {
		t.Fatalf("normalize sdk: %q %v", o.HTTPTransport, err)
	}
	o = Options{}
	if err := c.normalize(&o); err != nil || o.HTTPTransport != DefaultHTTPTransport {
		t.Fatalf("normalize default: %q %v", o.HTTPTransport, err)
	}
	u, err := uri.Parse("mcp-server://127.0.0.1:0?httpTransport=sdk")
	if err != nil {
		t.Fatal(err)
	}
	if o, err = OptionsFromURI(u); err != nil || o.HTTPTransport != HTTPTransportSDK {
		t.Fatalf("URI: %q %v", o.HTTPTransport, err)
	}
	o = Options{HTTPTransport: "fast"}
	if err := c.normalize(&o); err == nil || !strings.Contains(err.Error(), "helix or sdk") {
		t.Fatalf("unknown transport: %v", err)
	}
}

type rawReply struct {
	status int
	header http.Header
	body   string
}

func send(t *testing.T, method, url string, hdr map[string]string, body string) rawReply {
	t.Helper()
	r := mcptest.Send(testCtx(t), t, method, url, hdr, body)
	return rawReply{r.Status, r.Header, r.Body}
}
