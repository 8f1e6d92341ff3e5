package http_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	helixhttp "github.com/arvenza/helix/internal/component/http"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// sendOrCreateError is send, with the endpoint's creation error as its result.
func sendOrCreateError(t *testing.T, comp *helixhttp.Component, raw string, ex *exchange.Exchange) error {
	t.Helper()
	u, err := uri.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := comp.CreateEndpoint(u); err != nil {
		return err
	}
	return send(t, comp, raw, ex)
}

// TestErrorsMaskTheURL: no error of the http:// producer shows a query value or a
// password of the request URL — they are API keys (?appid=${env:KEY}) as often as
// not — while it still names the host and path.
func TestErrorsMaskTheURL(t *testing.T) {
	const key = "k3y-5f8e2a91"
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big":
			_, _ = w.Write([]byte(strings.Repeat("x", 100)))
		case "/slow":
			<-r.Context().Done()
		default:
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	defer upstream.Close()
	host := strings.TrimPrefix(upstream.URL, "http://")
	comp := helixhttp.New(nil)
	defer comp.Stop(context.Background())
	for _, tc := range []struct{ name, uri, header string }{
		{"closed port", "http://" + closedPort(t) + "/x?appid=" + key, ""},
		{"500 upstream", "http://" + host + "/x?appid=" + key, ""},
		{"response too large", "http://" + host + "/big?appid=" + key + "&maxResponseBytes=10", ""},
		{"timeout", "http://" + host + "/slow?appid=" + key + "&timeout=50ms", ""},
		{"password in user info", "http://user:" + key + "@" + closedPort(t) + "/x", ""},
		{"bridged URL", "http://ignored?bridgeEndpoint=true", "http://user:" + key + "@" + closedPort(t) + "/x?token=" + key},
		{"bridged URL that is not a URL", "http://ignored?bridgeEndpoint=true", "http//user:" + key + "@nowhere/?token=" + key},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ex := exchange.New(exchange.InOut)
			if tc.header != "" {
				ex.In().SetHeader(helixhttp.HeaderHTTPURI, tc.header)
			}
			start := time.Now()
			err := sendOrCreateError(t, comp, tc.uri, ex)
			if err == nil {
				t.Fatal("no error")
			}
			if strings.Contains(err.Error(), key) {
				t.Fatalf("the error shows the secret: %v", err)
			}
			if !strings.Contains(err.Error(), "***") && !strings.Contains(err.Error(), "not supported") {
				t.Fatalf("the error does not show where the secret was masked: %v", err)
			}
			if time.Since(start) > 10*time.Second {
				t.Fatalf("took %s", time.Since(start))
			}
		})
	}
}
