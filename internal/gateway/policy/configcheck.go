package policy

import "github.com/arvenza/helix/internal/config"

// The YAML decoder checks rate: and quota: with the parsers the Guard uses, so
// that what loads is what runs.
func init() {
	config.RegisterValueCheck(config.CheckGatewayRate, func(s string) (string, string) {
		if _, err := ParseRate(s); err != nil {
			return err.Error(), "a rate is per caller and tool: a bucket of n calls refilled n per period"
		}
		return "", ""
	})
	config.RegisterValueCheck(config.CheckGatewayQuota, func(s string) (string, string) {
		if _, err := ParseQuota(s); err != nil {
			return err.Error(), "a quota is per caller and tool, counted in fixed windows (a day is a UTC day)"
		}
		return "", ""
	})
}
