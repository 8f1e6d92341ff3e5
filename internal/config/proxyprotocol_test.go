package config

import "testing"

func TestProxyProtocolKey(t *testing.T) {
	cfg, errs := load(t, `
mcps:
  - id: s
    trusted_proxies: [10.0.0.0/8]
    proxy_protocol: true
helix:
  mcp:
    servers:
      - enabled: true
        id: t
        proxy_protocol: false
`)
	if errs != nil {
		t.Fatal(errs)
	}
	if !cfg.MCPs[0].Security.ProxyProtocol {
		t.Error("proxy_protocol: true was not read")
	}
	if _, errs := load(t, "mcps:\n  - id: s\n    proxy_protocol: perhaps\n"); errs == nil {
		t.Error("proxy_protocol: perhaps was accepted")
	}
}
