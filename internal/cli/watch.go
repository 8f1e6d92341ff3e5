package cli

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// watchDebounce is how long the files must be quiet before a change reloads
// them: an editor's save is several events (truncate and write, or write a
// temporary file and rename it over the original), and a reload in the middle
// would read half a file.
const watchDebounce = 250 * time.Millisecond

// fileWatcher asks for a reload when one of the files changes (helix run --watch).
type fileWatcher struct {
	w    *fsnotify.Watcher
	done chan struct{}
}

// watchFiles watches files and calls reload (with the changed file's name) once
// they have been quiet for watchDebounce. It watches their directories, not the
// files themselves: editors that save by renaming a new file over the old one
// replace the watched inode, and a watch on the file would see only its removal.
func watchFiles(files []string, reload func(reason string), logger *slog.Logger) (*fileWatcher, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	watched := map[string]bool{}
	dirs := map[string]bool{}
	for _, f := range files {
		abs, err := filepath.Abs(f)
		if err != nil {
			_ = w.Close()
			return nil, err
		}
		watched[abs] = true
		dir := filepath.Dir(abs)
		if dirs[dir] {
			continue
		}
		dirs[dir] = true
		if err := w.Add(dir); err != nil {
			_ = w.Close()
			return nil, fmt.Errorf("watch %s: %w", dir, err)
		}
	}
	fw := &fileWatcher{w: w, done: make(chan struct{})}
	go fw.loop(watched, reload, logger)
	logger.Info("watching the configuration files; a change reloads them", "files", files)
	return fw, nil
}

func (fw *fileWatcher) loop(watched map[string]bool, reload func(string), logger *slog.Logger) {
	defer close(fw.done)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var changed string
	for {
		select {
		case ev, ok := <-fw.w.Events:
			if !ok {
				timer.Stop()
				return
			}
			// Chmod alone (touch, a backup tool) changes nothing that matters.
			if !relevant(watched, ev.Name) || ev.Op == fsnotify.Chmod {
				continue
			}
			changed = ev.Name
			timer.Reset(watchDebounce)
		case err, ok := <-fw.w.Errors:
			if !ok {
				timer.Stop()
				return
			}
			logger.Warn("--watch: watching the configuration files failed; SIGHUP still reloads", "error", err)
		case <-timer.C:
			reload("file changed: " + changed)
		}
	}
}

// Close stops watching.
func (fw *fileWatcher) Close() {
	_ = fw.w.Close()
	<-fw.done
}

// relevant reports whether a change of name concerns the watched files: one of
// them, or a Kubernetes ConfigMap volume's "..data" link (and its "..2026_…"
// targets), which the kubelet swaps to update every file of the volume at once.
func relevant(watched map[string]bool, name string) bool {
	name = filepath.Clean(name)
	return watched[name] || strings.HasPrefix(filepath.Base(name), "..")
}
