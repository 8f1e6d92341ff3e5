package app_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/arvenza/helix/internal/console/browsertest"
	"github.com/arvenza/helix/internal/testtools"
	"github.com/arvenza/helix/pkg/exchange"
)

const nestedYAML = `
helix:
  console:
    auth:
      api_keys:
        - {key: viewer-key-123, name: vera}
workflows:
  - id: route
    trigger: direct://route
    steps:
      - choice:
          when:
            - starlang: body == "big"
              steps:
                - set-body: large
          otherwise:
            steps:
              - set-body: small
      - multicast:
          strategy: parallel
          steps:
            - set-body: one
            - set-body: two
      - log: done
  - id: each
    trigger: direct://each
    steps:
      - split:
          stop_on_error: false
          steps:
            - transform:
                starlang: |
                  fail("no c") if payload == "c" else payload
`

// nestedCounts reads a workflow's live counts JSON as the page's script does
// and returns the nested steps' counts by their node's position, with the
// positions of the graph's nodes from the page's own model.
func nestedCounts(t *testing.T, base, id string, nodes map[string]int) map[string]uint64 {
	t.Helper()
	resp, body := consoleGet(t, http.DefaultClient, base+"/workflows/"+id+"/counts", "Authorization", "Bearer viewer-key-123")
	if resp.StatusCode != 200 {
		t.Fatalf("counts of %s: %d %s", id, resp.StatusCode, body)
	}
	var got struct {
		Nested map[string]struct{ Count, Errors uint64 }
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	out := map[string]uint64{}
	for where, n := range nodes {
		c := got.Nested[strconv.Itoa(n)]
		out[where] = c.Count
		out[where+" errors"] = c.Errors
	}
	return out
}

// Nested steps are traced through the real engine: a choice counts on the
// branch taken only, a multicast's branches each once, a split's step once
// per element, and a failing element as an error of that step.
func TestConsoleCountsNestedSteps(t *testing.T) {
	t.Parallel()
	a, err := buildYAML(t, nestedYAML)
	if err != nil {
		t.Fatal(err)
	}
	startBuilt(t, a)
	u, _ := url.Parse(a.ConsoleURL())
	base := "http://" + u.Host + "/console"
	// The graph's node numbers: the trigger is 0, then every step in the
	// order of the file.
	route := map[string]int{"large": 2, "small": 3, "one": 5, "two": 6}
	each := map[string]int{"transform": 2}

	run := func(id, body string) error {
		return a.Context().Run(t.Context(), id, exchange.NewWithBody(exchange.InOut, body))
	}
	if err := run("route", "big"); err != nil {
		t.Fatal(err)
	}
	got := nestedCounts(t, base, "route", route)
	if got["large"] != 1 || got["small"] != 0 || got["one"] != 1 || got["two"] != 1 {
		t.Fatalf("after one big: %v", got)
	}
	for i := 0; i < 2; i++ {
		if err := run("route", "tiny"); err != nil {
			t.Fatal(err)
		}
	}
	got = nestedCounts(t, base, "route", route)
	if got["large"] != 1 || got["small"] != 2 || got["one"] != 3 || got["two"] != 3 {
		t.Fatalf("after one big and two tiny: %v", got)
	}

	ex := exchange.New(exchange.InOut)
	ex.In().SetBody([]any{"a", "b", "c"})
	_ = a.Context().Run(t.Context(), "each", ex) // the element "c" fails
	got = nestedCounts(t, base, "each", each)
	if got["transform"] != 3 || got["transform errors"] != 1 {
		t.Fatalf("split over three elements, one failing: %v", got)
	}
}

// The open page of a workflow with a choice: as exchanges take one branch,
// that branch's step counts rise (workflow.js polls the live JSON) and the
// other branch's step still says it has not run, in words.
func TestConsoleChoiceBranchCountsInABrowser(t *testing.T) {
	t.Parallel()
	a, err := buildYAML(t, nestedYAML)
	if err != nil {
		t.Fatal(err)
	}
	startBuilt(t, a)
	link, _ := url.Parse(a.ConsoleURL())
	base := link.Scheme + "://" + link.Host + "/console"
	b := browsertest.New(t, 1280, 800)
	b.Visit(a.ConsoleURL()) // the printed link signs the browser in
	b.Visit(base + "/workflows/route")
	label := func(sel string) string {
		t.Helper()
		r, err := browsertest.Get(b, 10*time.Second, chromedp.AttributeValue(chromedp.CSS(sel), "aria-label"))
		if err != nil {
			t.Fatalf("aria-label of %s: %v", sel, err)
		}
		return r.Value
	}
	// Nodes 2 and 3: the when branch's set-body and the otherwise's.
	large, small := `a[data-nested="2"]`, `a[data-nested="3"]`
	if l := label(large); !strings.HasPrefix(l, "set-body large, at ") || !strings.HasSuffix(l, "no runs yet") {
		t.Fatalf("the when branch's step: %q", l)
	}
	for i := 0; i < 3; i++ {
		if err := a.Context().Run(t.Context(), "route", exchange.NewWithBody(exchange.InOut, "tiny")); err != nil {
			t.Fatal(err)
		}
	}
	testtools.Eventually(t, "the otherwise branch's step to show 3 runs", func() bool {
		return strings.Contains(label(small), ", 3 runs · 0 errors · p99 ")
	})
	if l := label(large); !strings.HasSuffix(l, "no runs yet") {
		t.Errorf("the branch not taken counts runs: %q", l)
	}
	if got := b.Text(`td[data-nested="3"]`); !strings.HasPrefix(got, "3 runs · 0 errors") {
		t.Errorf("the node table's count of the otherwise step: %q", got)
	}
	if err := a.Context().Run(t.Context(), "route", exchange.NewWithBody(exchange.InOut, "big")); err != nil {
		t.Fatal(err)
	}
	testtools.Eventually(t, "the when branch's step to show 1 run", func() bool {
		return strings.Contains(label(large), ", 1 run · 0 errors · p99 ")
	})
	if l := label(small); !strings.Contains(l, ", 3 runs ·") {
		t.Errorf("the otherwise step after a big one: %q", l)
	}
	noPageErrors(t, b, "/workflows/route")
}
