//go:build !helix_nokafka

package all

import _ "github.com/arvenza/helix/internal/component/kafka"
