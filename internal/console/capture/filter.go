package capture

import "strings"

// Filter selects captures; an empty field matches everything.
type Filter struct {
	Workflow string
	// Status is StatusOK or StatusFailed.
	Status    string
	Principal string
}

// Match reports whether e passes f.
func (f Filter) Match(e *Exchange) bool {
	return (f.Workflow == "" || e.Workflow == f.Workflow) &&
		(f.Status == "" || e.Status == f.Status) &&
		(f.Principal == "" || strings.EqualFold(e.Principal, f.Principal))
}

// List returns up to limit kept captures matching f, newest first, and how
// many kept captures match in all.
func (c *Capture) List(f Filter, limit int) (page []*Exchange, total int) {
	c.ring.each(func(e *Exchange) bool {
		if f.Match(e) {
			total++
			if len(page) < limit {
				page = append(page, e)
			}
		}
		return true
	})
	return page, total
}

// Workflows returns the workflow ids among the kept captures (for the
// filter's choices), at most limit of them, in first-seen order from newest.
func (c *Capture) Workflows(limit int) []string {
	seen := map[string]bool{}
	var out []string
	c.ring.each(func(e *Exchange) bool {
		if !seen[e.Workflow] {
			seen[e.Workflow] = true
			out = append(out, e.Workflow)
		}
		return len(out) < limit
	})
	return out
}
