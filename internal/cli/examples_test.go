package cli

import (
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/internal/management"
)

// exampleFiles lists examples/*.yaml. It sets SLACK_BOT_TOKEN: a slack:// target
// without credentials is an error at load, and the cookbook's Slack report takes its
// bot token from the environment, as a deployment would.
func exampleFiles(t *testing.T) []string {
	t.Helper()
	t.Setenv("SLACK_BOT_TOKEN", "xoxb-example-files")
	files, err := filepath.Glob("../../examples/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	return files
}

// listenAddrs are the addresses a configuration listens on: http-server:// triggers,
// MCP servers and a management address written in the file.
func listenAddrs(cfg *config.Config) []string {
	var out []string
	for _, w := range cfg.Workflows {
		if rest, ok := strings.CutPrefix(w.From, "http-server://"); ok {
			host, _, _ := strings.Cut(rest, "/")
			host, _, _ = strings.Cut(host, "?")
			out = append(out, host)
		}
	}
	for _, a := range cfg.Agents {
		if rest, ok := strings.CutPrefix(a.Trigger, "http-server://"); ok {
			host, _, _ := strings.Cut(rest, "/")
			host, _, _ = strings.Cut(host, "?")
			out = append(out, host)
		}
	}
	for _, s := range cfg.Helix.MCP.Servers {
		if s.Addr != "" {
			out = append(out, s.Addr)
		}
	}
	for _, m := range cfg.MCPs {
		if m.Addr != "" {
			out = append(out, m.Addr)
		}
	}
	if cfg.Helix.Management.Addr != "" {
		out = append(out, cfg.Helix.Management.Addr)
	}
	return out
}

var envPort = regexp.MustCompile(`\$\{env:([A-Z0-9_]+_PORT):-[0-9]+\}`)

// Every example takes each port it listens on from ${env:X_PORT:-default}, so that two
// examples (or two copies of one) can run side by side; without the variables the
// documented defaults apply.
func TestExamplesTakePortsFromEnv(t *testing.T) {
	for _, f := range exampleFiles(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Load(f)
			if err != nil {
				t.Fatal(err)
			}
			defaults := listenAddrs(cfg)
			for _, m := range envPort.FindAllStringSubmatch(string(src), -1) {
				t.Setenv(m[1], "0")
			}
			cfg, err = config.Load(f)
			if err != nil {
				t.Fatal(err)
			}
			for i, addr := range listenAddrs(cfg) {
				if _, port, err := net.SplitHostPort(addr); err != nil || port != "0" {
					t.Errorf("listens on %s whatever the environment; write its port as ${env:NAME_PORT:-%s}", defaults[i], port)
				}
			}
		})
	}
}

// No two examples listen on the same port, and none on the management port every
// Helix takes by default (9999), so that a reader can run them side by side, and
// beside another Helix, without setting a variable.
func TestExamplesHaveTheirOwnPorts(t *testing.T) {
	_, defaultManagementPort, _ := net.SplitHostPort(management.DefaultAddr)
	owner := map[string]string{defaultManagementPort: "the default management listener of every Helix"}
	for _, f := range exampleFiles(t) {
		cfg, err := config.Load(f)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, addr := range listenAddrs(cfg) {
			_, port, err := net.SplitHostPort(addr)
			if err != nil {
				t.Errorf("%s: listen address %q: %v", filepath.Base(f), addr, err)
				continue
			}
			if seen[port] { // one http-server:// port serves several routes of one file
				continue
			}
			seen[port] = true
			if other, taken := owner[port]; taken {
				t.Errorf("%s listens on port %s, which %s uses too: give it a port of its own", filepath.Base(f), port, other)
				continue
			}
			owner[port] = filepath.Base(f)
		}
	}
}

// Every tools: entry of an example is reachable: some MCP server of the file lists it
// (helix mcp list), so that a reader can call it as the file suggests, or an agent
// of the file calls it.
func TestExampleToolsAreReachable(t *testing.T) {
	for _, f := range exampleFiles(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			cfg, err := config.Load(f)
			if err != nil {
				t.Fatal(err)
			}
			agentTools := map[string]bool{}
			for _, ag := range cfg.Agents {
				for _, tl := range ag.Tools {
					if tl.MCPServer == nil {
						agentTools[tl.Name] = true
					}
				}
			}
			code, stdout, stderr := execute(t, "mcp", "list", f)
			if code != ExitOK {
				t.Fatalf("mcp list: exit %d: %s", code, stderr)
			}
			servers, workflows, _ := strings.Cut(stdout, "Available workflows")
			for _, line := range strings.Split(workflows, "\n") {
				fields := strings.Fields(line)
				if len(fields) < 3 || fields[1] != "[tool" || agentTools[fields[0]] {
					continue
				}
				name := strings.NewReplacer("-", "_", ".", "_", "/", "_").Replace(fields[0])
				if !regexp.MustCompile(`[\s,]` + regexp.QuoteMeta(name) + `(,|\s|$)`).MatchString(servers) {
					t.Errorf("tool %s is declared but no MCP server of the file lists it:\n%s", fields[0], stdout)
				}
			}
		})
	}
}
