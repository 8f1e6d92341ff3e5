package main

import (
	"math"
	"slices"
	"strings"
)

// Qrels are a collection's relevance judgements: query id → document id → grade.
// A grade above 0 is relevant; 0 or below is judged non-relevant.
type Qrels map[string]map[string]int

// RankedDoc is one retrieved document of a query's run.
type RankedDoc struct {
	ID    string
	Score float64
}

// trecOrder sorts a run the way trec_eval does before it scores it: by score,
// highest first, and equal scores by document id in descending byte order
// (trec_eval compares docnos with strcmp and reverses). The order the system
// returned the documents in is ignored, as trec_eval ignores it.
func trecOrder(run []RankedDoc) []RankedDoc {
	out := slices.Clone(run)
	slices.SortStableFunc(out, func(a, b RankedDoc) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return -strings.Compare(a.ID, b.ID)
	})
	return out
}

// NDCG is trec_eval's ndcg_cut.k for one query: gains are the qrels grades
// (linear, so a grade-2 document counts double), the document at rank r (from 1)
// is discounted by log2(r+1), and the ideal DCG ranks every judged relevant
// document of the query by grade. A run with no relevant judged document scores
// 0; callers leave such queries out of the mean (trec_eval's ndcg is undefined
// for them, and BEIR's qrels hold none).
func NDCG(run []RankedDoc, judged map[string]int, k int) float64 {
	ranked := trecOrder(run)
	var dcg float64
	for i, d := range ranked {
		if i == k {
			break
		}
		if g := judged[d.ID]; g > 0 {
			dcg += float64(g) / math.Log2(float64(i+2))
		}
	}
	grades := make([]int, 0, len(judged))
	for _, g := range judged {
		if g > 0 {
			grades = append(grades, g)
		}
	}
	slices.SortFunc(grades, func(a, b int) int { return b - a })
	var ideal float64
	for i, g := range grades {
		if i == k {
			break
		}
		ideal += float64(g) / math.Log2(float64(i+2))
	}
	if ideal == 0 {
		return 0
	}
	return dcg / ideal
}

// Recall is the share of the query's relevant documents (grade above 0) among the
// run's first k (in trec_eval's order), trec_eval's recall_k.
func Recall(run []RankedDoc, judged map[string]int, k int) float64 {
	relevant := 0
	for _, g := range judged {
		if g > 0 {
			relevant++
		}
	}
	if relevant == 0 {
		return 0
	}
	found := 0
	for i, d := range trecOrder(run) {
		if i == k {
			break
		}
		if judged[d.ID] > 0 {
			found++
		}
	}
	return float64(found) / float64(relevant)
}

// hasRelevant reports whether a query has a judged relevant document: only those
// queries are scored.
func hasRelevant(judged map[string]int) bool {
	for _, g := range judged {
		if g > 0 {
			return true
		}
	}
	return false
}

// percentile returns the p-th percentile (0–100) of sorted xs by the
// nearest-rank method; 0 for none.
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}
