//go:build helix_nokafka

package all_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arvenza/helix/pkg/app"
	"github.com/arvenza/helix/pkg/component"
)

// Built with -tags helix_nokafka, kafka:// and helix.kafka are refused with the
// reason at their positions. Run: go test -tags helix_nokafka ./internal/component/all
func TestKafkaLeftOut(t *testing.T) {
	if _, ok := component.Lookup("kafka"); ok {
		t.Fatal("kafka:// is registered in a helix_nokafka build")
	}
	path := filepath.Join(t.TempDir(), "helix.yaml")
	text := "helix:\n  kafka:\n    brokers: k1:9092\nworkflows:\n  - id: w\n    trigger: kafka://orders\n"
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err := app.Load(app.Options{}, path)
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	for _, want := range []string{
		"helix.yaml:3:5: helix.kafka: kafka:// is not available in this build (built with -tags helix_nokafka)",
		"helix.yaml:6:14: workflows[0].trigger: kafka:// is not available in this build (built with -tags helix_nokafka)",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("errors lack %q:\n%s", want, msg)
		}
	}
}
