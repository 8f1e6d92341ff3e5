package step

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/pkg/exchange"
)

// What every step that asks the MCP client (elicit, sample, roots) has in
// common: the question's id (the key of the client's answer on MCP 2026-07-28),
// how long to wait for the answer, and where the answer goes.

// questionIDKey is the id: key of an asking step.
func questionIDKey() config.Key {
	return config.Key{Name: "id", Shape: config.Shape{Type: config.TypeString,
		Description: "The question's id in the input requests of MCP 2026-07-28 (the client answers under it): letters, digits, _ . - only. Absent: one derived from the step's position."}}
}

// askTimeoutKey is the timeout: key of an asking step.
func askTimeoutKey() config.Key {
	return config.Key{Name: "timeout", Shape: config.Shape{Type: config.TypeDuration, Default: "10m",
		Description: "How long to wait for the answer; then the step fails."}}
}

// askIntoKey is the into: key of an asking step; what is what goes there ("the
// answer") and becomes how it otherwise becomes the body ("the answer becomes").
func askIntoKey(what, becomes string) config.Key {
	return config.Key{Name: "into", Shape: config.Shape{Type: config.TypeString,
		Description: fmt.Sprintf("A variable to put %s into, leaving the body unchanged; absent: %s the body.", what, becomes)}}
}

// askSettings are an asking step's id, timeout and into, decoded and checked.
type askSettings struct {
	id      string
	timeout time.Duration
	into    string // "": the answer becomes the body
}

// decodeAskSettings reads the keys of askTimeoutKey, askIntoKey and
// questionIDKey of the step named name; what names the answer in the hint of an
// empty into: ("answer").
func decodeAskSettings(d *config.Decoder, v *config.Values, name, what string) askSettings {
	a := askSettings{timeout: v.Duration("timeout"), into: strings.TrimSpace(v.String("into"))}
	if a.timeout <= 0 {
		a.timeout = defaultAskTimeout
	}
	a.id = questionID(d, v, name)
	if v.Has("into") && a.into == "" {
		d.Errorf(v.NodeOf("into"), v.PathOf("into"), "into: names a variable and must not be empty").Hint = "remove into: to put the " + what + " into the body"
	}
	return a
}

// put puts the answer into the into: variable, or else into the body.
func (a askSettings) put(ex *exchange.Exchange, answer any) {
	if a.into != "" {
		ex.SetVariable(a.into, answer)
	} else {
		ex.In().SetBody(answer)
	}
}

// validQuestionID is what an id: may be: it travels as a key of the client's
// JSON and in logs, so it stays short and plain.
var validQuestionID = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// questionID reads the id: of an asking step (elicit, sample, roots). Without one
// the id is derived from the step's name (its position and kind), so that it is
// the same in every round of one call as long as the configuration is unchanged:
// "elicit-3f2a9c1b".
func questionID(d *config.Decoder, v *config.Values, name string) string {
	if v.Has("id") {
		id := v.String("id")
		if !validQuestionID.MatchString(id) {
			d.Errorf(v.NodeOf("id"), v.PathOf("id"), "id %q is not a valid question id: use 1 to 64 letters, digits, _ . or -", id).Hint = "for example id: user_name"
		}
		return id
	}
	kind := name
	if i := strings.LastIndexByte(name, ' '); i >= 0 {
		kind = name[i+1:]
	}
	sum := sha256.Sum256([]byte(name))
	return kind + "-" + hex.EncodeToString(sum[:4])
}
