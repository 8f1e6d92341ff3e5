package app

import "github.com/arvenza/helix/internal/console"

// ConsoleMCPPage is the console's MCP page of a, as Build's console wiring
// makes it from the registered part.
func ConsoleMCPPage(a *App) *console.Page {
	for _, p := range consoleParts {
		if p.Name == "mcp" {
			s, err := p.Setup(a)
			if err != nil {
				panic(err)
			}
			return s.Page
		}
	}
	return nil
}
