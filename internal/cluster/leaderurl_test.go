package cluster_test

import (
	"strings"
	"testing"

	_ "github.com/arvenza/helix/internal/cluster" // registers the leader URL check
	"github.com/arvenza/helix/internal/config"
)

// A leader URL that is no PostgreSQL database URL is refused when the file is
// loaded, at the value's position, without showing the password.
func TestLeaderURLErrors(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		want []string
	}{
		{"helix:\n  cluster:\n    leader: mysql://u:pw@db/x\n", []string{"helix.yaml:3:13", "needs a postgres:// URL, not mysql://"}},
		{"helix:\n  cluster:\n    leader: db:5432/x\n", []string{"helix.yaml:3:13", "helix.cluster.leader"}},
		{"helix:\n  cluster:\n    leader: postgres://u:pw@/x\n", []string{"helix.yaml:3:13", "names no host"}},
		{"helix:\n  cluster:\n    leader: postgres://u:pw@db:5432\n", []string{"helix.yaml:3:13", "names no database"}},
		{"helix:\n  cluster:\n    leader: \"postgres://u:pw@db:5432/x\\x7f\"\n", []string{"helix.yaml:3:13", "does not parse"}},
		{"helix:\n  cluster:\n    leader: //u:pw@db:5432/x\n", []string{"helix.yaml:3:13", "has no scheme"}},
	} {
		_, err := config.LoadBytes("helix.yaml", []byte(tc.yaml))
		if err == nil {
			t.Errorf("%q: no error", tc.yaml)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q: errors lack %q:\n%v", tc.yaml, w, err)
			}
		}
		if strings.Contains(err.Error(), "pw@") {
			t.Errorf("an error shows the URL's password: %v", err)
		}
	}
	for _, ok := range []string{"postgres://u:pw@db:5432/x?sslmode=disable", "postgresql://db/x"} {
		if _, err := config.LoadBytes("helix.yaml", []byte("helix:\n  cluster:\n    leader: "+ok+"\n")); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}
