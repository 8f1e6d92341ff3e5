package durable

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// StateCounter is implemented by stores that count their runs by state in one
// query; /metrics asks it at every scrape.
type StateCounter interface {
	CountByState(ctx context.Context) (map[State]int, error)
}

// Metrics are the durable runtime's measurements for /metrics. The runtime
// observes checkpoints and resumptions; takeover counts what it took over. A nil
// *Metrics observes nothing, so code that runs without metrics needs no check.
type Metrics struct {
	checkpoint prometheus.Histogram
	resume     prometheus.Histogram
	takeovers  prometheus.Counter
	taken      prometheus.Counter
	counter    StateCounter
}

// NewMetrics returns the durable metrics; counter, when not nil, answers
// helix_durable_runs (runs by state) and helix_durable_runs_parked at scrape time.
func NewMetrics(counter StateCounter) *Metrics {
	return &Metrics{
		checkpoint: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "helix_durable_checkpoint_seconds",
			Help:    "Time to checkpoint one top-level step of a durable run (encode the exchange and write it to the store).",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, 1}}),
		resume: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "helix_durable_resume_seconds",
			Help:    "Time a resumed durable run (after a crash, a takeover or helix runs resume) takes from the start of its new execution to its first step that runs anew: the replay of its checkpoints.",
			Buckets: []float64{.001, .005, .01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}}),
		takeovers: prometheus.NewCounter(prometheus.CounterOpts{Name: "helix_durable_takeovers_total",
			Help: "Replicas found dead whose runs this replica handed back to the queue."}),
		taken: prometheus.NewCounter(prometheus.CounterOpts{Name: "helix_durable_taken_over_runs_total",
			Help: "Runs of dead replicas this replica handed back to the queue."}),
		counter: counter,
	}
}

// ObserveCheckpoint records how long one step's checkpoint took.
func (m *Metrics) ObserveCheckpoint(d time.Duration) {
	if m != nil {
		m.checkpoint.Observe(d.Seconds())
	}
}

// ObserveResume records how long a resumed run took to replay its checkpoints
// up to its first step that runs anew.
func (m *Metrics) ObserveResume(d time.Duration) {
	if m != nil {
		m.resume.Observe(d.Seconds())
	}
}

// TookOver counts the runs of one dead executor handed back to the queue; it
// fits [Takeover.Taken].
func (m *Metrics) TookOver(_ string, ids []string) {
	if m != nil {
		m.takeovers.Inc()
		m.taken.Add(float64(len(ids)))
	}
}

// Collectors returns what to register on the /metrics registry.
func (m *Metrics) Collectors() []prometheus.Collector {
	cs := []prometheus.Collector{m.checkpoint, m.resume, m.takeovers, m.taken}
	if m.counter != nil {
		cs = append(cs, &stateCollector{counter: m.counter})
	}
	return cs
}

var (
	descRuns = prometheus.NewDesc("helix_durable_runs",
		"Durable runs the store keeps, by state (working, input_required, waiting, completed, failed, cancelled).", []string{"state"}, nil)
	descParked = prometheus.NewDesc("helix_durable_runs_parked",
		"Durable runs parked on a wait (input_required and waiting), holding no goroutine.", nil, nil)
)

// scrapeTimeout bounds the store's count at a scrape: a slow store costs the
// scrape these two families, not the whole of /metrics.
const scrapeTimeout = 2 * time.Second

// stateCollector asks the store for its runs by state at each scrape.
type stateCollector struct{ counter StateCounter }

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descRuns
	ch <- descParked
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	counts, err := c.counter.CountByState(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(descRuns, err)
		return
	}
	for _, s := range []State{StateWorking, StateInputRequired, StateWaiting, StateCompleted, StateFailed, StateCancelled} {
		ch <- prometheus.MustNewConstMetric(descRuns, prometheus.GaugeValue, float64(counts[s]), string(s))
	}
	ch <- prometheus.MustNewConstMetric(descParked, prometheus.GaugeValue, float64(counts[StateInputRequired]+counts[StateWaiting]))
}
