package kafka

import (
	"fmt"
	"net"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/pkg/component"
)

// Settings is helix.kafka: what every kafka:// endpoint starts from.
type Settings struct {
	// Brokers (helix.kafka.brokers: a list, or one string with commas) are the
	// host:port seed brokers of endpoints without a brokers= option; empty means
	// DefaultBrokers.
	Brokers []string
}

func init() {
	config.DeclareModuleSettings(config.ModuleSettings{Name: Scheme, Doc: "Defaults of the kafka:// component.",
		Decode: decodeSettings})
	component.Register(component.Module{Spec: Spec, New: newForApp})
}

// newForApp builds the component of one application with its helix.kafka.
func newForApp(env component.Env) (component.Component, error) {
	o := Options{Logger: env.Logger}
	switch s := env.Settings.(type) {
	case nil:
	case *Settings:
		o.Brokers = s.Brokers
	default:
		return nil, fmt.Errorf("helix.kafka decoded as %T, want *kafka.Settings", env.Settings)
	}
	return New(o), nil
}

func decodeSettings(d *config.Decoder, n *yaml.Node, path string) any {
	s := &Settings{}
	d.Mapping(n, path, "helix.kafka", config.Fields{
		"brokers": func(v *yaml.Node, p string) {
			d.Doc(v, "Seed brokers (host:port) of kafka:// endpoints without a brokers= option. Default "+DefaultBrokers+".")
			s.Brokers = decodeBrokers(d, v, p)
		},
	})
	return s
}

// decodeBrokers reads helix.kafka.brokers: a list of host:port, or one string
// with commas between them.
func decodeBrokers(d *config.Decoder, v *yaml.Node, p string) []string {
	if d.Describing() {
		d.Strings(v, p) // describes the shape: a string or a list of strings
		return nil
	}
	items := []*yaml.Node{d.Resolve(v)}
	if items[0].Kind == yaml.SequenceNode {
		items = items[0].Content
	}
	var out []string
	for i, item := range items {
		ip := p
		if len(items) > 1 || item != d.Resolve(v) {
			ip = config.IndexPath(p, i)
		}
		for _, b := range strings.Split(d.String(item, ip), ",") {
			b = strings.TrimSpace(b)
			if host, port, err := net.SplitHostPort(b); err != nil || host == "" || port == "" {
				d.Errorf(item, ip, "broker %q is not host:port", b).Hint = "write each broker as host:port, for example " + DefaultBrokers
				continue
			}
			out = append(out, b)
		}
	}
	return out
}
