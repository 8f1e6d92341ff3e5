package rag

// BoundBytes keeps the hits that fit in max bytes as [Retrieve] does (the hit
// that crosses the bound cut, with a note): for a caller that reorders hits
// after retrieving them unbounded (a reranker must read whole passages, and
// the bound applies to what is answered).
func BoundBytes(hits []Hit, max int) ([]Hit, error) {
	if max <= 0 {
		max = DefaultMaxResultBytes
	}
	return boundBytes(hits, max)
}
