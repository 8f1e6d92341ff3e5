//go:build helix_nokafka

package all

import "github.com/arvenza/helix/pkg/component"

// Kafka is left out of this build: its scheme and helix.kafka are refused with the
// reason instead of being unknown.
func init() { component.RegisterAbsent("kafka", "built with -tags helix_nokafka") }
