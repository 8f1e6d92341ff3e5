package report_test

import (
	"context"
	"fmt"

	"github.com/arvenza/helix/internal/report"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
)

// A Go step reports through the exchange's context; whoever runs the exchange puts
// a reporter there (the MCP server does, for each tool call).
func Example() {
	hc := engine.NewContext("example")
	_ = hc.AddWorkflow(&engine.Workflow{
		ID:      "import",
		FromURI: "direct://import",
		Processors: []engine.Processor{engine.ProcessorFunc(func(ctx context.Context, ex *exchange.Exchange) error {
			rows := ex.In().Body().([]any)
			for i := range rows {
				report.Progress(ctx, float64(i+1), float64(len(rows)), "")
			}
			report.Log(ctx, report.LevelInfo, "import", fmt.Sprintf("imported %d rows", len(rows)))
			return nil
		})},
	})
	ctx := context.Background()
	if err := hc.Start(ctx); err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = hc.Stop(ctx) }()

	caller := report.Func{
		OnProgress: func(_ context.Context, current, total float64, _ string) {
			fmt.Printf("progress %g/%g\n", current, total)
		},
		OnLog: func(_ context.Context, level report.Level, logger string, data any) {
			fmt.Printf("%s %s: %v\n", level, logger, data)
		},
	}
	ex := exchange.NewWithBody(exchange.InOut, []any{"a", "b"})
	if err := hc.Send(report.WithReporter(ctx, caller), "direct://import", ex); err != nil {
		fmt.Println(err)
	}
	// Output:
	// progress 1/2
	// progress 2/2
	// info import: imported 2 rows
}
