package app

import "github.com/arvenza/helix/internal/gateway/audit"

// auditMetrics count the records of every gateway server's audit:
// (internal/gateway/audit: written, retried, spooled, by server and sink) for
// /metrics. One set for the process, as the replay budget's: each App
// registers it on its own registry, and audit.New takes it in Options.Metrics.
var auditMetrics = audit.NewMetrics()
