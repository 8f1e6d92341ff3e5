// Package file implements file://dir: reading and writing files below a base
// directory (producer) and picking up files dropped into a directory (consumer).
//
// The base directory is the URI's address: file://./data is ./data, file:///srv/in is
// /srv/in, file:/// is the file-system root. Every file name is relative to it, and a
// name that leaves it ("../x", an absolute path elsewhere, a symlink pointing outside)
// is refused. The checks are made twice: by name, resolving symlinks (for a clear
// error), and by the operating system through os.Root (so that a symlink swapped in
// between cannot escape).
//
// The options (operation, fileName, fileExist, allowEscape for the producer; period,
// initialDelay, delete for the consumer) and headers are declared in spec.go ([Spec]).
//
// A fileName written with a placeholder (file://./data?fileName=${body.name}) is data
// chosen by whoever sent the exchange — a tool argument, an HTTP body. Such a name
// must be relative and stay inside the directory: no "..", not absolute, no symlink
// out; and a base of file:/// (the whole file system) accepts no such name at all. A
// directory written with a placeholder (file://${body.dir}) is refused for the same
// reason.
// Only allowEscape=true, written in the URI itself (it cannot come from a
// placeholder), lifts this; with it any name the process can open is used, relative
// names still counted from the base directory. Values substituted into the URI cannot
// add options: the engine query-escapes them.
//
// Both operations set HelixFileName to the name used. Writes create missing parent
// directories and, for override, write to a hidden temporary file first and rename it,
// so that a consumer polling the directory never sees half a file.
//
// The consumer takes regular files directly in the directory (not subdirectories,
// not names starting with "." so temporary files are left alone), oldest name first,
// one InOnly exchange per file with the content as a string body and HelixFileName set
// to the name. After success the file moves to .done/ (or is deleted with delete=true);
// after a failure it moves to .error/ so that it is not retried forever. A program
// that drops files in the directory should write them under a name starting with "."
// and rename them when complete, as the producer does; the consumer does not try to
// guess whether a file is still being written.
package file

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/arvenza/helix/internal/runloop"
	"github.com/arvenza/helix/pkg/component"
	"github.com/arvenza/helix/pkg/exchange"
	"github.com/arvenza/helix/pkg/uri"
)

// Directories the consumer moves processed files into, inside the base directory.
const (
	DoneDir  = ".done"
	ErrorDir = ".error"
)

// DefaultStopTimeout bounds a consumer's Stop when its context has no deadline.
const DefaultStopTimeout = 30 * time.Second

// ErrOutsideBase is wrapped by every error about a file name that leaves the base directory.
var ErrOutsideBase = errors.New("file name leaves the base directory")

// Component is the file:// component. Safe for concurrent use; it holds no shared state.
type Component struct {
	logger func() *slog.Logger
}

var _ component.Component = (*Component)(nil)

// New returns a file component that reports consumer failures to the logger that
// logger() returns at that moment (slog.Default when logger is nil).
func New(logger func() *slog.Logger) *Component {
	if logger == nil {
		logger = slog.Default
	}
	return &Component{logger: logger}
}

// uriOptions are the URI's options (see Spec).
type uriOptions struct {
	Operation      string        `option:"operation"`
	FileName       string        `option:"fileName"`
	NameFromData   bool          `option:"fileName,placeholder"`
	FileExist      string        `option:"fileExist"`
	AllowEscape    bool          `option:"allowEscape"`
	EscapeFromData bool          `option:"allowEscape,placeholder"`
	Period         time.Duration `option:"period"`
	InitialDelay   time.Duration `option:"initialDelay"`
	Delete         bool          `option:"delete"`
}

var uriBinding = component.Bind[uriOptions](Spec)

// CreateEndpoint validates the options and resolves the base directory to an absolute
// path; it touches nothing on disk.
func (c *Component) CreateEndpoint(u *uri.URI) (component.Endpoint, error) {
	dir := u.Host + u.Path
	if u.AddressFromPlaceholder() {
		// uri.ExpandURI percent-encoded the placeholder's value (a '/' in it is %2F);
		// such a directory is only accepted with allowEscape=true (below), which
		// lets the caller name any directory: decode it to the name it stands for.
		if d, err := url.PathUnescape(dir); err == nil {
			dir = d
		}
	}
	if dir == "" {
		dir = "."
	}
	base, err := filepath.Abs(filepath.FromSlash(dir))
	if err != nil {
		return nil, fmt.Errorf("%s: base directory %q: %w", u.Raw, dir, err)
	}
	opts, err := uriBinding.Parse(u)
	if err != nil {
		return nil, err
	}
	e := &endpoint{c: c, raw: u.Raw, base: base, fileName: opts.FileName,
		nameFromData: opts.NameFromData, allowEscape: opts.AllowEscape,
		op: opts.Operation, fileExist: opts.FileExist,
		period: opts.Period, initialDelay: opts.InitialDelay, delete: opts.Delete}
	if opts.EscapeFromData {
		return nil, fmt.Errorf("option allowEscape must be written as true or false, not come from a placeholder")
	}
	if u.AddressFromPlaceholder() && !e.allowEscape {
		return nil, fmt.Errorf("%w: the directory comes from a placeholder, so the caller could pick any directory; write the directory in the URI and the placeholder in fileName, or set allowEscape=true", ErrOutsideBase)
	}
	if e.period <= 0 {
		return nil, fmt.Errorf("option period=%s must be positive", e.period)
	}
	if e.initialDelay < 0 {
		return nil, fmt.Errorf("option initialDelay=%s must not be negative", e.initialDelay)
	}
	return e, nil
}

type endpoint struct {
	c            *Component
	raw          string
	base         string // absolute, cleaned
	op           string
	fileName     string
	fileExist    string
	nameFromData bool // fileName was resolved from a ${…} placeholder
	allowEscape  bool
	period       time.Duration
	initialDelay time.Duration
	delete       bool
}

func (e *endpoint) URI() string { return e.raw }

func (e *endpoint) CreateProducer() (component.Producer, error) { return &producer{e: e}, nil }

func (e *endpoint) CreateConsumer(p component.Processor) (component.Consumer, error) {
	if p == nil {
		return nil, errors.New("file: consumer needs a processor")
	}
	return &consumer{e: e, p: p}, nil
}

// resolve maps name to a location below the base directory, refusing names that
// leave it: it returns the directory to open as an os.Root and the path relative to
// it. Absolute names are accepted when they lie inside the base
// (file:///?fileName=/data/x.csv). Symlinks in the existing part of the path are
// resolved here (and must stay inside the base) so that os.Root, which refuses any
// absolute symlink, still opens paths like /usr/bin/x -> /etc/alternatives/x when the
// base is /.
func (e *endpoint) resolve(name string, fromData bool) (dir, rel string, err error) {
	base := e.base
	if name == "" {
		return "", "", errors.New("no file name: set the fileName option or the HelixFileName header")
	}
	if strings.ContainsRune(name, 0) {
		return "", "", fmt.Errorf("file name %q contains a NUL byte", name)
	}
	native := filepath.FromSlash(name)
	if e.allowEscape {
		// Any name the operating system can open: confine to the file-system root
		// (of the target's volume) instead of the base directory.
		if !filepath.IsAbs(native) {
			native = filepath.Join(base, native)
		}
		base = filepath.VolumeName(native) + string(filepath.Separator)
	} else if fromData {
		if filepath.Dir(base) == base {
			return "", "", fmt.Errorf("%w: %q comes from a placeholder and the directory is the file-system root, so the caller could pick any file; name a directory (file:///srv/data?fileName=${…}) or set allowEscape=true", ErrOutsideBase, name)
		}
		if !filepath.IsLocal(native) {
			return "", "", fmt.Errorf("%w: %q comes from a placeholder and must be a relative name inside %s (no \"..\", not absolute); set allowEscape=true to allow other names", ErrOutsideBase, name, base)
		}
	}
	var target string
	if filepath.IsAbs(native) {
		target = filepath.Clean(native)
	} else {
		target = filepath.Join(base, native)
	}
	if rel, err = filepath.Rel(base, target); err != nil || !filepath.IsLocal(rel) {
		return "", "", fmt.Errorf("%w: %q is outside %s", ErrOutsideBase, name, base)
	}
	realBase, err := filepath.EvalSymlinks(base)
	if err != nil {
		// A base that does not exist yet holds no symlinks; a write creates it.
		return base, rel, nil
	}
	// Resolve the longest existing prefix of the target; the rest does not exist yet.
	existing, rest := target, ""
	for {
		if _, err := os.Lstat(existing); err == nil {
			break
		}
		parent := filepath.Dir(existing)
		if parent == existing {
			return base, rel, nil
		}
		rest = filepath.Join(filepath.Base(existing), rest)
		existing = parent
	}
	real, err := filepath.EvalSymlinks(existing)
	if err != nil {
		return "", "", fmt.Errorf("file name %q: %w", name, err)
	}
	real = filepath.Join(real, rest)
	realRel, err := filepath.Rel(realBase, real)
	if err != nil || !filepath.IsLocal(realRel) {
		// Where the link leads is not the caller's business: not in the error.
		return "", "", fmt.Errorf("%w: %q resolves through a symbolic link to a place outside the directory", ErrOutsideBase, name)
	}
	return realBase, realRel, nil
}

type producer struct {
	component.NopService
	e *endpoint
}

// Process reads or writes one file. Safe for concurrent use; concurrent overriding
// writes to one name each land whole (last rename wins).
func (p *producer) Process(ctx context.Context, ex *exchange.Exchange) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	name := p.e.fileName
	if name == "" {
		name = ex.In().HeaderString(HeaderFileName)
	}
	fromData := p.e.nameFromData && p.e.fileName != ""
	dir, rel, err := p.e.resolve(name, fromData)
	if err != nil {
		if fromData && errors.Is(err, ErrOutsideBase) && !strings.Contains(err.Error(), "allowEscape") {
			err = fmt.Errorf("%w (the name comes from a placeholder; set allowEscape=true to allow it)", err)
		}
		return fmt.Errorf("%s: %w", p.e.raw, err)
	}
	if p.e.op == "read" {
		err = p.read(ex, dir, rel)
	} else {
		err = p.write(ex, dir, rel)
	}
	if err != nil {
		return fmt.Errorf("%s: %s %s: %w", p.e.raw, p.e.op, name, err)
	}
	ex.In().SetHeader(HeaderFileName, p.e.shownName(name))
	return nil
}

// shownName is how a file is named to the caller: relative to the base
// directory, worked out from the name itself (lexically), so that neither the
// absolute name it may have been given nor the target of a symbolic link (the
// base's or one below it) is shown.
func (e *endpoint) shownName(name string) string {
	native := filepath.Clean(filepath.FromSlash(name))
	if filepath.IsAbs(native) {
		if rel, err := filepath.Rel(e.base, native); err == nil {
			native = rel
		}
	}
	return filepath.ToSlash(native)
}

func (p *producer) read(ex *exchange.Exchange, dir, rel string) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	data, err := root.ReadFile(rel)
	if err != nil {
		return err
	}
	ex.In().SetBody(string(data))
	return nil
}

func (p *producer) write(ex *exchange.Exchange, dir, rel string) error {
	data, err := bodyBytes(ex.In().Body())
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	if sub := filepath.Dir(rel); sub != "." {
		if err := root.MkdirAll(sub, 0o755); err != nil {
			return err
		}
	}
	switch p.e.fileExist {
	case "append":
		f, err := root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		_, werr := f.Write(data)
		return errors.Join(werr, f.Close())
	case "fail":
		f, err := root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("file exists and fileExist=fail: %w", err)
		}
		if err != nil {
			return err
		}
		_, werr := f.Write(data)
		return errors.Join(werr, f.Close())
	default:
		tmp := filepath.Join(filepath.Dir(rel), "."+filepath.Base(rel)+".tmp-"+randomSuffix())
		if err := root.WriteFile(tmp, data, 0o644); err != nil {
			return err
		}
		if err := root.Rename(tmp, rel); err != nil {
			_ = root.Remove(tmp)
			return err
		}
		return nil
	}
}

// bodyBytes renders a body for writing: text and bytes as they are, nil as an empty
// file, structured values as JSON.
func bodyBytes(body any) ([]byte, error) {
	switch b := body.(type) {
	case nil:
		return nil, nil
	case string:
		return []byte(b), nil
	case []byte:
		return b, nil
	case json.RawMessage:
		return b, nil
	case map[string]any, []any:
		out, err := json.Marshal(b)
		if err != nil {
			return nil, fmt.Errorf("encode body as JSON: %w", err)
		}
		return out, nil
	default:
		return []byte(exchange.Stringify(b)), nil
	}
}

func randomSuffix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// consumer polls the base directory on one goroutine it owns between Start and Stop.
type consumer struct {
	e    *endpoint
	p    component.Processor
	loop runloop.Loop
}

// Start creates the directory when missing (a drop folder should exist once its
// workflow runs) and starts polling.
func (c *consumer) Start(context.Context) error {
	if err := os.MkdirAll(c.e.base, 0o755); err != nil {
		return fmt.Errorf("%s: create directory: %w", c.e.raw, err)
	}
	if !c.loop.Start(c.run) {
		return fmt.Errorf("%s: consumer already started or stopped", c.e.raw)
	}
	return nil
}

func (c *consumer) run(ctx context.Context, stop <-chan struct{}) {
	wait := time.NewTimer(c.e.initialDelay)
	defer wait.Stop()
	for {
		select {
		case <-stop:
			return
		case <-wait.C:
		}
		if err := c.poll(ctx, stop); err != nil {
			c.e.c.logger().Warn("file consumer poll failed", "uri", c.e.raw, "error", err)
		}
		wait.Reset(c.e.period)
	}
}

// poll processes the files present now, checking stop between files so that Stop
// waits for one file at most.
func (c *consumer) poll(ctx context.Context, stop <-chan struct{}) error {
	root, err := os.OpenRoot(c.e.base)
	if err != nil {
		return err
	}
	defer root.Close()
	entries, err := fs.ReadDir(root.FS(), ".")
	if err != nil {
		return err
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	for _, ent := range entries {
		select {
		case <-stop:
			return nil
		default:
		}
		if !ent.Type().IsRegular() || strings.HasPrefix(ent.Name(), ".") {
			continue
		}
		c.consume(ctx, root, ent.Name())
	}
	return nil
}

func (c *consumer) consume(ctx context.Context, root *os.Root, name string) {
	log := c.e.c.logger()
	data, err := root.ReadFile(name)
	if err != nil {
		log.Warn("file consumer: cannot read file", "uri", c.e.raw, "file", name, "error", err)
		return
	}
	ex := exchange.NewWithBody(exchange.InOnly, string(data))
	ex.In().SetHeader(HeaderFileName, name)
	err = c.p.Process(ctx, ex)
	if err == nil {
		err = ex.Exception()
	}
	if err != nil {
		log.Warn("file exchange failed; moving the file to "+ErrorDir, "uri", c.e.raw, "file", name, "error", err)
		if merr := moveInto(root, name, ErrorDir); merr != nil {
			log.Error("file consumer: cannot move failed file", "uri", c.e.raw, "file", name, "error", merr)
		}
		return
	}
	if c.e.delete {
		err = root.Remove(name)
	} else {
		err = moveInto(root, name, DoneDir)
	}
	if err != nil {
		// Left in place the file would be processed again on every poll.
		log.Error("file consumer: cannot move processed file; it will be picked up again", "uri", c.e.raw, "file", name, "error", err)
	}
}

func moveInto(root *os.Root, name, dir string) error {
	if err := root.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return root.Rename(name, filepath.Join(dir, name))
}

// Stop stops polling and waits for the file being processed; when ctx (or
// DefaultStopTimeout without a deadline) ends first, the exchange's context is
// cancelled and Stop waits one more second before reporting an error.
func (c *consumer) Stop(ctx context.Context) error {
	if err := c.loop.Stop(ctx, DefaultStopTimeout, time.Second); err != nil {
		return fmt.Errorf("stop %s: %w", c.e.raw, err)
	}
	return nil
}
