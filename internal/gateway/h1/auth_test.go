package h1_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/arvenza/helix/internal/component/mcp/client"
	"github.com/arvenza/helix/internal/gateway/h1"
)

// TestLoopUnderTheUpstreamClientsAuth: on the HTTP client an upstream's
// calls use (headers: and auth: as the mcp:// client builds it), requests
// the loop sends carry the same credentials as the Transport's would,
// OAuth client-credentials tokens fetched again as they expire included:
// the loop sits under every RoundTripper of the client.
func TestLoopUnderTheUpstreamClientsAuth(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization")+" "+r.Header.Get("X-Tenant"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, "{}")
	}))
	defer up.Close()
	var issued atomic.Int64
	tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		// Expiring within oauth2's early-refresh margin: every use fetches again.
		fmt.Fprintf(w, `{"access_token":"tok-%d","token_type":"Bearer","expires_in":1}`, issued.Add(1))
	}))
	defer tokens.Close()

	for _, tc := range []struct {
		auth *client.AuthConfig
		want []string
	}{
		{&client.AuthConfig{Type: client.AuthBearer, Token: "static"}, []string{"Bearer static acme", "Bearer static acme"}},
		{&client.AuthConfig{Type: client.AuthOAuth2, TokenURL: tokens.URL, ClientID: "id", ClientSecret: "s"}, []string{"Bearer tok-1 acme", "Bearer tok-2 acme"}},
	} {
		mu.Lock()
		seen = nil
		mu.Unlock()
		hc, base, err := client.NewAuthHTTPClient(http.Header{"X-Tenant": {"acme"}}, tc.auth)
		if err != nil {
			t.Fatal(err)
		}
		loop := h1.Register(base)
		for range 2 {
			req, _ := http.NewRequestWithContext(h1.Use(context.Background()), http.MethodPost, up.URL, strings.NewReader("{}"))
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		mu.Lock()
		got := fmt.Sprint(seen)
		mu.Unlock()
		if got != fmt.Sprint(tc.want) || loop.Sent() != 2 {
			t.Errorf("%s: the upstream saw %s (loop sent %d), want %v through the loop", tc.auth.Type, got, loop.Sent(), tc.want)
		}
		loop.Close()
		base.CloseIdleConnections()
	}
}
