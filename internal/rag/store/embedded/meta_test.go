package embedded

import (
	"reflect"
	"testing"

	"github.com/arvenza/helix/internal/rag"
)

// TestDocumentEntryHoldsNoMaps: a document's metadata are kept as compact
// encoded bytes (a Go map per document costs hundreds of bytes), decoded for
// filters into what a restart would read back from the log.
func TestDocumentEntryHoldsNoMaps(t *testing.T) {
	typ := reflect.TypeOf(docEntry{})
	for i := range typ.NumField() {
		f := typ.Field(i)
		for k := f.Type; ; k = k.Elem() {
			if k.Kind() == reflect.Map || k.Kind() == reflect.Interface {
				t.Fatalf("docEntry.%s is of type %s", f.Name, f.Type)
			}
			if k.Kind() != reflect.Slice && k.Kind() != reflect.Array && k.Kind() != reflect.Pointer {
				break
			}
		}
	}
	dir := t.TempDir()
	s, _ := open(t, dir, Options{NoSync: true})
	meta := map[string]any{"tenant": "t1", "n": int64(3), "f": float32(0.5), "ok": true, "tags": []any{"a", "b"}, "nested": map[string]any{"x": 1}}
	cs := []rag.Chunk{{Index: 0, Text: "one two", Metadata: meta}, {Index: 1, Text: "three", Metadata: map[string]any{"tenant": "t2"}}, {Index: 2, Text: "four"}}
	mustPut(t, s, "d", "h", cs, nil)
	var fresh [3]map[string]any
	for i, ord := range s.idx.docs["d"].ords {
		fresh[i] = s.idx.metadata(ord)
	}
	s.Close()
	s, _ = open(t, dir, Options{NoSync: true})
	for i, ord := range s.idx.docs["d"].ords {
		if got := s.idx.metadata(ord); !reflect.DeepEqual(got, fresh[i]) {
			t.Errorf("chunk %d's metadata after a restart %#v, before %#v", i, got, fresh[i])
		}
	}
	if fresh[0]["tenant"] != "t1" || fresh[0]["n"] != 3 || fresh[0]["f"] != 0.5 || fresh[1]["tenant"] != "t2" || len(fresh[2]) != 0 {
		t.Fatalf("decoded metadata %#v", fresh)
	}
}

// TestMetadataCacheFollowsDocuments: a query's decoded metadata are reused
// from one document to the next without one's keys showing in the other's.
func TestMetadataCacheFollowsDocuments(t *testing.T) {
	s, _ := open(t, t.TempDir(), Options{NoSync: true})
	mustPut(t, s, "a", "h", []rag.Chunk{{Text: "x", Metadata: map[string]any{"k": "a", "only": true}}, {Index: 1, Text: "y", Metadata: map[string]any{"k": "a2"}}}, nil)
	mustPut(t, s, "b", "h", []rag.Chunk{{Text: "x", Metadata: map[string]any{"k": "b"}}}, nil)
	mustPut(t, s, "c", "h", []rag.Chunk{{Text: "x"}}, nil)
	var c metaCache
	want := []map[string]any{{"k": "a", "only": true}, {"k": "a2"}, {"k": "b"}, nil, {"k": "b"}, {"k": "a2"}, {"k": "a", "only": true}}
	for i, ord := range []uint32{0, 1, 2, 3, 2, 1, 0} {
		if got := s.idx.metadataVia(ord, &c); len(got) != len(want[i]) || (len(got) > 0 && !reflect.DeepEqual(got, want[i])) {
			t.Fatalf("step %d, chunk %d: %v, want %v", i, ord, got, want[i])
		}
	}
}

// TestDocumentHashesKeptAsGiven: a content hash of 64 lowercase hex digits
// (what the pipeline writes) is kept as its 32 bytes; any other hash as it
// is; Documents returns each exactly as put, before and after a restart.
func TestDocumentHashesKeptAsGiven(t *testing.T) {
	if h := makeDocHash("9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"); h.other != nil {
		t.Fatal("a sha256 hex hash is not kept as bytes")
	}
	dir := t.TempDir()
	s, _ := open(t, dir, Options{NoSync: true})
	want := map[string]string{
		"a": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		"b": "9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B2B0B822CD15D6C15B0F00A08",
		"c": "short",
		"d": "",
		"e": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a0g",
	}
	for id, h := range want {
		mustPut(t, s, id, h, []rag.Chunk{{Text: "x"}}, nil)
	}
	check := func(when string) {
		got, err := s.Documents(ctx)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: %v, %v; want %v", when, got, err, want)
		}
	}
	check("open")
	s.Close()
	s, _ = open(t, dir, Options{NoSync: true})
	check("after a restart")
}

// TestValueLenMeasuresEveryEncoding: valueLen finds the end of each kind of
// encoded metadata value, and refuses one cut short.
func TestValueLenMeasuresEveryEncoding(t *testing.T) {
	for _, v := range []any{nil, "", "tenant", 3, -400000, int64(1 << 40), 0.5, float32(2), true, false, []any{"a", 1.0}, map[string]any{"k": "v"}} {
		b := appendValue(nil, v)
		if n := valueLen(append(b, 0xff, 0xff)); n != len(b) {
			t.Errorf("%#v: %d bytes, measured %d", v, len(b), n)
		}
		if n := valueLen(b[:len(b)-1]); n != 0 {
			t.Errorf("%#v cut short measured %d", v, n)
		}
	}
}
