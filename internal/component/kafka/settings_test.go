package kafka

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/pkg/component"
)

func loadSettings(t *testing.T, text string) (*Settings, error) {
	t.Helper()
	cfg, err := config.LoadBytes("helix.yaml", []byte(text))
	var errs config.Errors
	if err != nil && !errors.As(err, &errs) {
		t.Fatalf("want config.Errors, got %T: %v", err, err)
	}
	if cfg == nil {
		return nil, err
	}
	s, _ := cfg.Helix.Modules[Scheme].(*Settings)
	return s, err
}

// helix.kafka.brokers takes a list or one comma-separated string; a broker that
// is not host:port is an error at its own position.
func TestSettingsBrokers(t *testing.T) {
	for text, want := range map[string][]string{
		"helix:\n  kafka:\n    brokers: [k1:9092, \"k2:9093\"]\n": {"k1:9092", "k2:9093"},
		"helix:\n  kafka:\n    brokers: k1:9092,k2:9093\n":        {"k1:9092", "k2:9093"},
		"helix:\n  kafka: {}\n":                                   nil,
	} {
		s, err := loadSettings(t, text)
		if err != nil || s == nil {
			t.Fatalf("%q: settings %v, error %v", text, s, err)
		}
		if !reflect.DeepEqual(s.Brokers, want) {
			t.Errorf("%q: brokers %v, want %v", text, s.Brokers, want)
		}
	}
	_, err := loadSettings(t, "helix:\n  kafka:\n    brokers:\n      - k1:9092\n      - nohost\n    broker: x\n")
	msg := ""
	if err != nil {
		msg = err.Error()
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

// The component built by the module's registration connects to helix.kafka.brokers;
// without the block it uses DefaultBrokers.
func TestModuleBuildsWithSettings(t *testing.T) {
	c, err := newForApp(componentEnv(&Settings{Brokers: []string{"k1:9092"}}))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.(*Component).brokers; !reflect.DeepEqual(got, []string{"k1:9092"}) {
		t.Errorf("brokers %v, want helix.kafka's", got)
	}
	c, _ = newForApp(componentEnv(nil))
	if got := c.(*Component).brokers; !reflect.DeepEqual(got, []string{DefaultBrokers}) {
		t.Errorf("brokers %v without settings, want the default", got)
	}
	if _, err := newForApp(componentEnv("not settings")); err == nil {
		t.Error("settings of another type were taken")
	}
}

func componentEnv(settings any) component.Env { return component.Env{Settings: settings} }

// Malformed helix.kafka blocks are errors at their position, never a panic.
func TestSettingsMalformed(t *testing.T) {
	for text, want := range map[string]string{
		"helix:\n  kafka: 5\n":                      "helix.yaml:2:10: helix.kafka",
		"helix:\n  kafka: [k1:9092]\n":              "helix.yaml:2:10: helix.kafka",
		"helix:\n  kafka:\n    brokers: {a: b}\n":   "helix.yaml:3:14: helix.kafka.brokers",
		"helix:\n  kafka:\n    brokers: [[k1]]\n":   "helix.yaml:3:15: helix.kafka.brokers[0]",
		"helix:\n  kafka:\n    brokers: \"\"\n":     `helix.yaml:3:14: helix.kafka.brokers: broker "" is not host:port`,
		"helix:\n  kafka:\n    brokers: k1:9092,\n": `broker "" is not host:port`,
	} {
		_, err := loadSettings(t, text)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want one containing %q", text, err, want)
		}
	}
	if s, err := loadSettings(t, "helix:\n  kafka:\n"); err != nil || s == nil || s.Brokers != nil {
		t.Errorf("an empty helix.kafka: settings %+v, error %v", s, err)
	}
}
