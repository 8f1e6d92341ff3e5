package app

// AuditMetrics lets tests count records with the metrics /metrics shows.
var AuditMetrics = auditMetrics
