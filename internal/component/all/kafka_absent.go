//go:build helix_nokafka

package all

import (
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/pkg/component"
)

// Kafka is left out of this build: its scheme and helix.kafka are refused with the
// reason instead of being unknown.
func init() {
	const why = "built with -tags helix_nokafka"
	component.RegisterAbsent("kafka", why)
	config.DeclareAbsentModuleSettings("kafka", why)
}
