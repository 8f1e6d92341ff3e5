package runs

import "github.com/arvenza/helix/internal/console"

var listTmpl = console.PageTemplate("runs-list", `
{{- if .NoStore}}
<p id="runs-none">Nothing in this application is durable, so there are no runs to show. A durable workflow checkpoints
each step in a store, survives a crash or a restart, and can wait for a person (<code>approve:</code>), a timer or a
callback without holding anything in memory. Make a workflow durable with <code>durable: true</code>:</p>
<pre>workflows:
  - id: ship
    durable: true
    trigger: direct://ship
    steps:
      - approve:
          message: "Ship ${body}?"</pre>
<p>Runs are kept under <code>helix.data_dir</code> (SQLite), or in PostgreSQL with <code>helix.durable_store</code>; see the durability guide (docs/durability.md).</p>
{{- else}}
<nav aria-label="Filter by state" class="runs-states">
<a href="{{.AllURL}}"{{if not .State}} aria-current="true"{{end}}>all states</a>
{{- range .States}} · <a href="{{.URL}}"{{if .Active}} aria-current="true"{{end}}>{{.Name}}{{if .Counts}} ({{.Count}}){{end}}</a>{{end}}
</nav>
<form method="get" class="runs-filter" aria-label="Filter runs">
<label for="runs-workflow">Workflow</label>
<input id="runs-workflow" name="workflow" value="{{.Workflow}}" maxlength="200">
<label for="runs-state">State</label>
<select id="runs-state" name="state">
<option value="">any</option>
{{- range .States}}<option value="{{.Name}}"{{if .Active}} selected{{end}}>{{.Name}}</option>{{end}}
</select>
<button type="submit">Filter</button>
</form>
<p class="muted" id="runs-count">Showing {{.Shown}}{{if ge .Total 0}} of {{.Total}}{{end}} runs{{if .Paged}} (a later page){{end}}, newest first.</p>
{{- if not .Runs}}
<p>No run matches.</p>
{{- else}}
<div class="table-wrap">
<table id="runs-table">
<thead><tr><th scope="col">Run</th><th scope="col">Workflow</th><th scope="col">State</th><th scope="col">Waits for</th><th scope="col" class="num">Step</th><th scope="col">Started by</th><th scope="col">Updated</th></tr></thead>
<tbody>
{{- range .Runs}}
<tr data-run="{{.ID}}" data-state="{{.State}}">
<td><a href="{{.URL}}">{{.ID}}</a></td><td>{{.Workflow}}{{if .Kind}} <span class="muted">({{.Kind}})</span>{{end}}</td>
<td>{{.State}}</td><td>{{.WaitText}}</td><td class="num">{{.Step}}</td><td>{{.Principal}}</td><td>{{since .UpdatedAt}}</td>
</tr>
{{- end}}
</tbody>
</table>
</div>
{{- end}}
<nav aria-label="Pages of runs">{{if .Paged}}<a href="{{.First}}">First page</a>{{end}} {{if .Next}}<a href="{{.Next}}" rel="next">Next page</a>{{end}}</nav>
{{- end}}
`)

var showTmpl = console.PageTemplate("runs-show", `
<style>
.runs-actions { display: flex; flex-wrap: wrap; gap: 8px; align-items: center; margin: 8px 0; }
.runs-actions form { display: inline-flex; flex-wrap: wrap; gap: 6px; align-items: center; }
.run-fields { display: grid; grid-template-columns: max-content 1fr; gap: 2px 12px; margin: 8px 0 16px; }
.run-fields dt { font-weight: 600; } .run-fields dd { margin: 0; overflow-wrap: anywhere; }
.run-wait { border: 1px solid var(--line); padding: 8px; margin: 8px 0; }
.run-wait textarea { width: 100%; max-width: 40em; }
.run-checkpoint { max-width: 40em; max-height: 20em; overflow: auto; margin: 4px 0; }
</style>
<p><a href="{{.List}}">All runs</a></p>
{{- if .Done}}<p role="status" id="run-done" class="good">{{.Done}}</p>{{end}}
{{- if .Error}}<p role="alert" id="run-error" class="bad"><strong>Error:</strong> {{.Error}}</p>{{end}}
<dl class="run-fields">
<dt>Run</dt><dd id="run-id">{{.Run.ID}}</dd>
<dt>Workflow</dt><dd>{{.Run.Workflow}}{{if .Run.Kind}} ({{.Run.Kind}}){{end}}</dd>
<dt>State</dt><dd id="run-state">{{.Run.State}}{{if and .Failed .Run.Internal}} in Helix itself, not in a step{{end}}</dd>
<dt>Step</dt><dd>{{.Run.Step}} (segment {{.Run.Segment}}{{if .Run.Attempts}}, attempt {{.Run.Attempts}}{{end}})</dd>
{{- if .Run.Principal}}<dt>Started by</dt><dd>{{.Run.Principal}}</dd>{{end}}
<dt>Created</dt><dd>{{.Run.CreatedAt.UTC.Format "2006-01-02 15:04:05.000 UTC"}}</dd>
<dt>Updated</dt><dd>{{.Run.UpdatedAt.UTC.Format "2006-01-02 15:04:05.000 UTC"}} ({{since .Run.UpdatedAt}})</dd>
{{- if .Run.Error}}<dt>Error</dt><dd class="bad">{{.Run.Error}}</dd>{{end}}
</dl>
{{- if .Waits}}
<h2>Waits for</h2>
{{- range .Waits}}
<section class="run-wait" data-wait="{{.Kind}}">
<p>Waits for {{.Summary}}{{if .Key}} <span class="muted">(key {{.Key}})</span>{{end}}</p>
{{- if and $.Operator .Decides}}
<div class="runs-actions">
<form method="post" action="{{.Approve}}">
{{- if .KeyField}}<input type="hidden" name="wait" value="{{.KeyField}}">{{end}}
{{- if .Form}}<label for="answer-{{.Key}}">Answer (JSON object)</label> <textarea id="answer-{{.Key}}" name="data" rows="3" required></textarea>{{end}}
<button type="submit"{{if not .KeyField}} id="run-approve"{{end}}>{{if .Form}}Answer{{else}}Approve{{end}}</button>
</form>
<form method="post" action="{{.Reject}}">
{{- if .KeyField}}<input type="hidden" name="wait" value="{{.KeyField}}">{{end}}
<button type="submit"{{if not .KeyField}} id="run-reject"{{end}}>{{if .Form}}Decline{{else}}Reject{{end}}</button>
</form>
</div>
{{- else if .Decides}}
<p class="muted">An operator can decide this here; you are signed in as a viewer.</p>
{{- end}}
</section>
{{- end}}
{{- end}}
{{- if and .Operator (or .CanResume .CanCancel)}}
<div class="runs-actions" aria-label="Run actions">
{{- if .CanResume}}
<form method="post" action="{{.Resume}}">
{{- if eq .Run.State "working"}}<input type="checkbox" id="run-force" name="force" value="1"> <label for="run-force">it is stuck (no instance runs it)</label>{{end}}
<button type="submit" id="run-resume">Resume from the last checkpoint</button>
</form>
{{- end}}
{{- if .CanCancel}}
<form method="post" action="{{.Cancel}}"><button type="submit" id="run-cancel">Cancel the run</button></form>
{{- end}}
</div>
{{- end}}
<h2>History</h2>
<p class="muted">Each top-level step's checkpoint, in order{{if lt .StepsShown .StepsTotal}}: showing the latest {{.StepsShown}} of {{.StepsTotal}}{{end}}. A wait ends a segment; the next segment starts when it is resolved.</p>
{{- if not .Steps}}
<p>No step has been checkpointed yet.</p>
{{- else}}
<div class="table-wrap">
<table id="run-steps">
<thead><tr><th scope="col" class="num">Segment</th><th scope="col" class="num">Step</th><th scope="col">Name</th><th scope="col">At (UTC)</th><th scope="col">Took</th><th scope="col" class="num">Checkpoint</th><th scope="col">Exchange after it</th><th scope="col">Error</th></tr></thead>
<tbody>
{{- range .Steps}}
<tr><td class="num">{{.Segment}}</td><td class="num">{{.Index}}</td><td>{{.Name}}</td><td>{{.At.UTC.Format "15:04:05.000"}}</td><td>{{.Took}}</td><td class="num">{{bytes .Size}}</td>
<td>{{if .Exchange}}<details><summary>show</summary><pre class="run-checkpoint">{{.Exchange}}{{if .Cut}}
[cut at 2 KiB]{{end}}</pre></details>{{else}}<span class="muted">none</span>{{end}}</td><td>{{.Error}}</td></tr>
{{- end}}
</tbody>
</table>
</div>
{{- end}}
{{- if .Result}}
<h2>Result</h2>
<p class="muted">The exchange the run ended with{{if .ResultCut}}, cut at 4 KiB{{end}}; URLs' secrets and configured secrets are hidden.</p>
<pre id="run-result">{{.Result}}{{if .ResultCut}}
[cut: the result is longer]{{end}}</pre>
{{- end}}
`)

var errorTmpl = console.PageTemplate("runs-error", `
<p class="bad" role="alert" id="run-error"><strong>Error {{.Status}}:</strong> {{.Message}}</p>
<p><a href="{{.Back}}">Back</a></p>
`)
