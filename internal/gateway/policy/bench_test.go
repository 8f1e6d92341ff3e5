package policy

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/arvenza/helix/internal/config"
)

// What a policy adds to one call on the relay's path: nothing matching, an
// allow with a rate, an argument guard, an output guard.
func BenchmarkBefore(b *testing.B) {
	for _, bc := range []struct {
		name  string
		rules []config.PolicyConfig
	}{
		{"no-match", []config.PolicyConfig{{Tools: []string{"other.*"}, Rate: "10/s"}}},
		{"allow+rate", []config.PolicyConfig{{Tools: []string{"github.*"}, Allow: &config.PrincipalMatch{Roles: []string{"support"}}, Rate: "1000000000/s"}}},
		{"argument-guard", []config.PolicyConfig{{Tools: []string{"github.*"}, Arguments: `if "password" in args: reject("no")`}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			g, err := New("gw", bc.rules, Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer g.Close()
			args := json.RawMessage(`{"title":"a ticket","body":"text"}`)
			b.ReportAllocs()
			for b.Loop() {
				c := call(alice, "github.create_issue", "")
				c.Arguments = args
				if err := g.Before(context.Background(), c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkAfterMasking(b *testing.B) {
	g, err := New("gw", []config.PolicyConfig{{Tools: []string{"*"}, Result: `result = redact(result, r"\b\d{3}-\d{2}-\d{4}\b")`}}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	res := json.RawMessage(`{"content":[{"type":"text","text":"SSN 123-45-6789 of the customer"}],"isError":false}`)
	c := call(alice, "crm.lookup", `{}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := g.After(context.Background(), c, res); err != nil {
			b.Fatal(err)
		}
	}
}
