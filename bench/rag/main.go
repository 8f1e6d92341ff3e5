// Command rag evaluates Helix's RAG retrieval on a BEIR-format collection
// (corpus.jsonl[.gz], queries.jsonl, qrels/test.tsv): it ingests the corpus into a
// fresh store, runs every test query through rag.Retrieve and reports nDCG@10
// (trec_eval's ndcg_cut.10), recall@100, ingest documents per second (and the
// embedder's own rate), query latency percentiles and peak memory.
//
//	rag --data ../../shared/data/scifact --strategy keyword --chunk none --out r.json
//	rag --data DIR --k1 1.2 --b 0.75 --chunk recursive:512:64
//	rag --data DIR --strategy hybrid --embed openai --embed-model text-embedding-3-small
//	rag --data DIR --strategy hybrid --embed onnx --onnx-model /models/bge-small/model.onnx
//	rag --data DIR --store pgvector            (HELIX_POSTGRES_URL; the table is dropped after)
//	rag --data DIR --config helix.yaml --pipeline docs
//	rag summarize results/*.json               (a Markdown table)
//	rag pg-scale --chunks 100000               (pgvector keyword p50/p99 on ragsynth chunks; HELIX_POSTGRES_URL)
//	rag scale --sizes 10000,100000,1000000 --beir ../../shared/data --out DIR
//	                                            (the embedded store at scale: see scale.go)
//
// A document is ingested with its BEIR title as its title and its text as its text,
// as a pipeline ingests a document with a title (see Document); --flat puts the
// title in front of the text instead.
// See BENCHMARKS.md for the measured figures and scripts/bench-rag.sh for the runs.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "rag:", err)
		os.Exit(2)
	}
}

// options are the command line.
type options struct {
	Data, Split, Out, Label string
	Config, Pipeline        string
	Strategy                string
	Chunk                   string
	Store                   string
	K1, B                   float64
	Embed                   string
	EmbedModel, EmbedURL    string
	EmbedDimensions         int
	ONNXModel, ONNXLib      string
	QueryPrefix, DocPrefix  string
	Workers                 int
	Depth                   int
	NoSync                  bool
	Multifield              bool
	Flat                    bool
	TmpDir                  string
}

func parseFlags(args []string, out io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("rag", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&o.Data, "data", "", "BEIR-format directory (corpus.jsonl[.gz], queries.jsonl, qrels/<split>.tsv)")
	fs.StringVar(&o.Split, "split", "test", "qrels split to score")
	fs.StringVar(&o.Out, "out", "", "write the result as JSON to this file (it is always printed)")
	fs.StringVar(&o.Label, "label", "", "name of the configuration, copied into the result")
	fs.StringVar(&o.Config, "config", "", "Helix YAML file: evaluate one of its pipelines as configured (with --pipeline)")
	fs.StringVar(&o.Pipeline, "pipeline", "", "id of the pipeline of --config to evaluate")
	fs.StringVar(&o.Strategy, "strategy", "keyword", "keyword, vector or hybrid")
	fs.StringVar(&o.Chunk, "chunk", "none", "none (one chunk per document), or STRATEGY[:SIZE[:OVERLAP]] with strategy fixed, recursive or semantic (sizes in tokens)")
	fs.StringVar(&o.Store, "store", "embedded", "embedded (in a temporary directory) or pgvector (HELIX_POSTGRES_URL; a fresh table, dropped after)")
	fs.Float64Var(&o.K1, "k1", 0, "BM25 k1 of the embedded store (0: the store's default)")
	fs.Float64Var(&o.B, "b", -1, "BM25 b of the embedded store (-1: the store's default)")
	fs.StringVar(&o.Embed, "embed", "none", "none, openai (an OpenAI-compatible embeddings API), onnx (a local model) or onnx-random (a tiny random model: speed and mechanics only, meaningless quality)")
	fs.StringVar(&o.EmbedModel, "embed-model", "", "openai: the embedding model (default text-embedding-3-small)")
	fs.StringVar(&o.EmbedURL, "embed-url", "", "openai: the API's base URL, e.g. http://localhost:11434/v1 (default $OPENAI_BASE_URL or OpenAI's); the key is read from $OPENAI_API_KEY")
	fs.IntVar(&o.EmbedDimensions, "embed-dimensions", 0, "openai: ask for shorter vectors")
	fs.StringVar(&o.ONNXModel, "onnx-model", "", "onnx: the model.onnx file (tokenizer.json beside it)")
	fs.StringVar(&o.ONNXLib, "onnx-lib", "", "onnx: ONNX Runtime's shared library (default $HELIX_ONNXRUNTIME_LIB, else the loader's search path)")
	fs.StringVar(&o.QueryPrefix, "query-prefix", "", "prepended to queries before embedding (\"query: \" for e5 models)")
	fs.StringVar(&o.DocPrefix, "doc-prefix", "", "prepended to documents before embedding")
	fs.IntVar(&o.Workers, "workers", 4, "documents chunked and embedded at once (a pipeline's default)")
	fs.IntVar(&o.Depth, "depth", 100, "documents retrieved per query (chunks asked for, then the first distinct documents)")
	fs.BoolVar(&o.NoSync, "nosync", false, "embedded store: no fsync per put (the store's default is to sync)")
	fs.BoolVar(&o.Multifield, "multifield", false, "cross-check: index title and text in two separate embedded stores and score best_fields with tie_breaker 0.5, as BEIR's Elasticsearch baseline (keyword, --chunk none; the stores' own title field should give the same figures)")
	fs.BoolVar(&o.Flat, "flat", false, "ingest each document as title + blank line + text, without a title (how pipelines indexed BEIR before titles; Anserini's flat indexes)")
	fs.StringVar(&o.TmpDir, "tmp", "", "parent of the temporary store directory (default the system's)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q (all options are flags)", fs.Arg(0))
	}
	if o.Data == "" {
		return o, errors.New("--data is required: a BEIR-format directory such as ../shared/data/scifact")
	}
	if (o.Config == "") != (o.Pipeline == "") {
		return o, errors.New("--config and --pipeline go together: the YAML file and the id of the pipeline to evaluate")
	}
	if o.Flat && o.Multifield {
		return o, errors.New("--flat and --multifield exclude each other: --multifield indexes the title and the text apart")
	}
	if o.Depth <= 0 || o.Workers <= 0 {
		return o, errors.New("--depth and --workers must be positive")
	}
	return o, nil
}

func run(ctx context.Context, args []string, out io.Writer) error {
	if len(args) > 0 && args[0] == "summarize" {
		return summarize(args[1:], out)
	}
	if len(args) > 0 && args[0] == "pg-scale" {
		return pgScale(ctx, args[1:], out)
	}
	if len(args) > 0 && args[0] == "scale" {
		return runScale(ctx, args[1:], out, os.Stderr)
	}
	o, err := parseFlags(args, out)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	res, err := evaluateOptions(ctx, o)
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if o.Out != "" {
		if err := os.WriteFile(o.Out, b, 0o644); err != nil {
			return err
		}
	}
	_, err = out.Write(b)
	return err
}

// evaluateOne is one evaluation of a command line (rag's flags).
func evaluateOne(ctx context.Context, args []string) (*Result, error) {
	o, err := parseFlags(args, io.Discard)
	if err != nil {
		return nil, err
	}
	return evaluateOptions(ctx, o)
}

// evaluateOptions loads the collection, ingests it into a fresh store and
// scores its test queries.
func evaluateOptions(ctx context.Context, o options) (*Result, error) {
	ds, err := LoadDataset(o.Data, o.Split)
	if err != nil {
		return nil, err
	}
	res := &Result{Dataset: ds.Name, Label: o.Label, Started: time.Now().UTC().Format(time.RFC3339)}
	tmp, err := os.MkdirTemp(o.TmpDir, "helix-bench-rag-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)

	var sys system
	var timer *busyTimer
	if o.Config != "" {
		sys, timer, err = openPipeline(ctx, o, tmp, &res.Setup)
	} else {
		sys, timer, err = openDirect(ctx, o, ds, tmp, &res.Setup)
	}
	if err != nil {
		return nil, err
	}
	res.Setup.Depth = o.Depth
	res.Setup.TieRule = "trec_eval: score descending, then document id descending"
	res.Setup.Flat = o.Flat
	evalErr := evaluate(ctx, ds, sys, timer, o.Depth, o.Flat, res)
	if err := errors.Join(evalErr, sys.close()); err != nil {
		return nil, err
	}
	return res, nil
}
