package pipeline_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/arvenza/helix/internal/component/pipeline"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// startStop records the order of Start and Stop.
type startStop struct{ log *[]string }

func (s startStop) Start(context.Context) error { *s.log = append(*s.log, "start"); return nil }
func (s startStop) Stop(context.Context) error  { *s.log = append(*s.log, "stop"); return nil }

func TestTargetQueriesThePipelineWorkflow(t *testing.T) {
	hc := engine.NewContext("t")
	comp := pipeline.New(hc)
	hc.AddComponent(pipeline.Scheme, comp)
	comp.Declare("docs", "plain")
	var log []string
	comp.AddService(startStop{&log})
	_ = hc.AddWorkflow(&engine.Workflow{ID: "docs", FromURI: "pipeline://docs", Kind: engine.KindPipeline, Processors: []engine.Processor{
		engine.ProcessorFunc(func(_ context.Context, ex *exchange.Exchange) error {
			ex.In().SetBody("[1] a.md\nabout " + exchange.Stringify(ex.In().Body()))
			return nil
		}),
	}})
	_ = hc.AddWorkflow(&engine.Workflow{ID: "plain", FromURI: "direct://plain"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := hc.Start(ctx); err != nil {
		t.Fatal(err)
	}
	ex := exchange.NewWithBody(exchange.InOut, "install")
	if err := hc.Send(ctx, "pipeline://docs", ex); err != nil {
		t.Fatal(err)
	}
	if ex.In().Body() != "[1] a.md\nabout install" {
		t.Fatalf("body %v", ex.In().Body())
	}
	err := hc.Send(ctx, "pipeline://plain", exchange.NewWithBody(exchange.InOut, "hi"))
	if err == nil || !strings.Contains(err.Error(), "no pipeline with this id") {
		t.Errorf("plain: %v", err)
	}
	if err := hc.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if strings.Join(log, ",") != "start,stop" {
		t.Errorf("service lifecycle = %v", log)
	}
}

func TestEndpointErrors(t *testing.T) {
	comp := pipeline.New(nil)
	comp.Declare("doc-search")
	for raw, want := range map[string]string{
		"pipeline://doc-serch": `did you mean "doc-search"?`,
		"pipeline://":          "needs the pipeline id",
	} {
		u, err := uri.Parse(raw)
		if err != nil {
			continue // the parser refuses it already
		}
		if _, err := comp.CreateEndpoint(u); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", raw, err, want)
		}
	}
	u, _ := uri.Parse("pipeline://doc-search")
	ep, err := comp.CreateEndpoint(u)
	if err != nil {
		t.Fatal(err)
	}
	tc, ok := ep.(interface{ CheckTrigger() error })
	if !ok {
		t.Fatal("no CheckTrigger")
	}
	if err := tc.CheckTrigger(); err == nil || !strings.Contains(err.Error(), "rag-retrieve") {
		t.Errorf("CheckTrigger = %v", err)
	}
}
