package audit

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics count what the auditors of every gateway server did with their
// records, by server and sink (log, file, kafka, postgres), for /metrics. One
// Metrics serves all the auditors of an application; a nil *Metrics counts
// nothing.
type Metrics struct {
	written *prometheus.CounterVec
	retried *prometheus.CounterVec
	spooled *prometheus.CounterVec
}

// NewMetrics returns the audit counters; register Collectors on the /metrics
// registry.
func NewMetrics() *Metrics {
	labels := []string{"server", "sink"}
	return &Metrics{
		written: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "helix_gateway_audit_records_written_total",
			Help: "Audit records the sink acknowledged (fsynced, committed, acknowledged by the brokers)."}, labels),
		retried: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "helix_gateway_audit_records_retried_total",
			Help: "Audit records whose write to the sink failed and was tried again."}, labels),
		spooled: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "helix_gateway_audit_records_spooled_total",
			Help: "Audit records kept in the spool file (the queue was full, or the sink had not taken them at shutdown); they are delivered later."}, labels),
	}
}

// Collectors returns what to register on the /metrics registry.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.written, m.retried, m.spooled}
}

// counters are one auditor's series, and its own counts of them: the
// series are shared by every auditor of a server name in the process (an app
// and the one a reload replaced, tests side by side), the counts are this
// auditor's only (see Auditor.Totals).
type counters struct {
	written, retried, spooled prometheus.Counter
	own                       struct{ written, retried, spooled atomic.Uint64 }
}

func (c *counters) addWritten(n int) { c.written.Add(float64(n)); c.own.written.Add(uint64(n)) }
func (c *counters) addRetried(n int) { c.retried.Add(float64(n)); c.own.retried.Add(uint64(n)) }
func (c *counters) addSpooled(n int) { c.spooled.Add(float64(n)); c.own.spooled.Add(uint64(n)) }

func (m *Metrics) counters(server, sink string) *counters {
	if m == nil {
		m = NewMetrics() // counted, never scraped
	}
	return &counters{
		written: m.written.WithLabelValues(server, sink),
		retried: m.retried.WithLabelValues(server, sink),
		spooled: m.spooled.WithLabelValues(server, sink),
	}
}
