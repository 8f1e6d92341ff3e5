// Package textproc turns text into the terms a keyword (BM25) index holds. The
// English analyzer follows Lucene's and Elasticsearch's "english" analyzer, the
// one BM25 baselines such as BEIR's are measured with: standard-tokenizer-like
// word splitting, possessive removal, lowercasing, the classic English stop
// words and Snowball English (Porter2) stemming.
package textproc

import (
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	"github.com/kljensen/snowball/english"
)

// Analyzer turns text into index terms, in order of appearance. The same
// analyzer must be used for documents and queries. Implementations are safe for
// concurrent use.
type Analyzer interface {
	Tokens(text string) []string
}

// AnalyzerFunc adapts a function to [Analyzer].
type AnalyzerFunc func(text string) []string

// Tokens calls f.
func (f AnalyzerFunc) Tokens(text string) []string { return f(text) }

// EnglishStopWords is Lucene's classic English stop word set (the 33 words of
// EnglishAnalyzer and of Elasticsearch's _english_ list).
var EnglishStopWords = []string{
	"a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in",
	"into", "is", "it", "no", "not", "of", "on", "or", "such", "that", "the",
	"their", "then", "there", "these", "they", "this", "to", "was", "will", "with",
}

var englishStop = func() map[string]struct{} {
	m := make(map[string]struct{}, len(EnglishStopWords))
	for _, w := range EnglishStopWords {
		m[w] = struct{}{}
	}
	return m
}()

// stemCacheLimit bounds the stem cache: a corpus' vocabulary is mostly far
// below it, and hostile input (random strings) cannot grow it without bound.
const stemCacheLimit = 200_000

// englishAnalyzer is the analyzer English returns. Stemming allocates several times per
// word, and corpora repeat words heavily, so stems are cached.
type englishAnalyzer struct {
	stems     sync.Map // word -> stem
	stemCount atomic.Int64
}

var shared = &englishAnalyzer{}

// English returns the English analyzer:
//
//   - words are runs of Unicode letters and digits (combining marks stay in their
//     word, so "é" is a letter whether composed or not); everything else
//     separates words, hyphens included ("covid-19" gives "covid" and "19");
//   - as in Unicode word segmentation, an apostrophe between letters keeps a word
//     together ("don't"), and a '.' or ',' between digits keeps a number together
//     ("3.14", "1,000");
//   - a trailing possessive "'s" is removed ("John's" gives "john");
//   - words are lowercased, the classic English stop words dropped, and the rest
//     stemmed with Snowball English (Porter2).
//
// The analyzer is shared and safe for concurrent use.
func English() Analyzer { return shared }

// Tokens implements [Analyzer].
func (e *englishAnalyzer) Tokens(text string) []string {
	var out []string
	splitWords(text, func(word string) {
		word = trimPossessive(word)
		if word == "" {
			return
		}
		if _, stop := englishStop[word]; stop {
			return
		}
		out = append(out, e.stem(word))
	})
	return out
}

// Words splits text into lowercased words the way [English] does, without
// possessive removal, stop words or stemming.
func Words(text string) []string {
	var out []string
	splitWords(text, func(w string) { out = append(out, w) })
	return out
}

func (e *englishAnalyzer) stem(word string) string {
	if v, ok := e.stems.Load(word); ok {
		return v.(string)
	}
	s := stemSafely(word)
	if e.stemCount.Load() < stemCacheLimit {
		// The word may alias a larger text (a substring); clone it so the cache
		// does not keep whole documents alive.
		if _, loaded := e.stems.LoadOrStore(strings.Clone(word), s); !loaded {
			e.stemCount.Add(1)
		}
	}
	return s
}

// stemSafely stems word, or returns it unchanged should the stemmer fail on an
// input it did not expect: a query must never crash the process.
func stemSafely(word string) (stem string) {
	defer func() {
		if recover() != nil {
			stem = word
		}
	}()
	// stemStopWords is true: the stop words that matter were removed already,
	// and Lucene's Snowball filter stems every remaining word, including those
	// of Snowball's own much longer stop list ("having" → "have").
	return english.Stem(word, true)
}

func trimPossessive(w string) string {
	if strings.HasSuffix(w, "'s") {
		return w[:len(w)-2]
	}
	return w
}

// splitWords calls emit with each lowercased word of text. Apostrophes inside
// words are normalised to the ASCII apostrophe.
func splitWords(text string, emit func(string)) {
	var buf []byte // the current word, when it had to be rewritten
	start := -1    // start of the current word in text, while it needs no rewrite
	rewritten := false
	flush := func(end int) {
		if start < 0 && !rewritten {
			return
		}
		if rewritten {
			emit(string(buf))
		} else {
			emit(text[start:end])
		}
		start, rewritten, buf = -1, false, buf[:0]
	}
	// toBuf switches the current word to the rewrite buffer.
	toBuf := func(end int) {
		if !rewritten {
			if start >= 0 {
				buf = append(buf[:0], text[start:end]...)
			} else {
				buf = buf[:0]
			}
			rewritten = true
			start = -1
		}
	}
	inWord := func() bool { return start >= 0 || rewritten }
	var prev rune = -1 // last rune added to the current word
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf { // ASCII fast path
			switch {
			case 'a' <= c && c <= 'z' || '0' <= c && c <= '9':
				if !inWord() {
					start = i
				} else if rewritten {
					buf = append(buf, c)
				}
				prev = rune(c)
				i++
				continue
			case 'A' <= c && c <= 'Z':
				if !inWord() {
					buf, rewritten = buf[:0], true
				} else {
					toBuf(i)
				}
				buf = append(buf, c+'a'-'A')
				prev = rune(c + 'a' - 'A')
				i++
				continue
			case c == '\'' || c == '.' || c == ',':
				if inWord() && joins(prev, c, text[i+1:]) {
					if rewritten {
						buf = append(buf, c)
					}
					prev = rune(c)
					i++
					continue
				}
			}
			flush(i)
			prev = -1
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		switch {
		case r == '\u2019' || r == '\u2018' || r == '\u201B': // typographic apostrophes
			if inWord() && joins(prev, '\'', text[i+size:]) {
				toBuf(i)
				buf = append(buf, '\'')
				prev = '\''
				i += size
				continue
			}
		case unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsNumber(r) || unicode.IsMark(r) && inWord():
			lower := unicode.ToLower(r)
			if !inWord() {
				if lower == r {
					start = i
				} else {
					buf, rewritten = buf[:0], true
				}
			} else if lower != r {
				toBuf(i)
			}
			if rewritten {
				buf = utf8.AppendRune(buf, lower)
			}
			prev = lower
			i += size
			continue
		}
		flush(i)
		prev = -1
		i += size
	}
	flush(len(text))
}

// joins reports whether the punctuation c, after prev and before rest, stays
// inside the word: an apostrophe between letters, '.' or ',' between digits.
func joins(prev rune, c byte, rest string) bool {
	next, _ := utf8.DecodeRuneInString(rest)
	if next == utf8.RuneError {
		return false
	}
	if c == '\'' {
		return unicode.IsLetter(prev) && unicode.IsLetter(next)
	}
	return isDigit(prev) && isDigit(next)
}

func isDigit(r rune) bool { return '0' <= r && r <= '9' || r > utf8.RuneSelf && unicode.IsDigit(r) }
