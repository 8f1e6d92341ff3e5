package step

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/arvenza/helix/internal/ask"
	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

func init() {
	Define(Kind{
		Name: "roots",
		Description: "Asks the MCP client that called the workflow for its roots (roots/list): the directories or other URIs it lets the server work in. " +
			"The list, [{uri, name}, …], becomes the body, or the variable named by into:. Works only in workflows called as MCP tools by a client that supports roots " +
			"(asked as elicit: asks, by a request or, on MCP 2026-07-28, an input request). `roots: files` is short for `roots: {into: files}`; `roots: {}` puts the list into the body.",
		Shape: config.Shape{Type: config.TypeObject, What: "a roots step", Short: "into", Keys: []config.Key{
			{Name: "id", Shape: config.Shape{Type: config.TypeString,
				Description: "The question's id in the input requests of MCP 2026-07-28 (the client answers under it): letters, digits, _ . - only. Absent: one derived from the step's position."}},
			{Name: "timeout", Shape: config.Shape{Type: config.TypeDuration, Default: "10m", Description: "How long to wait for the answer; then the step fails."}},
			{Name: "into", Shape: config.Shape{Type: config.TypeString,
				Description: "A variable to put the roots into, leaving the body unchanged; absent: the roots become the body."}},
		}},
		Build: buildRoots,
	})
}

// rootsStep asks the calling MCP client for its roots:
//
//	steps:
//	  - roots: {into: roots}
type rootsStep struct {
	name    string
	id      string
	timeout time.Duration
	into    string
}

var _ ask.Asker = (*rootsStep)(nil)

func buildRoots(_ *BuildContext, s config.StepConfig, d *config.Decoder, v *config.Values) (engine.Processor, error) {
	st := &rootsStep{name: Name(s), timeout: v.Duration("timeout"), into: strings.TrimSpace(v.String("into"))}
	if st.timeout <= 0 {
		st.timeout = defaultAskTimeout
	}
	st.id = questionID(d, v, st.name)
	if v.Has("into") && st.into == "" {
		d.Errorf(v.NodeOf("into"), v.PathOf("into"), "into: names a variable and must not be empty").Hint = "remove into: to put the roots into the body"
	}
	return st, d.Err()
}

func (r *rootsStep) Name() string     { return r.name }
func (r *rootsStep) AsksClient() bool { return true }

func (r *rootsStep) Process(ctx context.Context, ex *exchange.Exchange) error {
	c := ask.FromContext(ctx)
	if c == nil {
		return fmt.Errorf("roots: %w", ask.ErrNoClient)
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	roots, err := c.Roots(ctx, &ask.RootsQuestion{ID: r.id})
	if err != nil {
		return fmt.Errorf("roots: %w", err)
	}
	// Plain values (maps and lists), as any other step's JSON-like body.
	list := make([]any, len(roots))
	for i, root := range roots {
		m := map[string]any{"uri": root.URI}
		if root.Name != "" {
			m["name"] = root.Name
		}
		list[i] = m
	}
	if r.into != "" {
		ex.SetVariable(r.into, list)
	} else {
		ex.In().SetBody(list)
	}
	return nil
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
