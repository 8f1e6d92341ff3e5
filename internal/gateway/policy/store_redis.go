//go:build !helix_noredis

package policy

import "github.com/arvenza/helix/internal/component/mcp/security/redislimit"

// Redis is linked in unless the build leaves its client out (-tags helix_noredis).
func init() {
	openStore = func(o storeOptions) (sharedStore, error) {
		s, err := redislimit.OpenStore(redislimit.StoreOptions{URL: o.url, Namespace: o.namespace, Clock: o.clock, Timeout: o.timeout})
		if err != nil {
			return nil, err // not a typed nil inside the interface
		}
		return s, nil
	}
}
