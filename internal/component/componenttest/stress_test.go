package componenttest

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arvenza/helix/internal/component/direct"
	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

// faultEnv makes TestStressFaultChild run the suite's stress subtests against a
// direct:// component that loses or doubles every seventh message.
const faultEnv = "COMPONENTTEST_FAULT"

// The stress subtests must fail for a component that loses or doubles messages;
// the failing run happens in a child process so that this test can look at it.
func TestStressCatchesLostAndDoubledMessages(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a child test process")
	}
	for fault, want := range map[string]string{
		"lose":   "messages lost: stress-p",
		"double": "messages delivered more than once: stress-p",
	} {
		t.Run(fault, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(os.Args[0], "-test.run=^TestStressFaultChild$/^Stress/", "-test.count=1", "-test.v")
			cmd.Env = append(os.Environ(), faultEnv+"="+fault, StressEnv+"=70")
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the stress subtests passed against a component that does %q:\n%s", fault, out)
			}
			for _, sub := range []string{"Stress/Producer", "Stress/Consumer"} {
				if !strings.Contains(string(out), "--- FAIL: TestStressFaultChild/"+sub) {
					t.Errorf("%s did not fail:\n%s", sub, out)
				}
			}
			if !strings.Contains(string(out), want) {
				t.Errorf("output does not say %q:\n%s", want, out)
			}
		})
	}
}

func TestStressFaultChild(t *testing.T) {
	fault := os.Getenv(faultEnv)
	if fault == "" {
		t.Skip("run by TestStressCatchesLostAndDoubledMessages")
	}
	stressWait = 2 * time.Second // lost messages never come
	Run(t, Harness{
		Features: InProcessFeatures,
		Setup: func(t *testing.T) *Fixture {
			return InProcessFixture(t, &faultyComponent{Component: direct.New(), fault: fault}, "direct://stress")
		},
	})
}

// faultyComponent wraps a component so that every seventh exchange a consumer
// receives is dropped ("lose": the processor is not called) or processed twice
// ("double").
type faultyComponent struct {
	component.Component
	fault string
	n     atomic.Int64
}

func (c *faultyComponent) CreateEndpoint(u *uri.URI) (component.Endpoint, error) {
	ep, err := c.Component.CreateEndpoint(u)
	if err != nil {
		return nil, err
	}
	return faultyEndpoint{Endpoint: ep, c: c}, nil
}

type faultyEndpoint struct {
	component.Endpoint
	c *faultyComponent
}

func (e faultyEndpoint) CreateConsumer(p component.Processor) (component.Consumer, error) {
	return e.Endpoint.CreateConsumer(component.ProcessorFunc(func(ctx context.Context, ex *exchange.Exchange) error {
		if e.c.n.Add(1)%7 != 0 {
			return p.Process(ctx, ex)
		}
		switch e.c.fault {
		case "lose":
			return nil
		case "double":
			if err := p.Process(ctx, exchange.NewWithBody(ex.Pattern(), ex.In().Body())); err != nil {
				return err
			}
		}
		return p.Process(ctx, ex)
	}))
}
