package upstream

// OpenSessions is how many sessions the pool holds open now (one stdio
// process each for a stdio upstream): what the gateway's Status shows.
func (p *Pool) OpenSessions() int { return p.Status().OpenSessions }
