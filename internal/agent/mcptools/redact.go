package mcptools

import (
	"net/url"
	"sort"
	"strings"

	mcpclient "github.com/arvenza/helix/internal/component/mcp/client"
)

// redactor removes a connection's secrets from error texts, which reach logs and,
// for failed tool calls, the model. The connection names its server by endpoint URL
// or by command line; a command line often carries secrets (spec §4.8's
// `args: ["--dsn", "${env:DATABASE_URL}"]`), so it is shown as the command alone.
type redactor struct {
	commandLine string // as the connection writes it in errors
	shown       string // what replaces it
	secrets     []string
}

// minSecret is the shortest value treated as a secret: replacing shorter ones (a
// header value "1", an env value "on") would mangle messages without hiding anything.
const minSecret = 4

func newRedactor(cfg mcpclient.Config) *redactor {
	r := &redactor{}
	add := func(v string) {
		if len(v) >= minSecret {
			r.secrets = append(r.secrets, v)
		}
	}
	if a := cfg.Auth; a != nil {
		add(a.Token)
		add(a.Key)
		add(a.ClientSecret)
	}
	for _, vs := range cfg.Header {
		for _, v := range vs {
			add(v)
		}
	}
	for _, kv := range cfg.Env {
		if _, v, ok := strings.Cut(kv, "="); ok {
			add(v)
		}
	}
	if cfg.Transport == mcpclient.TransportStdio {
		r.commandLine = strings.TrimSpace(cfg.Command + " " + strings.Join(cfg.Args, " "))
		r.shown = cfg.Command
		for _, a := range cfg.Args {
			if strings.Contains(a, "://") {
				// A DSN or URL argument may hold a password even when the command
				// line itself is not echoed (the SDK's own messages).
				add(a)
			}
		}
	} else if u, err := url.Parse(cfg.Endpoint); err == nil {
		if p, ok := u.User.Password(); ok {
			add(p)
		}
		for _, vs := range u.Query() {
			for _, v := range vs {
				add(v)
			}
		}
		r.shown = u.Redacted()
	} else {
		r.shown = cfg.Endpoint
	}
	// Longer secrets first, so that one containing another is replaced whole.
	sort.Slice(r.secrets, func(i, j int) bool { return len(r.secrets[i]) > len(r.secrets[j]) })
	return r
}

// target is the server as errors may show it.
func (r *redactor) target() string { return r.text(r.shown) }

// text returns s without the connection's secrets.
func (r *redactor) text(s string) string {
	if r.commandLine != "" && r.commandLine != r.shown {
		s = strings.ReplaceAll(s, r.commandLine, r.shown)
	}
	for _, secret := range r.secrets {
		s = strings.ReplaceAll(s, secret, "[redacted]")
	}
	return s
}
