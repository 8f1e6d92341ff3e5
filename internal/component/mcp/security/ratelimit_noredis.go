//go:build helix_noredis

package security

func init() {
	rateLimitStores.LeftOut("redis", "helix_noredis")
	rateLimitStores.LeftOut("rediss", "helix_noredis")
}
