package rag

import (
	"context"
	"fmt"
)

// Arms is one query's retrieval taken apart, so that a person can see why a
// chunk ranks where it does (the console's query playground): each arm's own
// ranking and the fused one a hybrid retrieval returns.
type Arms struct {
	// Keyword is the keyword (BM25) arm's ranking, best first, at most the
	// query's candidates.
	Keyword []Hit
	// Vector is the vector arm's ranking, best first; nil when there is no
	// vector arm (no embedder). A store filled without vectors gives an empty
	// one.
	Vector []Hit
	// HasVector reports whether the query had a vector arm.
	HasVector bool
	// Fused is what Retrieve returns for the query with strategy hybrid (the
	// reciprocal rank fusion of the two arms, with MinScore and MaxBytes
	// applied); nil without a vector arm, where there is nothing to fuse.
	Fused []Hit
}

// RetrieveArms runs q's arms and fuses them exactly as [Retrieve] does for a
// hybrid query (q.Strategy is ignored): the same candidates per arm, the same
// fusion, the same bounds. Without an embedder only the keyword arm runs. Its
// TopK bounds are Retrieve's (a TopK above MaxTopK is an error).
func RetrieveArms(ctx context.Context, store Store, embedder Embedder, q Query) (Arms, error) {
	if q.TopK <= 0 {
		q.TopK = DefaultTopK
	}
	if q.MaxTopK <= 0 {
		q.MaxTopK = DefaultMaxTopK
	}
	if q.TopK > q.MaxTopK {
		return Arms{}, fmt.Errorf("top_k %d is more than this pipeline returns (max_top_k %d): ask for at most %d passages", q.TopK, q.MaxTopK, q.MaxTopK)
	}
	if q.MaxBytes <= 0 {
		q.MaxBytes = DefaultMaxResultBytes
	}
	if embedder == nil {
		n := q.Candidates
		if n <= 0 {
			n = max(DefaultCandidates, q.TopK)
		}
		sparse, err := store.SearchKeyword(ctx, q.Text, n, q.Filter)
		if err != nil {
			return Arms{}, err
		}
		return Arms{Keyword: sparse}, nil
	}
	dense, sparse, err := hybridArms(ctx, store, embedder, q)
	if err != nil {
		return Arms{}, err
	}
	if dense == nil {
		dense = []Hit{}
	}
	fused := FuseRRF(q.TopK, dense, sparse)
	if q.MinScore != 0 {
		kept := fused[:0]
		for _, h := range fused {
			if h.Score >= q.MinScore {
				kept = append(kept, h)
			}
		}
		fused = kept
	}
	if fused, err = boundBytes(fused, q.MaxBytes); err != nil {
		return Arms{}, err
	}
	return Arms{Keyword: sparse, Vector: dense, HasVector: true, Fused: fused}, nil
}
