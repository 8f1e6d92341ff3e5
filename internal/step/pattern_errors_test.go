package step_test

import (
	"strings"
	"testing"

	"github.com/arvenza/helix/internal/config"
	"github.com/arvenza/helix/pkg/app"
)

// Misconfigured pattern steps are reported at load time, with positions, all at once.
func TestPatternBuildErrors(t *testing.T) {
	const head = "workflows:\n  - id: w\n    trigger:\n      uri: direct://w\n    steps:\n"
	cases := []struct {
		name  string
		steps string
		want  []string // substrings of the error, in any order
	}{
		{
			name:  "aggregate without multicast",
			steps: "      - set-body: x\n      - aggregate:\n          strategy: collect\n",
			want:  []string{"t.yaml:7:9", "aggregate must directly follow a multicast step"},
		},
		{
			name:  "unknown multicast strategy",
			steps: "      - multicast:\n          strategy: fanout\n          steps:\n            - set-body: a\n",
			want:  []string{"t.yaml:7:21", `unknown multicast strategy "fanout"`, "use parallel or sequential"},
		},
		{
			name: "aggregate larger than the multicast",
			steps: "      - multicast:\n          steps:\n            - set-body: a\n            - set-body: b\n" +
				"      - aggregate:\n          strategy: collect\n          completion: {size: 3, timeout: 1s}\n",
			want: []string{"t.yaml:12:30", "completion size 3 is more than the 2 branches"},
		},
		{
			name: "unknown aggregation strategy and completion key",
			steps: "      - multicast:\n          steps:\n            - set-body: a\n" +
				"      - aggregate:\n          strategy: latest\n          completion: {sizes: 1}\n",
			want: []string{`unknown aggregation strategy "latest"`, `unknown key "sizes"`},
		},
		{
			name:  "multicast without branches",
			steps: "      - multicast:\n          steps: []\n",
			want:  []string{"a multicast needs at least one branch step"},
		},
		{
			name:  "multicast bad options",
			steps: "      - multicast:\n          max-concurrency: 0\n          timeout: soon\n          steps:\n            - set-body: a\n",
			want:  []string{"max_concurrency must be at least 1", "t.yaml:8:20"},
		},
		{
			name:  "broken branch step is reported",
			steps: "      - multicast:\n          steps:\n            - tranform: {starlang: x}\n",
			want:  []string{`unknown step "tranform"`},
		},
		{
			name:  "when without starlang, unknown choice key",
			steps: "      - choice:\n          when:\n            - steps: []\n          else:\n            steps: []\n",
			want:  []string{`missing required key "starlang"`, `unknown key "else"`},
		},
		{
			name:  "choice condition does not compile",
			steps: "      - choice:\n          when:\n            - starlang: |\n                payload[\n              steps: []\n",
			want:  []string{"t.yaml:9:24:", "starlang", "unclosed '['"},
		},
		{
			name:  "enrich without script",
			steps: "      - enrich: {}\n",
			want:  []string{`missing required key "starlang"`},
		},
		{
			name:  "enrich script does not compile",
			steps: "      - enrich:\n          starlang: |\n            x = = 1\n",
			want:  []string{"t.yaml:8:", "starlang"},
		},
		{
			name:  "wiretap to an unknown scheme",
			steps: "      - wiretap: nosuch://x\n",
			want:  []string{`unknown scheme "nosuch"`},
		},
		{
			name:  "wiretap bad option",
			steps: "      - wiretap: {uri: 'log://a', max-in-flight: 0}\n",
			want:  []string{"max_in_flight must be at least 1"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.LoadBytes("t.yaml", []byte(head+tc.steps))
			if err == nil {
				_, err = app.Build(cfg, app.Options{})
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// The examples of docs/patterns.md's YAML shapes that need no network build cleanly.
func TestPatternValidShapesBuild(t *testing.T) {
	const src = `workflows:
  - id: w
    trigger:
      uri: direct://w
    steps:
      - enrich:
          starlang: |
            _tmp = 1
            accountId = payload["accountId"]
      - wiretap: log://audit
      - wiretap: {uri: "direct://${header.Tap}", max-in-flight: 10}
      - multicast:
          strategy: sequential
          timeout: 60s
          stop-on-error: true
          steps:
            - set-body: a
      - multicast:
          strategy: parallel
          max-concurrency: 2
          steps:
            - set-body: a
            - set-body: b
      - aggregate:
          strategy: collect
          completion:
            size: 2
            timeout: 30s
      - choice:
          when:
            - starlang: 'True'
              steps: []
          otherwise:
            - log: "list form of otherwise"
`
	cfg, err := config.LoadBytes("ok.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := app.Build(cfg, app.Options{}); err != nil {
		t.Fatal(err)
	}
}
