package step

import (
	"context"
	"log/slog"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/arvenza/helix/pkg/config"
	"github.com/arvenza/helix/pkg/engine"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

func init() { Register("log", buildLog) }

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

func buildLog(bc *BuildContext, s config.StepConfig) (engine.Processor, error) {
	d := bc.Decoder(s)
	st := &logStep{hc: bc.HC, name: Name(s), workflow: bc.Workflow, level: slog.LevelInfo}
	n := s.Node
	if n != nil && n.Kind == yaml.ScalarNode && !config.IsNull(n) {
		st.message = n.Value
	} else {
		d.Mapping(n, s.Path, "a log step", config.Fields{
			"message": func(v *yaml.Node, p string) { st.message = d.String(v, p) },
			"level": func(v *yaml.Node, p string) {
				name := strings.ToLower(d.String(v, p))
				lv, ok := logLevels[name]
				if !ok {
					d.Errorf(v, p, "unknown log level %q", name).Hint = "use debug, info, warn or error"
				}
				st.level = lv
			},
		}, "message")
	}
	checkPlaceholders(d, n, s.Path, st.message)
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

// checkPlaceholders reports unterminated or unknown ${…} placeholders at load time
// rather than on the first exchange.
func checkPlaceholders(d *config.Decoder, n *yaml.Node, path, s string) {
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
