package audit

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Totals are the counts of one server's audit records, over its sinks.
type Totals struct {
	Written, Retried, Spooled uint64
}

// Totals reads the counters of server (the console's MCP page shows them
// beside the sink). It reads the same series /metrics scrapes.
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
