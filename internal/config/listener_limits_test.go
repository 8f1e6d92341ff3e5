package config

import (
	"strings"
	"testing"
	"time"
)

func TestListenerLimitKeys(t *testing.T) {
	cfg, errs := load(t, `
helix:
  shutdown_timeout: 45s
  management:
    read_timeout: 5s
    max_connections: 64
  mcp:
    servers:
      - enabled: true
        read_timeout: 10s
        idle_timeout: off
        write_timeout: 2m
        max_connections: 1000
        max_connections_per_ip: -1
mcps:
  - id: m
    max_connections_per_ip: 32
    write_timeout: 1500
`)
	if errs != nil {
		t.Fatal(errs)
	}
	if cfg.Helix.ShutdownTimeout != 45*time.Second {
		t.Errorf("shutdown_timeout = %v", cfg.Helix.ShutdownTimeout)
	}
	if got, want := cfg.Helix.Management.Listener, (ListenerLimits{ReadTimeout: 5 * time.Second, MaxConnections: 64}); got != want {
		t.Errorf("management: %+v, want %+v", got, want)
	}
	want := ListenerLimits{ReadTimeout: 10 * time.Second, IdleTimeout: -1, WriteTimeout: 2 * time.Minute, MaxConnections: 1000, MaxConnectionsPerIP: -1}
	if got := cfg.Helix.MCP.Servers[0].Listener; got != want {
		t.Errorf("helix.mcp.servers[0]: %+v, want %+v", got, want)
	}
	if got, want := cfg.MCPs[0].Listener, (ListenerLimits{MaxConnectionsPerIP: 32, WriteTimeout: 1500 * time.Millisecond}); got != want {
		t.Errorf("mcps[0]: %+v, want %+v", got, want)
	}
}

func TestListenerLimitErrors(t *testing.T) {
	_, errs := load(t, `
helix:
  shutdown_timeout: later
  management:
    idle_timeout: forever
mcps:
  - id: m
    max_connections: -3
    read_timeout: -5s
`)
	if errs == nil {
		t.Fatal("no errors")
	}
	for _, want := range []string{
		"helix.yaml:3:21", "helix.shutdown_timeout",
		"helix.yaml:5:19", "helix.management.idle_timeout",
		"helix.yaml:8:22", "max_connections must be a number of connections", "off for no limit",
		"helix.yaml:9:19", "mcps[0].read_timeout",
	} {
		if !strings.Contains(errs.Error(), want) {
			t.Errorf("errors lack %q:\n%v", want, errs)
		}
	}
}
