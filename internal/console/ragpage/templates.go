package ragpage

import "github.com/arvenza/helix/internal/console"

var listTmpl = console.PageTemplate("rag-list", `
{{- if not .Total}}
<p>This application has no RAG pipeline. Add a <code>pipelines:</code> entry (a source of documents, a store,
and optionally an embedder) to search documents from workflows, agents and MCP clients; see the RAG guide (docs/rag.md).</p>
{{- else}}
<p>Open a pipeline to try a query and see how its keyword, vector and fused rankings place each passage.</p>
<p class="muted" id="rag-count">Showing {{.Shown}} of {{.Total}} pipelines.</p>
<div class="table-wrap">
<table id="rag-pipelines">
<thead><tr><th scope="col">Pipeline</th><th scope="col">Store</th><th scope="col" class="num">Documents</th><th scope="col" class="num">Chunks</th>
<th scope="col">Embedder</th><th scope="col">Retrieval</th><th scope="col" class="num">Ingested</th><th scope="col" class="num">Ingest errors</th>
<th scope="col" class="num">Queries</th><th scope="col" class="num">Query errors</th></tr></thead>
<tbody>
{{- range .Pipelines}}
<tr data-pipeline="{{.ID}}">
<td><a href="{{.URL}}">{{.ID}}</a>{{if .Description}}<br><span class="muted">{{.Description}}</span>{{end}}</td>
<td>{{.Store}}</td>
{{- if .StatsError}}<td colspan="2">unknown: {{.StatsError}}</td>{{else}}<td class="num">{{.Documents}}</td><td class="num">{{.Chunks}}</td>{{end}}
<td>{{if .Embedder}}{{.Embedder}}{{else}}none (keyword only){{end}}</td>
<td>{{.Strategy}}</td>
<td class="num">{{.Ingested}}</td><td class="num">{{.IngestErrors}}</td><td class="num">{{.Queries}}</td><td class="num">{{.QueryErrors}}</td>
</tr>
{{- end}}
</tbody>
</table>
</div>
{{- if or .Prev .Next}}
<nav aria-label="Pages of pipelines">{{if .Prev}}<a href="{{.Prev}}" rel="prev">Previous page</a>{{end}} {{if .Next}}<a href="{{.Next}}" rel="next">Next page</a>{{end}}</nav>
{{- end}}
{{- end}}
`)

var playTmpl = console.PageTemplate("rag-play", `
<style>
.rag-arms { display: grid; grid-template-columns: repeat(auto-fit, minmax(280px, 1fr)); gap: 16px; }
.rag-arm h2 { font-size: 17px; margin: 8px 0 4px; }
.rag-hits { list-style: none; padding: 0; margin: 0; }
.rag-hits li { border-bottom: 1px solid var(--line); padding: 6px 0; overflow-wrap: anywhere; }
.rag-hits p { margin: 2px 0; }
.rag-form { display: flex; flex-wrap: wrap; gap: 8px; align-items: center; margin: 8px 0 12px; }
.rag-form input[type=search] { flex: 1 1 240px; }
.rag-form input#rag-filter { flex: 1 1 200px; font-family: monospace; }
.rag-form input[type=number] { width: 5em; }
</style>
<p><a href="{{.List}}">All pipelines</a> · store {{.Pipeline.Store}}
{{- if .Pipeline.StatsError}} (documents unknown: {{.Pipeline.StatsError}}){{else}} · {{.Pipeline.Documents}} documents, {{.Pipeline.Chunks}} chunks{{end}}
 · embedder {{if .Pipeline.Embedder}}{{.Pipeline.Embedder}}{{else}}none{{end}} · answers with {{.Answers}} retrieval</p>
<form method="get" class="rag-form" role="search" aria-label="Query the pipeline">
<label for="rag-q">Query</label>
<input id="rag-q" name="q" type="search" value="{{.Query}}" maxlength="{{.MaxQuery}}" required>
<label for="rag-k">Passages per ranking</label>
<input id="rag-k" name="k" type="number" min="1" max="{{.MaxK}}" value="{{.K}}">
<label for="rag-filter">Metadata filter</label>
<input id="rag-filter" name="filter" type="text" value="{{.Filter}}" maxlength="{{.MaxFilter}}" placeholder='{"lang": "en", "year": {"$gte": 2023}}' spellcheck="false">
<button type="submit">Search</button>
</form>
{{- if .Error}}
<p class="bad" role="alert" id="rag-error"><strong>Error:</strong> {{.Error}}</p>
{{- end}}
{{- if .NoEmbedder}}
<p id="rag-keyword-only">This pipeline has no rag-embed step: it retrieves by keyword only, so there is no vector arm and nothing to fuse. Add a <code>rag-embed</code> step to get vector and hybrid retrieval.</p>
{{- end}}
{{- if .Ran}}
<p class="muted">Ran in {{dur .Took}}. Each passage shows its rank in every ranking ("not ranked": outside that arm's candidates).</p>
<div class="rag-arms">
{{- range .Columns}}
<section class="rag-arm" id="arm-{{.Kind}}" aria-labelledby="arm-{{.Kind}}-title">
<h2 id="arm-{{.Kind}}-title">{{.Name}}</h2>
<p class="muted">{{.Caption}} Showing {{.Shown}} of {{.Of}}.</p>
{{- if not .Hits}}
<p>No passage in this ranking.</p>
{{- else}}
<ol class="rag-hits">
{{- range .Hits}}
<li data-chunk="{{.ID}}">
<p><strong>#{{.Rank}}</strong> · score {{.Score}} · <span class="muted">{{.Source}}</span></p>
{{- if or .Title .Heading}}<p><strong>{{.Title}}</strong>{{if .Heading}}{{if .Title}} › {{end}}{{.Heading}}{{end}}</p>{{end}}
<p>{{.Text}}{{if .Cut}} …{{end}}</p>
<p class="muted">keyword {{if .KeywordRank}}#{{.KeywordRank}}{{else}}not ranked{{end}}
{{- if $.HasVector}} · vector {{if .VectorRank}}#{{.VectorRank}}{{else}}not ranked{{end}} · fused {{if .Fused}}#{{.Fused}}{{else}}not in the top {{$.K}}{{end}}{{end}}</p>
</li>
{{- end}}
</ol>
{{- end}}
</section>
{{- end}}
</div>
{{- end}}
`)

var errorTmpl = console.PageTemplate("rag-error", `
<p class="bad" role="alert" id="rag-error"><strong>Error {{.Status}}:</strong> {{.Message}}</p>
<p><a href="{{.Back}}">All pipelines</a></p>
`)
