package config

// Settings follow one naming rule (docs/configuration.md, "Names"): YAML keys are
// snake_case, URI options camelCase (as in Camel), Go fields their Go spelling
// (fast_tool_calls, fastToolCalls, FastToolCalls). Step kinds and schemes are names,
// not settings, and keep theirs (set-header, rag-chunk, http-server).
//
// formerKeys maps the documented spellings that broke the rule to the key that
// replaces them. [Decoder.Mapping] accepts a former spelling wherever its
// replacement is a known key, decodes it as that key and warns; writing both is an
// error. The table only ever shrinks: a new key is born snake_case.
var formerKeys = map[string]string{
	// workflows[].error-handler (spec §10.1, §13; docs/patterns.md)
	"error-handler":            "error_handler",
	"dead-letter-channel":      "dead_letter_channel",
	"maximum-redeliveries":     "maximum_redeliveries",
	"redelivery-delay":         "redelivery_delay",
	"backoff-multiplier":       "backoff_multiplier",
	"maximum-redelivery-delay": "maximum_redelivery_delay",
	// multicast and wiretap steps (docs/patterns.md)
	"stop-on-error":   "stop_on_error",
	"max-concurrency": "max_concurrency",
	"max-in-flight":   "max_in_flight",
}

// specSpellings are the former spellings the specification's own examples write
// (§10.1, Recipe 2). A user copying the spec must not be told off for it, so these
// load without a warning; the JSON Schema still marks them deprecated, which editors
// show, and docs/configuration.md names the snake_case key.
var specSpellings = map[string]bool{
	"error-handler":        true,
	"dead-letter-channel":  true,
	"maximum-redeliveries": true,
}

// FormerKey returns the key that replaced a former spelling (error-handler →
// error_handler), and whether key is one. Documentation and the JSON Schema use it
// to show deprecated spellings.
func FormerKey(key string) (string, bool) {
	cur, ok := formerKeys[key]
	return cur, ok
}

// renamedKey reports whether pair p of a mapping decoded with fields is written in
// a former spelling of a known key, and warns when it is. Mapping reports a key
// written in both spellings.
func renamedKey(d *Decoder, fields Fields, p Pair, path string) (string, bool) {
	cur, ok := formerKeys[p.Key]
	if !ok {
		return "", false
	}
	if _, known := fields[cur]; !known {
		return "", false
	}
	if _, known := fields[p.Key]; known {
		return "", false // a mapping that still declares the old spelling itself
	}
	if !specSpellings[p.Key] {
		d.Warn(p.KeyN, path, "%s is deprecated: write %s", p.Key, cur).Hint =
			"YAML keys are snake_case (docs/configuration.md, Names); the old spelling still works"
	}
	return cur, true
}
