package overview

import (
	_ "embed"

	"github.com/arvenza/helix/internal/console"
)

//go:embed overview.html
var pageText string

var page = console.PageTemplate("overview", pageText)
