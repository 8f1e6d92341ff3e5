package pattern_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/pattern"
)

// docs/patterns.md shows this example (TestSplitDocsGoExample checks they agree).
func ExampleNewSplit() {
	// Each line of the body, upper-cased, at most 4 lines at once; the results come
	// back in input order.
	upper := engine.ProcessorFunc(func(_ context.Context, ex *exchange.Exchange) error {
		ex.In().SetBody(strings.ToUpper(ex.In().Body().(string)))
		return nil
	})
	split, err := pattern.NewSplit(nil, pattern.SplitLines(),
		pattern.SplitOptions{Parallel: true, MaxConcurrency: 4}, upper)
	if err != nil {
		panic(err)
	}
	defer split.Stop(context.Background())

	ex := exchange.NewWithBody(exchange.InOut, "alpha\nbeta\ngamma\n")
	if err := split.Process(context.Background(), ex); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(ex.In().Body())
	// Output: [ALPHA BETA GAMMA]
}
