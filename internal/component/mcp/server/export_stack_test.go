package server

import "net/http"

// HTTPHandler returns the handler the http.Server of the running server id
// serves (nil if there is none), so that a test can run a request on a
// goroutine of its own.
func (c *Component) HTTPHandler(id string) http.Handler {
	c.mu.Lock()
	s := c.running[id]
	c.mu.Unlock()
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.httpSrv == nil {
		return nil
	}
	return s.httpSrv.Handler
}
