package componenttest

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/exchange"
)

// The stress mode (Features.Stress, subtests Stress/Producer and Stress/Consumer)
// pushes many concurrent exchanges through several producer/consumer pairs at once —
// each pair its own fixture from Harness.Setup — and checks that every message
// arrives exactly once, at its own pair, and that every reply belongs to its
// request. It looks for races and lost or doubled messages, not for speed: run it
// with -race. The default size is small enough for every `go test` run; a bigger run:
//
//	HELIX_STRESS=20000 go test -race ./pkg/component/...
//	go test -race ./internal/component/direct -componenttest.stress=20000
//
// Like every subtest of the suite, a stress subtest runs alone and checks with
// goleak that it leaves no goroutine behind; its parallelism is inside it.

// StressEnv names the environment variable that sets the number of messages per
// pair and direction of the stress subtests (the -componenttest.stress flag wins).
const StressEnv = "HELIX_STRESS"

// DefaultStressMessages is the number of messages per pair and direction when
// neither the flag nor StressEnv sets it.
const DefaultStressMessages = 50

const (
	stressPairs   = 4 // fixtures used at once
	stressWorkers = 4 // concurrent senders per pair
)

// stressWait bounds the wait for the last messages of a pair; the suite's own
// test lowers it for its deliberately lossy component.
var stressWait = Timeout

var stressFlag = flag.Int("componenttest.stress", 0,
	"messages per producer/consumer pair in the componenttest Stress subtests (default "+
		strconv.Itoa(DefaultStressMessages)+"; also "+StressEnv+")")

// stressMessages is the size of a stress run.
func stressMessages(t *testing.T) int {
	t.Helper()
	if *stressFlag < 0 {
		t.Fatalf("-componenttest.stress=%d: want a positive number of messages per pair", *stressFlag)
	}
	if *stressFlag > 0 {
		return *stressFlag
	}
	if v := os.Getenv(StressEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			t.Fatalf("%s=%q: want a positive number of messages per pair", StressEnv, v)
		}
		return n
	}
	return DefaultStressMessages
}

// stressFixtures returns fx and stressPairs-1 more fixtures from h.Setup.
func stressFixtures(t *testing.T, h Harness, fx *Fixture) []*Fixture {
	t.Helper()
	out := []*Fixture{fx}
	for len(out) < stressPairs {
		f := h.Setup(t)
		if f == nil || f.Component == nil || f.URI == "" {
			t.Fatal("componenttest: Setup must return a fixture with Component and URI")
		}
		out = append(out, f)
	}
	return out
}

func stressBody(pair, i int) string { return fmt.Sprintf("stress-p%d-%06d", pair, i) }

// sendAll runs send for every message of one pair on stressWorkers goroutines.
func sendAll(wg *sync.WaitGroup, pair, n int, send func(body string)) {
	for w := range stressWorkers {
		wg.Go(func() {
			for i := w; i < n; i += stressWorkers {
				send(stressBody(pair, i))
			}
		})
	}
}

// tally counts the bodies one pair's receiving side saw.
type tally struct {
	mu     sync.Mutex
	counts map[string]int
	total  int
	want   int
	done   chan struct{} // closed when want messages arrived
}

func newTally(want int) *tally {
	return &tally{counts: map[string]int{}, want: want, done: make(chan struct{})}
}

func (c *tally) add(body string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts[body]++
	c.total++
	if c.total == c.want {
		close(c.done)
	}
}

// wait waits until the expected number of messages arrived, then a moment more
// for a message that arrives twice; it returns false when they did not arrive
// before ctx (the suite's stressWait from the end of sending) ended.
func (c *tally) wait(ctx context.Context) bool {
	select {
	case <-c.done:
	case <-ctx.Done():
		return false
	}
	// A correct component delivers nothing more; the pause gives a wrong one the
	// time to deliver a duplicate (as Consumer/NothingAfterStop does).
	time.Sleep(100 * time.Millisecond)
	return true
}

func (c *tally) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.counts))
	for k, v := range c.counts {
		out[k] = v
	}
	return out
}

// exactlyOnce compares what pair received with the n messages sent to it: every
// one once, none twice, none of another pair. It returns one line per problem
// (at most a few of each kind, then a count).
func exactlyOnce(pair, n int, got map[string]int) []string {
	var missing, doubled, foreign []string
	for i := range n {
		body := stressBody(pair, i)
		switch c := got[body]; {
		case c == 0:
			missing = append(missing, body)
		case c > 1:
			doubled = append(doubled, fmt.Sprintf("%s (%d times)", body, c))
		}
	}
	prefix := stressBody(pair, 0)[:len("stress-p")+len(strconv.Itoa(pair))+1]
	for body := range got {
		if !strings.HasPrefix(body, prefix) {
			foreign = append(foreign, body)
		} else if i, err := strconv.Atoi(body[len(prefix):]); err != nil || i >= n {
			foreign = append(foreign, body)
		}
	}
	sort.Strings(foreign)
	var out []string
	report := func(what string, list []string) {
		if len(list) == 0 {
			return
		}
		shown := list
		if len(shown) > 5 {
			shown = shown[:5]
		}
		out = append(out, fmt.Sprintf("pair %d: %d of %d messages %s: %s", pair, len(list), n, what, strings.Join(shown, ", ")))
	}
	report("lost", missing)
	report("delivered more than once", doubled)
	report("not sent to this pair", foreign)
	return out
}

func testStressProducer(t *testing.T, h Harness, fx *Fixture) {
	n := stressMessages(t)
	fixtures := stressFixtures(t, h, fx)
	pattern := exchange.InOnly
	if h.Features.RequestReply {
		pattern = exchange.InOut
	}
	ctx := testCtx(t)
	tallies := make([]*tally, len(fixtures))
	stop := make(chan struct{}) // closed once the waits are over
	var collectors, senders sync.WaitGroup
	for pair, f := range fixtures {
		got := listen(t, f)
		p := startProducer(t, f)
		c := newTally(n)
		tallies[pair] = c
		// Drain the peer while sending: its channel holds far fewer than n.
		collectors.Go(func() {
			for {
				select {
				case m := <-got:
					c.add(m.Body)
				case <-ctx.Done():
					return
				case <-stop:
					return
				case <-time.After(300 * time.Millisecond):
					select {
					case <-c.done:
						return // all arrived and nothing more for a while
					default:
					}
				}
			}
		})
		sendAll(&senders, pair, n, func(body string) {
			ex := f.newExchange(pattern, body)
			if err := p.Process(ctx, ex); err != nil {
				t.Errorf("pair %d: send %s: %v", pair, body, err)
				return
			}
			if h.Features.RequestReply {
				if r := exchange.Stringify(ex.In().Body()); r != ReplyPrefix+body {
					t.Errorf("pair %d: send %s: reply %q belongs to another request", pair, body, r)
				}
			}
		})
	}
	senders.Wait()
	waitCtx, cancel := context.WithTimeout(ctx, stressWait)
	defer cancel()
	for pair, c := range tallies {
		if !c.wait(waitCtx) {
			t.Errorf("pair %d: %d of %d messages arrived within %s", pair, len(c.snapshot()), n, stressWait)
		}
	}
	close(stop)
	collectors.Wait()
	for pair, c := range tallies {
		for _, p := range exactlyOnce(pair, n, c.snapshot()) {
			t.Error(p)
		}
	}
}

func testStressConsumer(t *testing.T, h Harness, fx *Fixture) {
	n := stressMessages(t)
	fixtures := stressFixtures(t, h, fx)
	ctx := testCtx(t)
	tallies := make([]*tally, len(fixtures))
	consumers := make([]component.Consumer, len(fixtures))
	for pair, f := range fixtures {
		if f.Send == nil {
			t.Fatal("componenttest: Fixture.Send is required for consumers that are not self-triggering")
		}
		c := newTally(n)
		tallies[pair] = c
		consumers[pair] = startConsumer(t, h, f, component.ProcessorFunc(func(_ context.Context, ex *exchange.Exchange) error {
			body := exchange.Stringify(ex.In().Body())
			c.add(body)
			ex.In().SetBody(ReplyPrefix + body)
			ex.In().SetHeader(ReplyHeader, "yes")
			return nil
		}))
	}
	var senders sync.WaitGroup
	for pair, f := range fixtures {
		sendAll(&senders, pair, n, func(body string) {
			reply, err := f.Send(ctx, Message{Body: body})
			if err != nil {
				t.Errorf("pair %d: send %s: %v", pair, body, err)
				return
			}
			if h.Features.RequestReply && reply.Body != ReplyPrefix+body {
				t.Errorf("pair %d: send %s: reply %q belongs to another request", pair, body, reply.Body)
			}
		})
	}
	senders.Wait()
	waitCtx, cancel := context.WithTimeout(ctx, stressWait)
	defer cancel()
	for pair, c := range tallies {
		if !c.wait(waitCtx) {
			t.Errorf("pair %d: the consumer processed %d of %d messages within %s", pair, len(c.snapshot()), n, stressWait)
		}
	}
	for pair, c := range consumers {
		stopConsumer(t, c)
		for _, p := range exactlyOnce(pair, n, tallies[pair].snapshot()) {
			t.Error(p)
		}
	}
}
