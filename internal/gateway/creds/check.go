package creds

import (
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/arvenza/helix/internal/config"
)

// Check returns the problems of cfg's credentials settings, each with where it
// is and what to do: credentials: names a mode; passthrough has an audience;
// exchange has a token_url (https, or http on a loopback address); both reach
// the upstream over HTTP, keep sessions apart per caller and leave the
// Authorization header to the caller's token. The core's decoder calls it for
// every upstream.
func Check(cfg config.UpstreamConfig) config.Errors {
	var errs config.Errors
	add := func(pos config.Pos, key, msg, hint string) {
		path := cfg.Path
		if key != "" {
			path += "." + key
		}
		if !pos.IsValid() {
			pos = cfg.Pos
		}
		errs = append(errs, &config.Error{Pos: pos, Path: path, Msg: msg, Hint: hint})
	}
	mode := cfg.Credentials
	switch mode {
	case "", config.CredentialsGateway:
		if cfg.Audience != "" {
			add(cfg.Pos, "audience", "audience: applies to credentials: passthrough or exchange", "set credentials:, or remove audience:")
		}
		if cfg.TokenExchange != nil {
			add(cfg.TokenExchange.Pos, "token_exchange", "token_exchange: applies to credentials: exchange", "set credentials: exchange, or remove token_exchange:")
		}
		return errs
	case config.CredentialsPassthrough, config.CredentialsExchange:
	default:
		add(cfg.Pos, "credentials", fmt.Sprintf("credentials: %q is not a mode", mode), "use gateway, passthrough or exchange")
		return errs
	}

	if cfg.Command != "" || cfg.Transport == "stdio" {
		add(cfg.Pos, "credentials", fmt.Sprintf("credentials: %s sends the caller's token in HTTP headers, and a stdio upstream has none", mode), "use credentials: gateway (the default) for a stdio upstream")
	}
	if cfg.Sessions == config.SessionsShared {
		add(cfg.Pos, "sessions", fmt.Sprintf("sessions: shared would let callers use a session opened with another caller's token (credentials: %s)", mode), "use sessions: per-principal (or per-client)")
	}
	if cfg.Auth != nil && authSetsAuthorization(cfg.Auth) {
		add(cfg.Auth.Pos, "auth", fmt.Sprintf("auth: sets the Authorization header that credentials: %s fills with the caller's token", mode), "remove auth: (an mtls block may stay)")
	}
	for k := range cfg.Headers {
		if strings.EqualFold(k, "Authorization") {
			add(cfg.Pos, "headers", fmt.Sprintf("headers: sets Authorization, which credentials: %s fills with the caller's token", mode), "remove it from headers:")
		}
	}

	if mode == config.CredentialsPassthrough {
		if cfg.Audience == "" {
			add(cfg.Pos, "audience", "credentials: passthrough needs audience: (what the caller's token must name in its aud to be passed on)", "set audience: to the upstream's resource identifier, e.g. its URL")
		}
		if cfg.TokenExchange != nil {
			add(cfg.TokenExchange.Pos, "token_exchange", "token_exchange: applies to credentials: exchange", "set credentials: exchange, or remove token_exchange:")
		}
		return errs
	}

	te := cfg.TokenExchange
	if te == nil || te.TokenURL == "" {
		pos := cfg.Pos
		if te != nil {
			pos = te.Pos
		}
		add(pos, "token_exchange.token_url", "credentials: exchange needs token_exchange.token_url (the token service's endpoint)", "e.g. token_exchange: { token_url: https://sts.example.com/token, client_id: helix-gateway }")
		return errs
	}
	if msg := checkTokenURL(te.TokenURL); msg != "" {
		add(te.Pos, "token_exchange.token_url", msg, "use an https URL (http only on a loopback address)")
	}
	if te.ClientSecret != "" && te.ClientID == "" {
		add(te.Pos, "token_exchange.client_id", "token_exchange.client_secret needs client_id", "set client_id: to the gateway's client at the token service")
	}
	return errs
}

// authSetsAuthorization reports whether an auth: block puts a credential in the
// Authorization header (every type but mtls, which authenticates the connection).
func authSetsAuthorization(a *config.UpstreamAuth) bool {
	t, _ := a.Values["type"].(string)
	return !strings.EqualFold(t, "mtls")
}

// checkTokenURL says what is wrong with a token service URL, "" when nothing:
// the caller's token and the client secret travel to it, so it must be https
// unless it stays on this machine.
func checkTokenURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return fmt.Sprintf("token_url %q is not an absolute URL", redactURL(raw))
	}
	lower := strings.ToLower(raw)
	switch {
	case strings.HasPrefix(lower, "https://"):
		return ""
	case strings.HasPrefix(lower, "http://"):
		if ip := net.ParseIP(u.Hostname()); (ip != nil && ip.IsLoopback()) || strings.EqualFold(u.Hostname(), "localhost") {
			return ""
		}
		return fmt.Sprintf("token_url %s would send callers' tokens and the client secret unencrypted", redactURL(raw))
	}
	return fmt.Sprintf("token_url %s: the token service is reached over https", redactURL(raw))
}
