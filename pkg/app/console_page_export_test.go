package app

import (
	"fmt"

	"github.com/arvenza/helix/internal/console"
)

// ConsolePage runs the Setup of the console part called name on a and
// returns its page (the rag and runs parts have no tracer and nothing to
// stop), for the page tests of package app_test (before the
// console is wired into the management listener, and beside it).
func ConsolePage(a *App, name string) (*console.Page, error) {
	for _, p := range consoleParts {
		if p.Name == name {
			s, err := p.Setup(a)
			if err != nil {
				return nil, err
			}
			return s.Page, nil
		}
	}
	return nil, fmt.Errorf("no console part %q", name)
}
