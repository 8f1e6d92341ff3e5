package main

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/arvenza/helix/internal/rag"
)

// Dataset is a BEIR-format collection: the corpus, the queries of the test split
// and their judgements.
type Dataset struct {
	Name    string
	Docs    []BEIRDoc
	Queries []Query // the test queries, in qrels order
	Qrels   Qrels
	// qrelsOrder is the query ids in the order the qrels first name them.
	qrelsOrder []string
}

// BEIRDoc is one corpus line.
type BEIRDoc struct {
	ID    string `json:"_id"`
	Title string `json:"title"`
	Text  string `json:"text"`
}

// Query is one queries.jsonl line.
type Query struct {
	ID   string `json:"_id"`
	Text string `json:"text"`
}

// Document is a BEIR document as a pipeline ingests it: its title as the
// document's title (which every chunk carries and the stores index as a keyword
// field of its own), its text as the text. With flat, the title is instead put
// in front of the text (see DocText) and the document has no title: how
// pipelines indexed BEIR before they had titles, and Anserini's "flat" indexes.
func Document(d BEIRDoc, dataset string, flat bool) rag.Document {
	doc := rag.Document{ID: d.ID, Source: dataset + ":" + d.ID, Title: d.Title, Text: d.Text}
	if flat {
		doc.Title, doc.Text = "", DocText(d)
	}
	return doc
}

// DocText is a document's title and text as one text (for --flat and the random
// model's vocabulary): the title, a blank line (the recursive chunker's first
// break) and the text.
func DocText(d BEIRDoc) string {
	switch {
	case d.Title == "":
		return d.Text
	case d.Text == "":
		return d.Title
	}
	return d.Title + "\n\n" + d.Text
}

// LoadDataset reads dir's corpus.jsonl (or corpus.jsonl.gz), queries.jsonl and
// qrels/<split>.tsv.
func LoadDataset(dir, split string) (*Dataset, error) {
	ds := &Dataset{Name: filepath.Base(filepath.Clean(dir))}
	var err error
	if ds.Qrels, ds.qrelsOrder, err = loadQrels(filepath.Join(dir, "qrels", split+".tsv")); err != nil {
		return nil, err
	}
	corpus := filepath.Join(dir, "corpus.jsonl")
	if _, statErr := os.Stat(corpus); errors.Is(statErr, os.ErrNotExist) {
		corpus += ".gz"
	}
	seen := map[string]bool{}
	err = readJSONL(corpus, func(line int, raw []byte) error {
		var d BEIRDoc
		if err := json.Unmarshal(raw, &d); err != nil {
			return err
		}
		if d.ID == "" {
			return errors.New(`no "_id"`)
		}
		if seen[d.ID] {
			return fmt.Errorf("document id %q appears twice", d.ID)
		}
		seen[d.ID] = true
		ds.Docs = append(ds.Docs, d)
		return nil
	})
	if err != nil {
		return nil, err
	}
	byID := map[string]string{}
	err = readJSONL(filepath.Join(dir, "queries.jsonl"), func(line int, raw []byte) error {
		var q Query
		if err := json.Unmarshal(raw, &q); err != nil {
			return err
		}
		byID[q.ID] = q.Text
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, id := range ds.qrelsOrder {
		text, ok := byID[id]
		if !ok {
			return nil, fmt.Errorf("%s: query %q of the qrels is not in queries.jsonl", dir, id)
		}
		ds.Queries = append(ds.Queries, Query{ID: id, Text: text})
	}
	return ds, nil
}

// readJSONL calls fn with each non-blank line of a JSON-lines file, gzip-compressed
// when its name ends in .gz; errors name the file and line.
func readJSONL(path string, fn func(line int, raw []byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		gz, err := gzip.NewReader(f)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		defer gz.Close()
		r = gz
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for n := 1; sc.Scan(); n++ {
		if len(strings.TrimSpace(sc.Text())) == 0 {
			continue
		}
		if err := fn(n, sc.Bytes()); err != nil {
			return fmt.Errorf("%s:%d: %w", path, n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// loadQrels reads a BEIR qrels file: tab-separated query id, document id and
// grade, after a header line.
func loadQrels(path string) (Qrels, []string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	qrels := Qrels{}
	var order []string
	for n, line := range strings.Split(string(data), "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		f := strings.Split(line, "\t")
		if n == 0 && len(f) == 3 && f[0] == "query-id" {
			continue
		}
		if len(f) != 3 {
			return nil, nil, fmt.Errorf("%s:%d: want 3 tab-separated fields (query-id, corpus-id, score), got %d", path, n+1, len(f))
		}
		grade, err := strconv.Atoi(strings.TrimSpace(f[2]))
		if err != nil {
			return nil, nil, fmt.Errorf("%s:%d: score %q is not an integer", path, n+1, f[2])
		}
		if qrels[f[0]] == nil {
			qrels[f[0]] = map[string]int{}
			order = append(order, f[0])
		}
		qrels[f[0]][f[1]] = grade
	}
	if len(qrels) == 0 {
		return nil, nil, fmt.Errorf("%s: no judgements", path)
	}
	return qrels, order, nil
}
