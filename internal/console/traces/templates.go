package traces

import "github.com/arvenza/helix/internal/console"

var listTmpl = console.PageTemplate("traces", `
{{if not .On}}
<p id="tracing-off"><strong>Tracing is off</strong>, so there are no traces to show.</p>
<p>Switch it on in the YAML and restart (docs/tracing.md):</p>
<pre>helix:
  tracing:
    exporter: otlp
    endpoint: http://localhost:4318   # your OpenTelemetry collector</pre>
<p>The console then keeps the last traces of this process here, whether or not the collector is reachable.</p>
{{else}}
{{if .ExchangeMissed}}<p role="alert" id="exchange-missed">No trace is kept for exchange <code>{{.Exchange}}</code>: it was not sampled, or its trace is older than the last {{.Limits.MaxTraces}} kept.</p>{{end}}
{{if .Traces}}
<p class="muted">Showing traces {{.From}}–{{.To}} of {{.Of}}, newest first. The console keeps the last {{.Limits.MaxTraces}} traces, at most {{.Limits.MaxSpans}} spans within {{bytes .Limits.MaxBytes}}.</p>
<div class="table-wrap"><table id="traces">
<thead><tr><th>Trace</th><th>Workflow</th><th>Status</th><th>Started</th><th class="num">Duration</th><th class="num">Spans</th></tr></thead>
<tbody>
{{range .Traces}}<tr>
<td><a href="{{.URL}}">{{.Root}}</a></td><td>{{.Workflow}}</td><td><span class="state-{{.Status}}">{{.Status}}</span></td>
<td><time datetime="{{.Start.UTC.Format "2006-01-02T15:04:05.000Z07:00"}}">{{since .Start}}</time></td>
<td class="num">{{dur .Duration}}</td><td class="num">{{.Spans}}</td>
</tr>{{end}}
</tbody></table></div>
<nav aria-label="Trace pages">{{if .Newer}}<a href="{{.Newer}}">Newer traces</a> {{end}}{{if .Older}}<a href="{{.Older}}">Older traces</a>{{end}}</nav>
{{else}}
<p>No traces yet. Every exchange that is sampled shows here once its spans end.</p>
{{end}}
{{end}}
`)

var missingTmpl = console.PageTemplate("trace-missing", `
<p role="alert">Trace <code>{{.ID}}</code> is not kept: the console keeps the last {{.Limits.MaxTraces}} traces of this process, and forgets them at restart.</p>
<p><a href="{{.ListURL}}">Back to the recent traces</a></p>
`)

var traceTmpl = console.PageTemplate("trace", `
<link rel="stylesheet" href="{{.Style}}">
<p><a href="{{.ListURL}}">All traces</a></p>
<dl class="traces-facts">
<dt>Trace id</dt><dd><code>{{.ID}}</code></dd>
{{if .Workflow}}<dt>Workflow</dt><dd>{{.Workflow}}</dd>{{end}}
<dt>Status</dt><dd id="trace-status"><span class="state-{{.Status}}">{{.Status}}</span></dd>
<dt>Duration</dt><dd>{{dur .Duration}}</dd>
<dt>Spans</dt><dd>{{.Spans}}{{if .Omitted}} ({{.Omitted}} not kept){{end}}</dd>
</dl>
<p class="muted">Each bar starts and spans in proportion to the trace's duration. Open a span for its attributes and events.</p>
<ol class="waterfall" id="waterfall">
{{range .Bars}}
<li class="wf-span" data-depth="{{.Depth}}">
<details>
<summary>
<span class="wf-name" style="padding-left: {{.Indent}}em">{{.Name}}{{if eq .Status "error"}} <strong class="bad">(error)</strong>{{end}}</span>
<span class="wf-track" aria-hidden="true"><span class="wf-bar{{if eq .Status "error"}} wf-error{{end}}" style="left: {{.Offset}}%; width: {{.Width}}%"></span></span>
<span class="wf-dur">{{dur .Duration}}</span>
</summary>
<div class="wf-detail">
<p>{{.Kind}} span <code>{{.SpanID}}</code>{{if .ParentID}}, child of <code>{{.ParentID}}</code>{{end}}; status {{.Status}}{{if .StatusText}}: {{.StatusText}}{{end}}.
{{if .ExchangeURL}} Exchange <a href="{{.ExchangeURL}}">{{.ExchangeID}}</a>.{{end}}</p>
{{if .Attributes}}<table class="wf-attrs"><thead><tr><th>Attribute</th><th>Value</th></tr></thead><tbody>
{{range .Attributes}}<tr><td><code>{{.Key}}</code></td><td>{{.Value}}</td></tr>{{end}}
</tbody></table>{{end}}
{{range .Events}}<p><strong>Event {{.Name}}</strong> at {{.Time.UTC.Format "15:04:05.000000"}}</p>
{{if .Attributes}}<table class="wf-attrs"><tbody>{{range .Attributes}}<tr><td><code>{{.Key}}</code></td><td>{{.Value}}</td></tr>{{end}}</tbody></table>{{end}}
{{end}}
{{if .Dropped}}<p class="muted">{{.Dropped}} attributes or events not kept.</p>{{end}}
</div>
</details>
</li>
{{end}}
</ol>
`)
