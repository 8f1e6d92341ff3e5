// Package suggest finds the likely intended word for a misspelled one. It backs every
// did-you-mean hint of Helix: YAML keys and step kinds (internal/config) and URI options
// (pkg/component's specs).
package suggest

import "strings"

// Closest returns the candidate closest to word by edit distance (case-insensitive),
// or "" when none is close enough to be a plausible typo. Ties go to the candidate
// that sorts first.
func Closest(word string, candidates []string) string {
	best, bestD := "", -1
	lw := strings.ToLower(word)
	for _, c := range candidates {
		d := Distance(lw, strings.ToLower(c))
		if bestD < 0 || d < bestD || (d == bestD && c < best) {
			best, bestD = c, d
		}
	}
	// Allow roughly one typo per three letters, at least one and at most three.
	limit := min(max(len(word)/3, 1), 3)
	if bestD < 0 || bestD > limit || bestD == len(word) {
		return ""
	}
	return best
}

// Distance is the optimal-string-alignment distance: insertions, deletions,
// substitutions and swaps of adjacent letters (the commonest typo, "kafak") cost 1.
func Distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
