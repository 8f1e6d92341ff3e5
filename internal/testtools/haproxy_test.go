package testtools

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestHAProxyConfigIsValid checks the configurations StartHAProxy writes, plain
// and sticky, with haproxy's own checker (haproxy -c).
func TestHAProxyConfigIsValid(t *testing.T) {
	bin := HAProxyBinary(t)
	servers := []HAProxyServer{{Name: "r1", Addr: "127.0.0.1:3001", CheckPort: 9001}, {Name: "r2", Addr: "127.0.0.1:3002"}}
	for name, opts := range map[string]HAProxyOptions{
		"round robin": {Servers: servers},
		"sticky":      {Servers: servers, StickOnHeader: "Mcp-Session-Id", CheckInterval: time.Second, Fall: 3, Rise: 1},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := haproxyConfig("127.0.0.1:8080", opts)
			file := filepath.Join(t.TempDir(), "haproxy.cfg")
			if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command(bin, "-c", "-f", file).CombinedOutput(); err != nil {
				t.Fatalf("haproxy -c: %v\n%s\nconfiguration:\n%s", err, out, cfg)
			}
			for _, want := range []string{"server r1 127.0.0.1:3001 check port 9001\n", "server r2 127.0.0.1:3002 check\n", "retry-on conn-failure\n"} {
				if !strings.Contains(cfg, want) {
					t.Errorf("configuration lacks %q:\n%s", want, cfg)
				}
			}
			if sticky := strings.Contains(cfg, "stick store-response res.hdr(Mcp-Session-Id)"); sticky != (opts.StickOnHeader != "") {
				t.Errorf("stick table present: %v, want %v:\n%s", sticky, opts.StickOnHeader != "", cfg)
			}
		})
	}
}
