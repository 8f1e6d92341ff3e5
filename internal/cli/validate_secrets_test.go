package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestValidateNeverPrintsAPassword: helix validate reports URIs with a password in
// their user info (an unparseable http:// one, a postgres:// one with an unknown
// option) at their position, without the password.
func TestValidateNeverPrintsAPassword(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "helix.yaml")
	yaml := `workflows:
  - id: a
    trigger: direct://a
    steps:
      - to: http://user:pass1234@[::1/x?appid=abcdefgh
      - to: http://user:pass9999@host:99999/x
      - to: postgres://user:pass5678@db:5432/app?querry=select
`
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := execute(t, "validate", file)
	out := stdout + stderr
	if code != ExitConfig {
		t.Fatalf("exit %d, want %d:\n%s", code, ExitConfig, out)
	}
	for _, secret := range []string{"pass1234", "pass9999", "pass5678"} {
		if strings.Contains(out, secret) {
			t.Errorf("validate prints the password %s:\n%s", secret, out)
		}
	}
	for _, where := range []string{"helix.yaml:5:", "helix.yaml:6:", "helix.yaml:7:"} {
		if !strings.Contains(out, where) {
			t.Errorf("no error at %s:\n%s", where, out)
		}
	}
}
