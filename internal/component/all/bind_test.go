package all

import (
	"fmt"
	"strings"
	"testing"

	mcpclient "github.com/arvenza/helix/internal/component/mcp/client"
	mcpserver "github.com/arvenza/helix/internal/component/mcp/server"
	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/engine"
)

// TestEveryComponentBindsItsOptions: every registered component with options reads
// them through exactly one component.Binding whose struct fits the spec (every
// field names a declared option of a fitting type, every option is bound), so no
// component reads an option by a name the compiler cannot check.
func TestEveryComponentBindsItsOptions(t *testing.T) {
	t.Parallel()
	bound := map[*component.Spec][]component.BoundOptions{}
	for _, b := range component.Bindings() {
		bound[b.Spec()] = append(bound[b.Spec()], b)
	}
	for _, s := range Specs() {
		bs := bound[s]
		switch {
		case len(s.Options) == 0 && len(bs) == 0:
			continue
		case len(bs) == 0:
			t.Errorf("%s:// declares options but binds them to no struct (declare var … = component.Bind[yourOptions](Spec))", s.Scheme)
			continue
		case len(bs) > 1:
			t.Errorf("%s:// has %d bindings; read its options through one struct", s.Scheme, len(bs))
		}
		for _, b := range bs {
			if err := b.Check(); err != nil {
				t.Error(err)
			}
		}
	}
}

// TestHostileOptionValuesAreErrorsNotPanics gives every option of every component
// values a careless or hostile user might write: each is accepted or refused with
// an error, nothing panics, and a secret option's value never shows in the error.
func TestHostileOptionValuesAreErrorsNotPanics(t *testing.T) {
	t.Setenv("SLACK_BOT_TOKEN", "xoxb-sample")
	hc := engine.NewContext("hostile")
	Register(hc)
	hc.AddComponent("mcp", mcpclient.New())
	hc.AddComponent("mcp-server", mcpserver.New(hc))
	samples := map[string]string{
		"file": "file://" + t.TempDir(), "http-server": "http-server://127.0.0.1:0/x", "http": "http://h/x",
		"mcp": "mcp://localhost:1/tool", "mcp-server": "mcp-server://127.0.0.1:0", "postgres": "postgres://db/orders",
		"kafka": "kafka://orders", "slack": "slack://ops", "log": "log://x", "timer": "timer://x",
	}
	values := []string{"", "%20", "-1", "0", "9223372036854775807", "9223372036854775808", "-9223372036854775809",
		"99999999999999999999999999", "1e9", "NaN", "-5s", "2562048h", "%00", "%ff", ",,", "*", "off", "TRUE", "Yes",
		"s3cret-" + strings.Repeat("x", 300)}
	for _, sp := range Specs() {
		base, ok := samples[sp.Scheme]
		if !ok {
			if len(sp.Options) > 0 {
				t.Errorf("no sample URI for %s://", sp.Scheme)
			}
			continue
		}
		for _, o := range sp.Options {
			for _, v := range values {
				raw := base + "?" + o.Name + "=" + v
				err := endpointWithoutPanic(hc, raw)
				if err != nil && o.Secret && strings.Contains(err.Error(), "s3cret") {
					t.Errorf("%s: the secret value shows: %v", sp.Scheme+"://…?"+o.Name, err)
				}
				if err != nil && strings.Contains(err.Error(), "panic") {
					t.Errorf("%s: %v", raw, err)
				}
			}
		}
	}
}

func endpointWithoutPanic(hc *engine.Context, raw string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	_, err = hc.Endpoint(raw)
	return err
}
