package config

import (
	"strings"
	"testing"
	"time"
)

func TestClusterKeys(t *testing.T) {
	t.Setenv("HELIX_TEST_PGPASSWORD", "s3cret")
	cfg, errs := load(t, `
helix:
  cluster:
    leader: postgres://helix:${env:HELIX_TEST_PGPASSWORD}@db:5432/coord?sslmode=disable
    name: orders
    lock_id: -42
    retry_interval: 500ms
    check_interval: 2s
    check_timeout: 1500
`)
	if errs != nil {
		t.Fatal(errs)
	}
	c := cfg.Helix.Cluster
	if c.Leader != "postgres://helix:s3cret@db:5432/coord?sslmode=disable" || c.Name != "orders" || c.LockID == nil || *c.LockID != -42 ||
		c.RetryInterval != 500*time.Millisecond || c.CheckInterval != 2*time.Second || c.CheckTimeout != 1500*time.Millisecond {
		t.Fatalf("cluster = %+v", c)
	}
	if c.LeaderPos.Line != 4 || c.LeaderPos.Col != 13 || c.Pos.Line != 4 {
		t.Errorf("positions: leader %v, block %v", c.LeaderPos, c.Pos)
	}

	cfg, errs = load(t, "helix:\n  name: x\n")
	if errs != nil || cfg.Helix.Cluster.Leader != "" || cfg.Helix.Cluster.LockID != nil {
		t.Fatalf("no cluster: %v %+v", errs, cfg.Helix.Cluster)
	}
}

func TestClusterErrors(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		want []string
	}{
		{"helix:\n  cluster:\n    name: x\n", []string{"helix.yaml:3:5", "leader"}},
		// The leader URL's shape is internal/cluster's check (TestLeaderURLErrors there).
		{"helix:\n  cluster:\n    leader: postgres://db/x\n    retry_interval: soon\n    check_interval: -1s\n    lock_id: big\n    name: \" \"\n",
			[]string{"helix.yaml:4:21", "helix.cluster.retry_interval", "helix.yaml:5:21", "helix.cluster.check_interval",
				"helix.yaml:6:14", "helix.cluster.lock_id", "helix.yaml:7:11", "the cluster name is empty"}},
		{"helix:\n  cluster:\n    leader: postgres://db/x\n    lead_check: 1s\n", []string{"helix.yaml:4:5", "lead_check"}},
	} {
		_, errs := load(t, tc.yaml)
		if errs == nil {
			t.Errorf("%q: no error", tc.yaml)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(errs.Error(), w) {
				t.Errorf("%q: errors lack %q:\n%v", tc.yaml, w, errs)
			}
		}
		if strings.Contains(errs.Error(), "pw@") {
			t.Errorf("an error shows the URL's password: %v", errs)
		}
	}
}
