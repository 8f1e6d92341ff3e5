package config

import (
	"net/url"
	"strings"

	"go.yaml.in/yaml/v3"
)

// CallbacksConfig is `helix.callbacks`: the route that resolves the waits of
// approve:, await: and elicit: steps by a signed link (internal/durable).
type CallbacksConfig struct {
	// URL is helix.callbacks.url: the callback route's address as seen from
	// outside (https://helix.example.com); "" means the management server's.
	URL string
	// Secret is helix.callbacks.secret: the key that signs the links; ""
	// means a random key kept in <data_dir>/callbacks.key.
	Secret string
	Pos    Pos
}

var callbacksShape = Shape{Type: TypeObject, What: "helix.callbacks",
	Description: "The links that resolve the waits of approve:, await: and elicit: steps (docs/durability.md): served on the management listener under /helix/callbacks/.",
	Keys: []Key{
		{Name: "url", Shape: str("The management listener's address as the people and systems that follow a link reach it, e.g. https://helix.example.com behind a reverse proxy that forwards /helix/callbacks/. Default: http://<helix.management.addr>.")},
		{Name: "secret", Shape: str("The key that signs the links, at least 32 characters; write it as ${env:NAME}. Replicas must share it. Default: a random key created in <helix.data_dir>/callbacks.key at the first start.")},
	}}

// decodeCallbacks reads helix.callbacks into c.
func decodeCallbacks(d *Decoder, n *yaml.Node, path string, c *CallbacksConfig) {
	v := d.Decode(n, path, "helix.callbacks", &callbacksShape)
	if d.desc != nil {
		return
	}
	c.Pos = d.Pos(n)
	c.URL, c.Secret = strings.TrimRight(v.String("url"), "/"), v.String("secret")
	if un := v.NodeOf("url"); un != nil {
		if u, err := url.Parse(c.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			d.Errorf(un, v.PathOf("url"), "url: want an http or https address such as https://helix.example.com")
		}
	}
	if sn := v.NodeOf("secret"); sn != nil && len(c.Secret) < 32 {
		d.Errorf(sn, v.PathOf("secret"), "the secret is too short to sign links: use at least 32 characters").Hint = "for example secret: ${env:HELIX_CALLBACK_SECRET} with the output of `openssl rand -hex 32`"
	}
}
