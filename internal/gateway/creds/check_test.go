package creds

import (
	"strings"
	"testing"

	"github.com/arvenza/helix/internal/config"
)

func TestCheckSaysWhatAndWhere(t *testing.T) {
	t.Parallel()
	pos := config.Pos{File: "helix.yaml", Line: 7, Col: 9}
	tePos := config.Pos{File: "helix.yaml", Line: 12, Col: 25}
	base := func(mut func(*config.UpstreamConfig)) config.UpstreamConfig {
		c := config.UpstreamConfig{ID: "up", URL: "https://up.test/mcp", Pos: pos, Path: "mcps[0].upstreams[1]"}
		mut(&c)
		return c
	}
	cases := []struct {
		name string
		cfg  config.UpstreamConfig
		want string // "" means no problem
	}{
		{"gateway by default", base(func(c *config.UpstreamConfig) {}), ""},
		{"unknown mode", base(func(c *config.UpstreamConfig) { c.Credentials = "forward" }),
			`helix.yaml:7:9: mcps[0].upstreams[1].credentials: credentials: "forward" is not a mode (use gateway, passthrough or exchange)`},
		{"passthrough without audience", base(func(c *config.UpstreamConfig) { c.Credentials = config.CredentialsPassthrough }),
			"helix.yaml:7:9: mcps[0].upstreams[1].audience: credentials: passthrough needs audience:"},
		{"passthrough", base(func(c *config.UpstreamConfig) {
			c.Credentials, c.Audience, c.Sessions = config.CredentialsPassthrough, "https://up.test", config.SessionsPerPrincipal
		}), ""},
		{"passthrough with shared sessions", base(func(c *config.UpstreamConfig) {
			c.Credentials, c.Audience, c.Sessions = config.CredentialsPassthrough, "https://up.test", config.SessionsShared
		}), "mcps[0].upstreams[1].sessions: sessions: shared would let callers use a session opened with another caller's token"},
		{"passthrough to stdio", base(func(c *config.UpstreamConfig) {
			c.URL, c.Command, c.Credentials, c.Audience = "", "server", config.CredentialsPassthrough, "x"
		}), "a stdio upstream has none"},
		{"passthrough with a bearer auth block", base(func(c *config.UpstreamConfig) {
			c.Credentials, c.Audience = config.CredentialsPassthrough, "https://up.test"
			c.Auth = &config.UpstreamAuth{Values: map[string]any{"type": "bearer", "token": "x"}, Pos: config.Pos{File: "helix.yaml", Line: 9, Col: 15}}
		}), "helix.yaml:9:15: mcps[0].upstreams[1].auth: auth: sets the Authorization header"},
		{"passthrough with mtls", base(func(c *config.UpstreamConfig) {
			c.Credentials, c.Audience = config.CredentialsPassthrough, "https://up.test"
			c.Auth = &config.UpstreamAuth{Values: map[string]any{"type": "mtls"}}
		}), ""},
		{"passthrough with an Authorization header", base(func(c *config.UpstreamConfig) {
			c.Credentials, c.Audience, c.Headers = config.CredentialsPassthrough, "https://up.test", map[string]string{"authorization": "x"}
		}), "headers: sets Authorization"},
		{"audience without a mode", base(func(c *config.UpstreamConfig) { c.Audience = "https://up.test" }),
			"audience: applies to credentials: passthrough or exchange"},
		{"exchange without token_url", base(func(c *config.UpstreamConfig) { c.Credentials = config.CredentialsExchange }),
			"helix.yaml:7:9: mcps[0].upstreams[1].token_exchange.token_url: credentials: exchange needs token_exchange.token_url"},
		{"exchange", base(func(c *config.UpstreamConfig) {
			c.Credentials = config.CredentialsExchange
			c.TokenExchange = &config.TokenExchangeConfig{TokenURL: "https://sts.test/token", ClientID: "gw", ClientSecret: "s", Pos: tePos}
		}), ""},
		{"exchange over http on loopback", base(func(c *config.UpstreamConfig) {
			c.Credentials = config.CredentialsExchange
			c.TokenExchange = &config.TokenExchangeConfig{TokenURL: "http://127.0.0.1:9000/token", Pos: tePos}
		}), ""},
		{"exchange over http elsewhere", base(func(c *config.UpstreamConfig) {
			c.Credentials = config.CredentialsExchange
			c.TokenExchange = &config.TokenExchangeConfig{TokenURL: "http://sts.test/token?key=hush-hush-key", Pos: tePos}
		}), "helix.yaml:12:25: mcps[0].upstreams[1].token_exchange.token_url: token_url http://sts.test/token?key=*** would send callers' tokens and the client secret unencrypted"},
		{"exchange with a relative token_url", base(func(c *config.UpstreamConfig) {
			c.Credentials = config.CredentialsExchange
			c.TokenExchange = &config.TokenExchangeConfig{TokenURL: "/token", Pos: tePos}
		}), "is not an absolute URL"},
		{"exchange with a secret and no client id", base(func(c *config.UpstreamConfig) {
			c.Credentials = config.CredentialsExchange
			c.TokenExchange = &config.TokenExchangeConfig{TokenURL: "https://sts.test/token", ClientSecret: "s", Pos: tePos}
		}), "token_exchange.client_secret needs client_id"},
		{"token_exchange under passthrough", base(func(c *config.UpstreamConfig) {
			c.Credentials, c.Audience = config.CredentialsPassthrough, "https://up.test"
			c.TokenExchange = &config.TokenExchangeConfig{TokenURL: "https://sts.test/token", Pos: tePos}
		}), "helix.yaml:12:25: mcps[0].upstreams[1].token_exchange: token_exchange: applies to credentials: exchange"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs := Check(tc.cfg)
			_, newErr := New(tc.cfg, Options{})
			if tc.want == "" {
				if len(errs) > 0 || newErr != nil {
					t.Fatalf("unexpected problems: %v / %v", errs, newErr)
				}
				return
			}
			if !strings.Contains(errs.Error(), tc.want) {
				t.Fatalf("problems:\n%v\nwant one containing %q", errs, tc.want)
			}
			if newErr == nil {
				t.Fatal("New accepted a configuration Check refuses")
			}
			if strings.Contains(errs.Error(), "hush-hush-key") {
				t.Fatalf("a problem shows a secret: %v", errs)
			}
		})
	}
}
