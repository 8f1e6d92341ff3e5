package textproc

import (
	"reflect"
	"strings"
	"testing"
)

func TestEnglishGolden(t *testing.T) {
	cases := []struct {
		text string
		want []string
	}{
		{"The quick brown foxes are jumping over the lazy dogs.",
			[]string{"quick", "brown", "fox", "jump", "over", "lazi", "dog"}},
		{"John's car isn't the company's.", []string{"john", "car", "isn't", "compani"}},
		{"John\u2019s CAR", []string{"john", "car"}},
		{"COVID-19 vaccines reduced hospitalisation by 3.14% in 2021 (n=1,000).",
			[]string{"covid", "19", "vaccin", "reduc", "hospitalis", "3.14", "2021", "n", "1,000"}},
		// Accents are kept, as in Lucene's English analyzer (no ASCII folding): the
		// stemmer does not count "ï" as a vowel.
		{"Naïve café résumé", []string{"naïv", "café", "résumé"}},
		{"Nai\u0308ve", []string{"nai\u0308v"}}, // decomposed ï: the mark stays in the word
		{"ÉCOLE", []string{"école"}},
		{"To be or not to be, that is the question", []string{"question"}},
		{"having generously", []string{"have", "generous"}},
		{"end. Next sentence,and more", []string{"end", "next", "sentenc", "more"}},
		{"'quoted' dogs' tails", []string{"quot", "dog", "tail"}},
		{"", nil},
		{"  ...  --- ", nil},
		{"日本語 テキスト", []string{"日本語", "テキスト"}},
	}
	for _, c := range cases {
		got := English().Tokens(c.text)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("Tokens(%q) = %q, want %q", c.text, got, c.want)
		}
	}
}

func TestStopWordsRemoved(t *testing.T) {
	if len(EnglishStopWords) != 33 {
		t.Fatalf("%d stop words, want Lucene's 33", len(EnglishStopWords))
	}
	if got := English().Tokens(strings.Join(EnglishStopWords, " ")); len(got) != 0 {
		t.Errorf("stop words left: %q", got)
	}
	// Upper case stop words are stop words too.
	if got := English().Tokens("THE And WITH"); len(got) != 0 {
		t.Errorf("stop words left: %q", got)
	}
}

func TestWords(t *testing.T) {
	got := Words("Hello, World's 2nd-best")
	want := []string{"hello", "world's", "2nd", "best"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Words = %q, want %q", got, want)
	}
}

func TestHostileInputDoesNotPanic(t *testing.T) {
	inputs := []string{
		"\xff\xfe\xfd invalid utf8 \xc3",
		strings.Repeat("a", 1<<20),
		strings.Repeat("'", 1000) + "s",
		"a'b'c's'''s",
		"1.2.3.4,5,,6..7",
		"\u0301\u0301 leading marks",
	}
	for _, in := range inputs {
		_ = English().Tokens(in)
	}
}

func BenchmarkEnglish(b *testing.B) {
	text := strings.Repeat("Retrieval-augmented generation combines a retriever's results with the model's answers. ", 20)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		English().Tokens(text)
	}
}
