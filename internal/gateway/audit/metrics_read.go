package audit

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Totals are the counts of one server's audit records, over its sinks.
type Totals struct {
	Written, Retried, Spooled uint64
}

// Totals reads the counters of server as /metrics scrapes them: the sum over
// every auditor of that server name the process ran (the console's MCP page
// shows Auditor.Totals, the running auditor's own).
func (m *Metrics) Totals(server string) Totals {
	if m == nil {
		return Totals{}
	}
	return Totals{Written: sumFor(m.written, server), Retried: sumFor(m.retried, server), Spooled: sumFor(m.spooled, server)}
}

func sumFor(v *prometheus.CounterVec, server string) uint64 {
	ch := make(chan prometheus.Metric, 16)
	go func() { v.Collect(ch); close(ch) }()
	var sum float64
	for pm := range ch {
		var d dto.Metric
		if pm.Write(&d) != nil || d.Counter == nil {
			continue
		}
		for _, l := range d.Label {
			if l.GetName() == "server" && l.GetValue() == server {
				sum += d.Counter.GetValue()
			}
		}
	}
	return uint64(sum)
}

// Totals are what this auditor did with its records since it opened: what
// the console's MCP page shows beside the sink.
func (a *Auditor) Totals() Totals {
	return Totals{Written: a.count.own.written.Load(), Retried: a.count.own.retried.Load(), Spooled: a.count.own.spooled.Load()}
}
