package config

import (
	"go.yaml.in/yaml/v3"
)

// Console capture defaults (helix.console.capture); internal/console/capture
// applies them, they are here so that docs and validation name the same values.
const (
	DefaultConsoleCaptureSample   = 1.0
	DefaultConsoleCaptureMaxBytes = 64 << 20
)

// decodeConsole decodes helix.console: {enabled, auth: {api_keys, oauth},
// capture: {sample, max_bytes}}. Whether the console may be on (a
// non-loopback management address needs auth) depends on the address, which
// the application checks at Build (pkg/app/console.go).
func decodeConsole(d *Decoder, n *yaml.Node, path string, c *ConsoleConfig) {
	c.Pos = d.Pos(n)
	d.Doc(n, "The web console on the management listener (under /console): on by default when the management address is loopback, off elsewhere.")
	d.Mapping(n, path, "helix.console", Fields{
		"enabled": func(v *yaml.Node, p string) { b := d.Bool(v, p); c.Enabled = &b },
		"auth": func(v *yaml.Node, p string) {
			a := &c.Auth
			a.Pos = d.Pos(v)
			d.Mapping(v, p, "helix.console.auth", Fields{
				// The MCP server's api_keys form: keys, or {key, name, roles};
				// "operator" in roles makes the key's user an operator.
				"api_keys": func(v *yaml.Node, p string) { a.APIKeys, a.APIKeyPrincipals = d.apiKeys(v, p) },
				"oauth": func(v *yaml.Node, p string) {
					o := &OAuthConfig{Pos: d.Pos(v)}
					if d.Mapping(v, p, "helix.console.auth.oauth", Fields{
						"issuer":      func(v *yaml.Node, p string) { o.Issuer = d.String(v, p) },
						"audience":    func(v *yaml.Node, p string) { o.Audience = d.String(v, p) },
						"jwks_url":    func(v *yaml.Node, p string) { o.JWKSURL = d.String(v, p) },
						"roles_claim": func(v *yaml.Node, p string) { o.RolesClaim = d.String(v, p) },
					}, "issuer", "audience", "jwks_url") {
						a.OAuth = o
					}
				},
			})
		},
		"capture": func(v *yaml.Node, p string) {
			cp := &c.Capture
			cp.Pos = d.Pos(v)
			d.Mapping(v, p, "helix.console.capture", Fields{
				"sample": func(v *yaml.Node, p string) {
					d.Doc(v, "The share of exchanges the console captures step by step, above 0 and at most 1 (default 1).")
					cp.Sample = d.Float(v, p)
					if d.desc == nil && (cp.Sample <= 0 || cp.Sample > 1) {
						d.Errorf(v, p, "sample must be above 0 and at most 1, got %v", cp.Sample).Hint =
							"0.1 captures one exchange in ten; leave it out to capture every exchange"
					}
				},
				"max_bytes": func(v *yaml.Node, p string) {
					d.Doc(v, "The memory the console's capture may hold (64MiB by default).")
					before := len(d.Errors())
					cp.MaxBytes = d.ByteSize(v, p)
					// A value that is not a size has had its error already.
					if d.desc == nil && cp.MaxBytes <= 0 && len(d.Errors()) == before {
						d.Errorf(v, p, "max_bytes must be a positive size, for example 64MiB").Hint =
							"the capture keeps the newest exchanges within this budget"
					}
				},
			})
		},
	})
}

// ConsoleHasAuth reports whether helix.console.auth lets anyone but the local
// one-time link in (API keys or OAuth).
func (c ConsoleConfig) HasAuth() bool {
	return len(c.Auth.APIKeys) > 0 || c.Auth.OAuth != nil
}
