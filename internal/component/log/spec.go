package log

import (
	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/exchange"
)

// Spec is the log:// component's description: options, headers, direction.
var Spec = &component.Spec{
	Scheme:    "log",
	Summary:   "write the exchange to the log",
	Direction: component.ProducerOnly,
	Syntax:    "log://name[?options]",
	Description: `A target that writes one record per exchange to Helix's log (stderr): the
logger name, the exchange ID, the body and, when the exchange failed, the error. The
body is not changed, so a log target can sit anywhere in a workflow.`,
	Path: []component.PathPart{
		{Name: "name", Description: "the logger name shown in each record (orders in log://orders); may be empty"},
	},
	Options: []component.Option{
		{Name: "level", Type: component.TypeEnum, Default: "info", Enum: []string{"debug", "info", "warn", "error"},
			EnumAliases: map[string]string{"warning": "warn"}, Role: component.ProducerOnly, Since: "0.1",
			Description: "the level of the records; records below the level set with --log-level are dropped"},
		{Name: "showHeaders", Type: component.TypeBool, Default: "false", Role: component.ProducerOnly, Since: "0.1",
			Description: "also log the exchange's headers"},
	},
	Headers: []component.Header{
		{Name: exchange.HeaderExceptionMessage, Type: "string", Use: component.Reads, Role: component.ProducerOnly,
			Description: "logged as error when set (an error handler sets it)"},
	},
	Examples: []component.Example{
		{URI: "log://orders", Description: "log each exchange at info"},
		{URI: "log://debug?level=debug&showHeaders=true", Description: "log body and headers at debug"},
	},
	Since: "0.1",
}

// Spec returns the component's description.
func (c *Component) Spec() *component.Spec { return Spec }
