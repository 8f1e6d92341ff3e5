package exchange

import (
	"errors"

	"github.com/arvenza/helix/internal/redact"
)

// ClientMessager is implemented by errors that know what the sender of the exchange
// may be told: Error() is for logs and may name files, YAML positions and steps;
// ClientMessage() is the same failure without them.
type ClientMessager interface {
	ClientMessage() string
}

// ClientMessage returns the text of err for whoever sent the exchange (an MCP
// client, an HTTP caller): the ClientMessage of the outermost error in the chain that
// has one, else err.Error(). Components answer with it and log err itself, so the
// log keeps the position while the client sees only the message.
func ClientMessage(err error) string {
	if err == nil {
		return ""
	}
	var cm ClientMessager
	if errors.As(err, &cm) {
		return redact.Text(cm.ClientMessage())
	}
	return redact.Text(err.Error())
}
