package agent_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/arvenza/helix/internal/component/agent"
	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// As a target, agent://id runs the agent's workflow on the caller's exchange (so
// the run counts with the agent's workflow); a workflow that is not an agent is
// not reachable this way.
func TestTargetRunsTheAgentWorkflow(t *testing.T) {
	hc := engine.NewContext("t")
	comp := agent.New(hc)
	hc.AddComponent(agent.Scheme, comp)
	comp.Declare("echo", "plain")
	_ = hc.AddWorkflow(&engine.Workflow{ID: "echo", FromURI: "agent://echo", Kind: engine.KindAgent, Processors: []engine.Processor{
		engine.ProcessorFunc(func(_ context.Context, ex *exchange.Exchange) error {
			ex.In().SetBody("answer to " + exchange.Stringify(ex.In().Body()))
			ex.In().SetHeader(agent.HeaderIterations, 1)
			return nil
		}),
	}})
	_ = hc.AddWorkflow(&engine.Workflow{ID: "plain", FromURI: "direct://plain"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := hc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer hc.Stop(ctx)

	ex := exchange.NewWithBody(exchange.InOut, "hi")
	if err := hc.Send(ctx, "agent://echo", ex); err != nil {
		t.Fatal(err)
	}
	if ex.In().Body() != "answer to hi" || ex.In().Header(agent.HeaderIterations) != 1 {
		t.Fatalf("body %v headers %v", ex.In().Body(), ex.In().Headers())
	}
	if st := hc.Stats(); len(st.Workflows) == 0 {
		t.Fatal("no stats")
	}
	for _, w := range hc.Stats().Workflows {
		if w.ID == "echo" && w.Exchanges != 1 {
			t.Errorf("echo counted %d exchanges", w.Exchanges)
		}
	}
	err := hc.Send(ctx, "agent://plain", exchange.NewWithBody(exchange.InOut, "hi"))
	if err == nil || !strings.Contains(err.Error(), "no agent with this id") {
		t.Errorf("plain: %v", err)
	}
}

// Once agents are declared, an endpoint naming another id is refused with a
// did-you-mean; as a trigger agent:// is refused for workflows.
func TestEndpointChecks(t *testing.T) {
	hc := engine.NewContext("t")
	comp := agent.New(hc)
	hc.AddComponent(agent.Scheme, comp)
	if _, err := hc.Endpoint("agent://anything"); err != nil {
		t.Errorf("before Declare every id is accepted: %v", err)
	}
	comp.Declare("assistant", "math-agent")
	for raw, want := range map[string]string{
		"agent://asistant":       `no agent with id "asistant"; did you mean "assistant"?`,
		"agent://zzz":            `no agent with id "zzz" (agents: "assistant", "math-agent")`,
		"agent://":               "needs the agent id",
		"agent://math-agent?x=1": "agent:// takes no options",
	} {
		_, err := hc.Endpoint(raw)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", raw, err, want)
		}
	}
	ep, err := hc.Endpoint("agent://assistant")
	if err != nil {
		t.Fatal(err)
	}
	tc, ok := ep.(component.TriggerChecker)
	if !ok || tc.CheckTrigger() == nil || !strings.Contains(tc.CheckTrigger().Error(), "target: agent://assistant") {
		t.Error("agent:// is accepted as a workflow trigger")
	}
	if got := comp.IDs(); strings.Join(got, ",") != "assistant,math-agent" {
		t.Errorf("ids %v", got)
	}
}

type service struct {
	name string
	log  *[]string
	fail bool
}

func (s *service) Start(context.Context) error {
	*s.log = append(*s.log, "start "+s.name)
	if s.fail {
		return errors.New(s.name + " failed")
	}
	return nil
}

func (s *service) Stop(context.Context) error {
	*s.log = append(*s.log, "stop "+s.name)
	return nil
}

// Services start in order with the component and stop in reverse; when one fails
// to start, those started are stopped.
func TestServicesLifecycle(t *testing.T) {
	var log []string
	comp := agent.New(nil)
	comp.AddService(&service{name: "a", log: &log})
	comp.AddService(&service{name: "b", log: &log})
	ctx := context.Background()
	if err := comp.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := comp.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(log, ","); got != "start a,start b,stop b,stop a" {
		t.Errorf("lifecycle %s", got)
	}

	log = nil
	failing := agent.New(nil)
	failing.AddService(&service{name: "a", log: &log})
	failing.AddService(&service{name: "b", log: &log, fail: true})
	if err := failing.Start(ctx); err == nil || err.Error() != "b failed" {
		t.Fatalf("start: %v", err)
	}
	if got := strings.Join(log, ","); got != "start a,start b,stop a" {
		t.Errorf("lifecycle %s", got)
	}
}
