package config_test

import (
	"fmt"

	"github.com/arvenza/helix/internal/config"
)

// Servers can be declared in Go as in YAML, in either list; MCPServers is the one
// list an application builds them from.
func ExampleConfig_MCPServers() {
	off := false
	cfg := &config.Config{}
	cfg.Helix.MCP.Servers = []config.MCPServerConfig{
		{Enabled: true, Transport: "http", Addr: "127.0.0.1:3000", Name: "my-tools", Expose: []string{"greet"}},
		{Enabled: false, Name: "not-started"},
	}
	cfg.MCPs = []config.MCPServerConfig{{ID: "fast-off", Addr: "127.0.0.1:3001", FastToolCalls: &off}}
	for _, s := range cfg.MCPServers() {
		expose := fmt.Sprint(s.Expose)
		if s.Expose == nil {
			expose = "everything"
		}
		fmt.Printf("%s (%s) name=%s expose=%s fast=%v\n", s.ID, s.Path, s.Name, expose, s.FastToolCallsOn())
	}
	// Output:
	// my-tools (helix.mcp.servers[0]) name=my-tools expose=[greet] fast=true
	// fast-off (mcps[0]) name=fast-off expose=everything fast=false
}
