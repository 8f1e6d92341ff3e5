package upstream

import (
	"log/slog"
	"net/http"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/gateway"
)

// Factory returns the gateway's NewPoolFunc making a Pool per upstream: with
// the HTTP client the gateway built for it (its headers: and auth:), opts
// added to each. The oauth2 discover and login forms of auth: need the
// client's AuthConfig as well: give it with WithAuth.
func Factory(logger *slog.Logger, opts ...Option) gateway.NewPoolFunc {
	return func(u config.UpstreamConfig, hc *http.Client) (gateway.Pool, error) {
		o := opts
		if hc != nil {
			o = append(append([]Option(nil), opts...), WithHTTPClient(hc))
		}
		p, err := New(u, nil, logger, o...)
		if err != nil {
			return nil, err
		}
		return p, nil
	}
}
