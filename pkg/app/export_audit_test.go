package app

// AuditMetrics lets tests count records with the metrics /metrics shows.
var AuditMetrics = auditMetrics

// AuditShown is the count of written audit records the console's MCP page
// shows for the gateway server id (-1 when it shows no audit).
func (a *App) AuditShown(id string) int64 {
	for _, s := range (mcpSource{a}).Servers() {
		if s.ID == id && s.Gateway != nil && s.Gateway.Audit != nil {
			return int64(s.Gateway.Audit.Written)
		}
	}
	return -1
}
