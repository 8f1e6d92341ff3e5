package workflow

import (
	_ "embed"

	"github.com/arvenza/helix/internal/console"
)

var (
	//go:embed templates/list.html
	listText string
	//go:embed templates/detail.html
	detailText string

	listTmpl   = console.PageTemplate("workflows", listText)
	detailTmpl = console.PageTemplate("workflow", detailText)
)
