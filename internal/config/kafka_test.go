package config

import (
	"reflect"
	"strings"
	"testing"
)

// helix.kafka.brokers takes a list or one comma-separated string; a broker that
// is not host:port is an error at its own position.
func TestKafkaBrokers(t *testing.T) {
	for text, want := range map[string][]string{
		"helix:\n  kafka:\n    brokers: [k1:9092, \"k2:9093\"]\n": {"k1:9092", "k2:9093"},
		"helix:\n  kafka:\n    brokers: k1:9092,k2:9093\n":        {"k1:9092", "k2:9093"},
		"helix:\n  kafka: {}\n":                                   nil,
	} {
		cfg, errs := load(t, text)
		if errs != nil {
			t.Fatalf("%q: %v", text, errs)
		}
		if !reflect.DeepEqual(cfg.Helix.Kafka.Brokers, want) {
			t.Errorf("%q: brokers %v, want %v", text, cfg.Helix.Kafka.Brokers, want)
		}
	}
	_, errs := load(t, "helix:\n  kafka:\n    brokers:\n      - k1:9092\n      - nohost\n    broker: x\n")
	msg := ""
	if errs != nil {
		msg = errs.Error()
	}
	for _, want := range []string{
		`helix.yaml:5:9: helix.kafka.brokers[1]: broker "nohost" is not host:port (write each broker as host:port`,
		`helix.yaml:6:5: helix.kafka: unknown key "broker" in helix.kafka (did you mean "brokers"?)`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("errors lack %q:\n%s", want, msg)
		}
	}
}
