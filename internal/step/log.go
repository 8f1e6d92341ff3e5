package step

import (
	"context"
	"log/slog"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

func init() {
	Define(Kind{
		Name:        "log",
		Description: "Writes a message to the log, with ${…} placeholders (${body}, ${header.X} …) resolved per exchange. `log: \"text\"` is short for `log: {message: \"text\"}`.",
		Shape: config.Shape{Type: config.TypeObject, What: "a log step", Short: "message", Keys: []config.Key{
			{Name: "message", Required: true, Shape: config.Shape{Type: config.TypeString,
				Description: "The message; ${body}, ${body.x}, ${header.X} and ${env:NAME} placeholders are resolved."}},
			{Name: "level", Shape: config.Shape{Type: config.TypeString, What: "log level", Default: "info",
				Enum: []string{"debug", "info", "warn", "warning", "error"}, Description: "The log level."}},
		}},
		Build: buildLog,
	})
}

// logStep writes a message with ${…} placeholders resolved to the context's logger:
//
//	steps:
//	  - log: "got ${body}"
//	  - log: {message: "got ${body}", level: debug}
type logStep struct {
	hc       *engine.Context
	name     string
	workflow string
	message  string
	level    slog.Level
}

var logLevels = map[string]slog.Level{
	"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn,
	"warning": slog.LevelWarn, "error": slog.LevelError,
}

func buildLog(bc *BuildContext, s config.StepConfig, d *config.Decoder, v *config.Values) (engine.Processor, error) {
	st := &logStep{hc: bc.HC, name: Name(s), workflow: bc.Workflow, message: v.String("message"), level: logLevels[v.String("level")]}
	CheckPlaceholders(d, v.Node, s.Path, st.message)
	return st, d.Err()
}

func (l *logStep) Name() string { return l.name }

func (l *logStep) Process(ctx context.Context, ex *exchange.Exchange) error {
	msg, err := uri.Expand(l.message, ex)
	if err != nil {
		return err
	}
	l.hc.Logger().Log(ctx, l.level, msg, "workflow", l.workflow, "exchange", ex.ID(), "step", l.name)
	return nil
}

// CheckPlaceholders reports unterminated or unknown ${…} placeholders at load time
// rather than on the first exchange.
func CheckPlaceholders(d *config.Decoder, n *yaml.Node, path, s string) {
	if !uri.HasPlaceholders(s) {
		return
	}
	probe := exchange.New(exchange.InOnly)
	for rest := s; ; {
		i := strings.Index(rest, "${")
		if i < 0 {
			return
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			d.Errorf(n, path, "unterminated placeholder %q", rest[i:]).Hint = "add the closing }"
			return
		}
		expr := rest[i+2 : i+j]
		if !strings.HasPrefix(strings.TrimSpace(expr), "env:") {
			if _, err := uri.Lookup(expr, probe); err != nil {
				d.Errorf(n, path, "%v", err)
			}
		}
		rest = rest[i+j+1:]
	}
}
