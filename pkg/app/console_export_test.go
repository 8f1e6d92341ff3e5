package app

import "github.com/arvenza/helix/internal/console"

// ConsoleRoutes are the routes the console's pages registered (nil when the
// console is off).
func ConsoleRoutes(a *App) []console.Route {
	if a.console == nil {
		return nil
	}
	return a.console.mux.Routes()
}

// ConsolePages are the paths of the console's pages (relative to /console).
func ConsolePages(a *App) []console.Page {
	if a.console == nil {
		return nil
	}
	return a.console.pages
}
