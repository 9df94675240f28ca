package main

import (
	"flag"
	"fmt"
	"io"
	"reflect"
	"runtime/debug"
	"strings"
)

// helpRequest is flag.ErrHelp with the flags whose help was asked for.
type helpRequest struct {
	fs  *flag.FlagSet
	all bool // --help-all: the advanced flags too
}

func (h *helpRequest) Error() string { return "help requested" }
func (h *helpRequest) Unwrap() error { return flag.ErrHelp }

// advanced reports whether a flag belongs to the GPU tuning group, which
// -h leaves out: a dozen flags that matter only to GPU experiments would
// bury the few every run needs.
func advanced(f *flag.Flag) bool { return strings.HasPrefix(f.Name, "gpu-") }

// print writes the command's summary and flags, the advanced group last
// and under its own heading, or only counted without --help-all.
func (h *helpRequest) print(w io.Writer) {
	name := h.fs.Name()
	for _, c := range commands() {
		if c.name == name {
			fmt.Fprintf(w, "gcsm %s: %s\n\n", name, c.summary)
		}
	}
	fmt.Fprintf(w, "Usage: gcsm %s [flags]\n\nFlags:\n", name)
	var hidden []*flag.Flag
	h.fs.VisitAll(func(f *flag.Flag) {
		if advanced(f) {
			hidden = append(hidden, f)
			return
		}
		printFlag(w, f)
	})
	switch {
	case len(hidden) == 0:
	case !h.all:
		fmt.Fprintf(w, "\n%d GPU tuning flags (--gpu-*) are not shown; 'gcsm %s --help-all' lists them.\n", len(hidden), name)
	default:
		fmt.Fprintf(w, "\nGPU tuning flags (they act only when the command runs on a GPU):\n")
		for _, f := range hidden {
			printFlag(w, f)
		}
	}
}

// printFlag writes one flag as flag.PrintDefaults does.
func printFlag(w io.Writer, f *flag.Flag) {
	typ, usage := flag.UnquoteUsage(f)
	line := "  -" + f.Name
	if typ != "" {
		line += " " + typ
	}
	line += "\n    \t" + strings.ReplaceAll(usage, "\n", "\n    \t")
	if !isZeroValue(f) {
		if g, ok := f.Value.(flag.Getter); ok {
			if _, isString := g.Get().(string); isString {
				line += fmt.Sprintf(" (default %q)", f.DefValue)
			} else {
				line += fmt.Sprintf(" (default %s)", f.DefValue)
			}
		} else {
			line += fmt.Sprintf(" (default %s)", f.DefValue)
		}
	}
	fmt.Fprintln(w, line)
}

// isZeroValue reports whether the flag's default is its type's zero value,
// which flag.PrintDefaults does not print either.
func isZeroValue(f *flag.Flag) bool {
	t := reflect.TypeOf(f.Value)
	if t.Kind() != reflect.Pointer {
		return f.DefValue == reflect.Zero(t).Interface().(flag.Value).String()
	}
	return f.DefValue == reflect.New(t.Elem()).Interface().(flag.Value).String()
}

// version is the line gcsm --version prints: the module version, the VCS
// revision and time the binary was built from (marked modified when the
// work tree had changes), and the Go release.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "gcsm (no build information)"
	}
	return formatVersion(bi)
}

func formatVersion(bi *debug.BuildInfo) string {
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, at string
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	line := "gcsm " + v
	if rev != "" {
		line += ", commit " + rev
		if at != "" {
			line += " of " + at
		}
		if modified {
			line += " (modified)"
		}
	}
	return line + ", " + bi.GoVersion
}
