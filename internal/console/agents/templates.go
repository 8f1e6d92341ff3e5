package agents

import "github.com/arvenza/helix/internal/console"

var listTmpl = console.PageTemplate("agents", `
<link rel="stylesheet" href="{{.Style}}">
<section aria-labelledby="agents-h">
<h2 id="agents-h">Configured agents</h2>
{{if .Agents}}
<p class="muted">Showing {{.AgentsShown}} of {{.AgentsOf}} agents. Counters are those of /metrics, since start.</p>
<div class="table-wrap"><table id="agents">
<thead><tr><th>Agent</th><th>Provider</th><th>Model</th><th>Tools</th><th class="num">Runs</th><th class="num">Errors</th><th class="num">Tool calls</th><th class="num">Tokens in</th><th class="num">Tokens out</th></tr></thead>
<tbody>
{{range .Agents}}<tr>
<td><a href="{{.RunsURL}}">{{.ID}}</a></td><td>{{.Provider}}</td><td>{{.Model}}</td>
<td>{{range $i, $t := .Tools}}{{if $i}}, {{end}}<code>{{$t}}</code>{{else}}<span class="muted">none</span>{{end}}</td>
<td class="num">{{.Runs}}</td><td class="num">{{.Errors}}</td><td class="num">{{.ToolCalls}}</td><td class="num">{{.InputTokens}}</td><td class="num">{{.OutputTokens}}</td>
</tr>{{end}}
</tbody></table></div>
{{else}}
<p>This application has no agents. An <code>agents:</code> entry in the YAML (docs/agents.md) adds one.</p>
{{end}}
</section>
<section aria-labelledby="runs-h">
<h2 id="runs-h">Recent runs{{if .Filter}} of {{.Filter}}{{end}}</h2>
{{if .Filter}}<p><a href="{{.AllURL}}">Show the runs of every agent</a></p>{{end}}
{{if .Runs}}
<p class="muted">Showing runs {{.RunsFrom}}–{{.RunsTo}} of {{.RunsOf}}. The console keeps the last {{.Limits.MaxRuns}} runs ({{.Kept}} now), within {{bytes .Limits.MaxBytes}}.</p>
<div class="table-wrap"><table id="runs">
<thead><tr><th>Run</th><th>Agent</th><th>State</th><th>Started</th><th class="num">Latency</th><th class="num">Turns</th><th class="num">Tool calls</th><th class="num">Tokens in / out</th><th>Input</th></tr></thead>
<tbody>
{{range .Runs}}<tr>
<td><a href="{{.URL}}">run {{.ID}}</a></td><td>{{.Agent}}</td><td><span class="state-{{.State}}">{{.State}}</span></td>
<td><time datetime="{{.Started.UTC.Format "2006-01-02T15:04:05Z07:00"}}">{{since .Started}}</time></td>
<td class="num">{{if .Running}}…{{else}}{{dur .Latency}}{{end}}</td><td class="num">{{.Iterations}}</td><td class="num">{{.ToolCalls}}</td>
<td class="num">{{.Usage.InputTokens}} / {{.Usage.OutputTokens}}</td>
<td>{{.Excerpt}}</td>
</tr>{{end}}
</tbody></table></div>
<nav aria-label="Run pages" class="pager">{{if .Newer}}<a href="{{.Newer}}">Newer runs</a> {{end}}{{if .Older}}<a href="{{.Older}}">Older runs</a>{{end}}</nav>
{{else}}
<p>No runs recorded yet{{if .Filter}} for {{.Filter}}{{end}}. Runs appear here as agents answer (an MCP tool call, an <code>agent:</code> step, a trigger).</p>
{{end}}
</section>
`)

var missingTmpl = console.PageTemplate("agent-run-missing", `
<p role="alert">Agent run <code>{{.ID}}</code> is not kept: the console keeps the last {{.Limits.MaxRuns}} runs within {{bytes .Limits.MaxBytes}}, and forgets them at restart.</p>
<p><a href="{{.ListURL}}">Back to the recent runs</a></p>
`)

var runTmpl = console.PageTemplate("agent-run", `
<link rel="stylesheet" href="{{.Style}}">
<p><a href="{{.ListURL}}">All agents</a> · <a href="{{.AgentURL}}">Runs of {{.Agent}}</a></p>
<script src="{{.Script}}" defer></script>
<div id="transcript" data-agents-live="{{if .Running}}{{.EventsURL}}{{end}}" aria-live="polite">
{{template "transcript" .}}
</div>
{{define "transcript"}}
<dl class="agents-facts">
<dt>Agent</dt><dd>{{.Agent}}</dd>
<dt>State</dt><dd id="run-state"><span class="state-{{.State}}">{{.State}}</span>{{if .Running}} (this page follows the run live){{end}}</dd>
<dt>Started</dt><dd><time datetime="{{.Started.UTC.Format "2006-01-02T15:04:05Z07:00"}}">{{.Started.UTC.Format "2006-01-02 15:04:05 UTC"}}</time></dd>
{{if not .Running}}<dt>Latency</dt><dd>{{dur .Latency}}</dd>{{end}}
{{if .Principal}}<dt>Caller</dt><dd>{{.Principal}}{{if .Server}} (MCP server {{.Server}}){{end}}</dd>{{end}}
{{if .SessionID}}<dt>Session</dt><dd><code>{{.SessionID}}</code></dd>{{end}}
<dt>Tokens</dt><dd id="run-tokens">{{.Usage.InputTokens}} in, {{.Usage.OutputTokens}} out</dd>
<dt>Turns, tool calls</dt><dd>{{.Iterations}}, {{.ToolCalls}}</dd>
</dl>
<h2>Input</h2>
<pre class="agents-text">{{.Input}}</pre>
{{range .Orphans}}<p class="muted">Tool result of {{.Name}} whose turn was not kept: <code>{{.Text}}</code></p>{{end}}
<ol class="agents-turns">
{{range .Turns}}
<li class="agents-turn">
<h3>Turn {{.Iteration}}: model{{if .Err}} failed{{end}}</h3>
<p class="muted">{{dur .Latency}} · {{.Usage.InputTokens}} tokens in, {{.Usage.OutputTokens}} out{{if .StopReason}} · stopped: {{.StopReason}}{{end}}</p>
{{if .Err}}<p class="bad" role="alert">Error: {{.Err}}</p>{{end}}
{{if .Text}}<pre class="agents-text">{{.Text}}</pre>{{end}}
{{if .Calls}}<ul class="agents-calls">
{{range .Calls}}<li class="agents-call">
<p><strong>Tool call <code>{{.Name}}</code></strong> <span class="muted">id {{.ID}}</span></p>
<p class="muted">Arguments</p><pre class="agents-args">{{.Arguments}}</pre>
{{with .Result}}<p>Result{{if .IsError}} <strong class="bad">(error)</strong>{{else}} (ok){{end}} <span class="muted">after {{dur .Latency}}</span></p><pre class="agents-result">{{.Text}}</pre>
{{else}}<p class="muted">Result: {{if $.Running}}waiting…{{else}}not recorded{{end}}</p>{{end}}
</li>{{end}}
</ul>{{end}}
{{range .Stray}}<p>Result of <code>{{.Name}}</code>{{if .IsError}} <strong class="bad">(error)</strong>{{end}}</p><pre class="agents-result">{{.Text}}</pre>{{end}}
</li>
{{end}}
</ol>
{{if .Omitted}}<p class="muted">{{.Omitted}} more entries were left out (the console keeps a bounded transcript of each run).</p>{{end}}
{{if .Err}}<h2>Error</h2><p class="bad" role="alert" id="run-error">{{.Err}}</p>{{end}}
{{if not .Running}}{{if not .Err}}<h2>Answer</h2><pre class="agents-text" id="run-answer">{{.Answer}}</pre>{{end}}{{end}}
{{end}}
`)
