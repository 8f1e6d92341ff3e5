package config_test

import (
	"strings"
	"testing"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/redact"
)

// TestEnvSecretsAreRegistered: values resolved from ${env:…} into a secret position
// (a URL's query or user info, auth:, headers:, a token) join the secret set, so
// an upstream that echoes them shows [redacted]; others (a port, a path) do not.
func TestEnvSecretsAreRegistered(t *testing.T) {
	secrets := map[string]string{
		"HELIX_T_QUERY":  "query-secret-1a2b",
		"HELIX_T_PASS":   "pass-secret-3c4d",
		"HELIX_T_HEADER": "header-secret-5e6f",
		"HELIX_T_DSN":    "postgres://u:dsn-secret-7a8b@db/x",
	}
	for k, v := range secrets {
		t.Setenv(k, v)
	}
	t.Setenv("HELIX_T_PLAIN", "/plain/path/value")
	_, err := config.LoadBytes("helix.yaml", []byte(`
agents:
  - id: a
    model:
      provider: openai
      name: gpt-4o
      headers:
        X-Key: "${env:HELIX_T_HEADER}"
workflows:
  - id: w
    trigger: direct://w
    steps:
      - target: http://api/x?appid=${env:HELIX_T_QUERY}
      - target: http://user:${env:HELIX_T_PASS}@api/x
      - target: file://${env:HELIX_T_PLAIN}
      - set-header: {name: X-Dsn, constant: "${env:HELIX_T_DSN}"}
`))
	_ = err // the configuration's own problems do not matter here
	for _, secret := range []string{"query-secret-1a2b", "pass-secret-3c4d", "header-secret-5e6f", "dsn-secret-7a8b"} {
		if got := redact.Secrets("echo " + secret); strings.Contains(got, secret) {
			t.Errorf("%s is not in the secret set: %q", secret, got)
		}
	}
	if got := redact.Secrets("/plain/path/value"); got != "/plain/path/value" {
		t.Errorf("a value outside a secret position was registered: %q", got)
	}
}
