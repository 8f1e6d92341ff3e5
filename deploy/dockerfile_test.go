package deploy

import (
	"fmt"
	"os"
	"path"
	"regexp"
	"strconv"
	"strings"
)

// dockerfile is what the checks need of a Dockerfile: its global ARGs and its stages,
// each a list of instructions with their line numbers. It is a small parser for the
// instructions Helix's Dockerfile uses, not a full implementation of the format.
type dockerfile struct {
	path   string
	args   map[string]string // ARGs declared before the first FROM, with their defaults
	stages []*dockerStage
}

type dockerStage struct {
	line  int
	image string // expanded: golang:1.26.8, scratch …
	name  string // AS name
	args  map[string]string
	instr []dockerInstr
}

type dockerInstr struct {
	line int
	cmd  string // upper case: RUN, COPY …
	rest string
}

// parseDockerfile reads instructions (continuation lines joined, comments and blank
// lines dropped) and groups them by stage.
func parseDockerfile(name string, data []byte) (*dockerfile, error) {
	d := &dockerfile{path: name, args: map[string]string{}}
	lines := strings.Split(string(data), "\n")
	for i := 0; i < len(lines); i++ {
		start := i + 1
		text := strings.TrimSpace(lines[i])
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		for strings.HasSuffix(text, `\`) && i+1 < len(lines) {
			text = strings.TrimSuffix(text, `\`)
			i++
			next := strings.TrimSpace(lines[i])
			if strings.HasPrefix(next, "#") {
				continue // Docker drops comment lines inside a continued instruction
			}
			text += " " + next
		}
		cmd, rest, _ := strings.Cut(text, " ")
		in := dockerInstr{line: start, cmd: strings.ToUpper(cmd), rest: strings.TrimSpace(rest)}
		switch {
		case in.cmd == "FROM":
			st, err := d.parseFrom(in)
			if err != nil {
				return nil, err
			}
			d.stages = append(d.stages, st)
		case len(d.stages) == 0:
			if in.cmd != "ARG" {
				return nil, fmt.Errorf("%s:%d: %s before the first FROM", name, in.line, in.cmd)
			}
			k, v := parseArg(in.rest)
			d.args[k] = v
		default:
			st := d.stages[len(d.stages)-1]
			if in.cmd == "ARG" {
				for _, decl := range strings.Fields(in.rest) {
					k, v := parseArg(decl)
					if _, global := d.args[k]; global && !strings.Contains(decl, "=") {
						v = d.args[k] // ARG NAME in a stage takes the global default
					}
					st.args[k] = v
				}
			}
			st.instr = append(st.instr, in)
		}
	}
	if len(d.stages) == 0 {
		return nil, fmt.Errorf("%s: no FROM", name)
	}
	return d, nil
}

func (d *dockerfile) parseFrom(in dockerInstr) (*dockerStage, error) {
	st := &dockerStage{line: in.line, args: map[string]string{}}
	var words []string
	for _, w := range strings.Fields(in.rest) {
		if !strings.HasPrefix(w, "--") { // --platform=…
			words = append(words, w)
		}
	}
	switch {
	case len(words) == 1:
	case len(words) == 3 && strings.EqualFold(words[1], "AS"):
		st.name = words[2]
	default:
		return nil, fmt.Errorf("%s:%d: FROM %s: want IMAGE [AS NAME]", d.path, in.line, in.rest)
	}
	st.image = expandVars(words[0], d.args)
	return st, nil
}

func parseArg(decl string) (string, string) {
	k, v, _ := strings.Cut(strings.TrimSpace(decl), "=")
	return k, strings.Trim(v, `"`)
}

func (d *dockerfile) final() *dockerStage { return d.stages[len(d.stages)-1] }

// last returns the stage's last instruction cmd, or false.
func (s *dockerStage) last(cmd string) (dockerInstr, bool) {
	for i := len(s.instr) - 1; i >= 0; i-- {
		if s.instr[i].cmd == cmd {
			return s.instr[i], true
		}
	}
	return dockerInstr{}, false
}

// exposed returns the ports of the stage's EXPOSE instructions (TCP only: "8080" or
// "8080/tcp").
func (s *dockerStage) exposed() (map[int32]int, error) {
	ports := map[int32]int{}
	for _, in := range s.instr {
		if in.cmd != "EXPOSE" {
			continue
		}
		for _, w := range strings.Fields(in.rest) {
			p, proto, _ := strings.Cut(w, "/")
			n, err := strconv.ParseUint(p, 10, 16)
			if err != nil || (proto != "" && !strings.EqualFold(proto, "tcp")) {
				return nil, fmt.Errorf("line %d: EXPOSE %s: want a TCP port number", in.line, w)
			}
			ports[int32(n)] = in.line
		}
	}
	return ports, nil
}

// workdir is the stage's final WORKDIR, resolved against earlier ones.
func (s *dockerStage) workdir() string {
	wd := "/"
	for _, in := range s.instr {
		if in.cmd == "WORKDIR" {
			wd = path.Join(wd, in.rest) // an absolute WORKDIR replaces wd
			if path.IsAbs(in.rest) {
				wd = path.Clean(in.rest)
			}
		}
	}
	return wd
}

var varRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)`)

// expandVars replaces $NAME and ${NAME} by vars[NAME]; unknown names expand to "",
// as in a shell.
func expandVars(s string, vars map[string]string) string {
	return varRef.ReplaceAllStringFunc(s, func(m string) string {
		sub := varRef.FindStringSubmatch(m)
		name := sub[1] + sub[2]
		return vars[name]
	})
}

// goBuild is the `go build` command of the build stage: its environment
// assignments, its arguments after `go`, and the -o output path.
type goBuild struct {
	line int
	env  []string // NAME=value, in order
	args []string // "build", flags…, packages
	out  string
}

func (b goBuild) envValue(name string) (string, bool) {
	v, ok := "", false
	for _, kv := range b.env {
		if k, val, _ := strings.Cut(kv, "="); k == name {
			v, ok = val, true
		}
	}
	return v, ok
}

// buildCommand finds the one RUN instruction of the stage that runs `go build` and
// splits it into words as sh would (quotes, variables from the stage's ARGs). The
// instruction must be that single command: no &&, ; or pipes, so that what the test
// runs is exactly what the image build runs.
func (s *dockerStage) buildCommand() (goBuild, error) {
	var found []dockerInstr
	for _, in := range s.instr {
		if in.cmd == "RUN" && strings.Contains(in.rest, "go build") {
			found = append(found, in)
		}
	}
	if len(found) != 1 {
		return goBuild{}, fmt.Errorf("stage %q: want exactly one RUN with `go build`, found %d", s.name, len(found))
	}
	in := found[0]
	words, err := shellWords(in.rest, s.args)
	if err != nil {
		return goBuild{}, fmt.Errorf("line %d: %w", in.line, err)
	}
	b := goBuild{line: in.line}
	i := 0
	for ; i < len(words) && regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`).MatchString(words[i]); i++ {
		b.env = append(b.env, words[i])
	}
	if i+1 >= len(words) || words[i] != "go" || words[i+1] != "build" {
		return goBuild{}, fmt.Errorf("line %d: want [NAME=value…] go build …, got %q", in.line, in.rest)
	}
	b.args = words[i+1:]
	for j, a := range b.args {
		if a == "-o" && j+1 < len(b.args) {
			b.out = b.args[j+1]
		}
	}
	if b.out == "" {
		return goBuild{}, fmt.Errorf("line %d: go build has no -o", in.line)
	}
	return b, nil
}

// shellWords splits a command line the way sh does for the forms a build line uses:
// words separated by blanks, '…' literal, "…" with variables expanded, bare
// variables expanded. Operators (&&, ;, |, >, <, backquotes, $(…)) are refused.
func shellWords(line string, vars map[string]string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	flush := func() {
		if inWord {
			words = append(words, cur.String())
			cur.Reset()
			inWord = false
		}
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t':
			flush()
		case c == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unterminated ' in %q", line)
			}
			cur.WriteString(line[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			j := strings.IndexByte(line[i+1:], '"')
			if j < 0 {
				return nil, fmt.Errorf("unterminated \" in %q", line)
			}
			seg := line[i+1 : i+1+j]
			if strings.ContainsAny(seg, "`\\") || strings.Contains(seg, "$(") {
				return nil, fmt.Errorf("unsupported shell syntax in %q", seg)
			}
			cur.WriteString(expandVars(seg, vars))
			i += j + 1
			inWord = true
		case strings.IndexByte("&;|<>`()\\", c) >= 0:
			return nil, fmt.Errorf("the go build line must be one plain command, found %q in %q", c, line)
		case c == '$':
			loc := varRef.FindStringIndex(line[i:])
			if loc == nil || loc[0] != 0 {
				return nil, fmt.Errorf("unsupported $ in %q", line)
			}
			cur.WriteString(expandVars(line[i:i+loc[1]], vars))
			i += loc[1] - 1
			inWord = true
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	flush()
	return words, nil
}

// goModVersion is the `go` line of a go.mod.
func goModVersion(file string) (string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	for _, l := range strings.Split(string(data), "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[0] == "go" {
			return f[1], nil
		}
	}
	return "", fmt.Errorf("%s: no go line", file)
}
