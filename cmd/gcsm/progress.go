package main

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
)

// startProfile writes a CPU profile to path until the returned stop is called.
func startProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// progress draws a bar on a terminal. It stays silent for the first second,
// so short runs print nothing, and when w is not a terminal (a pipe, a CI
// log), where carriage returns would leave a mess.
type progress struct {
	w         io.Writer
	total     int
	start     time.Time
	last      time.Time
	on, drawn bool
}

func newProgress(w io.Writer, total int, enabled bool) *progress {
	return &progress{w: w, total: total, start: time.Now(), on: enabled && total > 0 && isTerminal(w)}
}

// isTerminal reports whether w is a terminal. A character device is not
// enough: /dev/null is one, and gets neither bars nor colours.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isatty.IsTerminal(f.Fd())
}

func (p *progress) set(n int) {
	if !p.on {
		return
	}
	now := time.Now()
	if now.Sub(p.start) < time.Second || now.Sub(p.last) < 100*time.Millisecond {
		return
	}
	p.last, p.drawn = now, true
	const width = 30
	frac := float64(n) / float64(p.total)
	fill := int(frac * width)
	rate := float64(n) / now.Sub(p.start).Seconds()
	fmt.Fprintf(p.w, "\r[%s%s] %3.0f%% %d/%d updates, %.0f/s ", strings.Repeat("=", fill), strings.Repeat(" ", width-fill), frac*100, n, p.total, rate)
}

func (p *progress) done() {
	if p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
	}
}
