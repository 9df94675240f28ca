package deploy

import (
	"bytes"
	"debug/elf"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/distribution/reference"
	"github.com/moby/buildkit/frontend/dockerfile/instructions"
	"github.com/moby/buildkit/frontend/dockerfile/parser"
	"github.com/moby/buildkit/frontend/dockerfile/shell"
	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
)

// debian12libc6 is what Debian 12's libc6 package ships for amd64 (dpkg -L
// libc6, 2.36-9+deb12u14): the loader at the path the kernel reads from
// PT_INTERP, and the shared libraries by soname.
var debian12libc6 = baseImage{
	loaders: []string{"/lib64/ld-linux-x86-64.so.2", "/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"},
	libs: strings.Fields(`ld-linux-x86-64.so.2 libBrokenLocale.so.1 libanl.so.1 libc.so.6 libc_malloc_debug.so.0
		libdl.so.2 libm.so.6 libmemusage.so libmvec.so.1 libnsl.so.1 libnss_compat.so.2 libnss_dns.so.2
		libnss_files.so.2 libnss_hesiod.so.2 libpcprofile.so libpthread.so.0 libresolv.so.2 librt.so.1
		libthread_db.so.1 libutil.so.1`),
}

// baseImage is what a final-stage base offers a dynamically linked binary.
type baseImage struct {
	loaders []string // absolute paths of ELF interpreters
	libs    []string // sonames in the loader's default search path
}

// baseImages maps a base image's repository, without tag or digest (latest,
// nonroot and debug differ only in the user and a busybox), to what it ships for
// linux/amd64. The distroless images are Debian 12 packages (their README and
// package lists): static has no libc at all; base-nossl and base add libc6
// (base also libssl3); cc adds libgcc-s1, libgomp1 and libstdc++6 to base.
var baseImages = map[string]baseImage{
	"scratch":                               {},
	"gcr.io/distroless/static-debian12":     {},
	"gcr.io/distroless/base-nossl-debian12": debian12libc6,
	"gcr.io/distroless/base-debian12":       withLibs(debian12libc6, "libssl.so.3", "libcrypto.so.3"),
	"gcr.io/distroless/cc-debian12": withLibs(debian12libc6, "libssl.so.3", "libcrypto.so.3",
		"libgcc_s.so.1", "libgomp.so.1", "libstdc++.so.6"),
}

func withLibs(b baseImage, libs ...string) baseImage {
	return baseImage{loaders: b.loaders, libs: slices.Concat(b.libs, libs)}
}

// canRun says why a binary with ELF interpreter interp ("" for a static
// binary) and DT_NEEDED entries needed cannot start on the base image ref, or
// returns nil.
func canRun(ref, interp string, needed []string) error {
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return fmt.Errorf("final stage FROM %s: %w", ref, err)
	}
	base, ok := baseImages[reference.FamiliarName(named)]
	if !ok {
		return fmt.Errorf("final stage FROM %s: not in baseImages; add what that image ships (its loader and libraries)", ref)
	}
	if interp != "" && !slices.Contains(base.loaders, interp) {
		return fmt.Errorf("the binary's ELF interpreter %s is not in %s, so the kernel cannot start it (\"no such file or directory\")", interp, ref)
	}
	for _, lib := range needed {
		if !slices.Contains(base.libs, lib) {
			return fmt.Errorf("the binary needs %s, which %s does not ship", lib, ref)
		}
	}
	return nil
}

// dockerfile is the Dockerfile as BuildKit reads it.
type dockerfile struct {
	build, final instructions.Stage
	goBuild      []string // the build stage's go build command line, environment assignments first
	env          []string // the build stage's ENV, as KEY=VALUE
}

func parseDockerfile(t *testing.T) dockerfile {
	t.Helper()
	ast, err := parser.Parse(bytes.NewReader(readFile(t, "Dockerfile")))
	if err != nil {
		t.Fatalf("Dockerfile: %v", err)
	}
	stages, _, err := instructions.Parse(ast.AST, nil)
	if err != nil {
		t.Fatalf("Dockerfile: %v", err)
	}
	if len(stages) < 2 {
		t.Fatalf("Dockerfile: %d stages, want a build stage and a final one", len(stages))
	}
	d := dockerfile{build: stages[0], final: stages[len(stages)-1]}
	lex := shell.NewLex(ast.EscapeToken)
	for _, c := range d.build.Commands {
		switch c := c.(type) {
		case *instructions.EnvCommand:
			for _, kv := range c.Env {
				d.env = append(d.env, kv.String())
			}
		case *instructions.RunCommand:
			if !c.PrependShell || !strings.Contains(c.CmdLine[0], "go build") {
				continue
			}
			words, err := lex.ProcessWords(c.CmdLine[0], shell.EnvsFromSlice(d.env))
			if err != nil {
				t.Fatalf("Dockerfile:%d: %v", c.Location()[0].Start.Line, err)
			}
			d.goBuild = words
		}
	}
	if d.goBuild == nil {
		t.Fatalf("Dockerfile: the build stage has no RUN [NAME=VALUE...] go build ...")
	}
	return d
}

// splitAssignments splits leading NAME=VALUE words off a shell command.
func splitAssignments(words []string) (env, cmd []string) {
	i := 0
	for i < len(words) && strings.Contains(words[i], "=") && !strings.HasPrefix(words[i], "-") {
		i++
	}
	return words[:i], words[i:]
}

func TestDockerfile(t *testing.T) {
	d := parseDockerfile(t)
	var mod struct{ Go string }
	out, err := exec.Command("go", "mod", "edit", "-json", repoPath(t, "go.mod")).Output()
	if err == nil {
		err = json.Unmarshal(out, &mod)
	}
	if err != nil {
		t.Fatalf("go mod edit -json: %v", err)
	}
	goMinor := strings.Join(strings.SplitN(mod.Go, ".", 3)[:2], ".")
	if img := d.build.BaseName; img != "golang:"+goMinor && !strings.HasPrefix(img, "golang:"+goMinor+".") && !strings.HasPrefix(img, "golang:"+goMinor+"-") {
		t.Errorf("build stage FROM %s, want golang:%s (go.mod says go %s)", img, goMinor, mod.Go)
	}

	env, cmd := splitAssignments(d.goBuild)
	if !slices.Contains(slices.Concat(d.env, env), "CGO_ENABLED=0") {
		t.Errorf("Dockerfile: go build without CGO_ENABLED=0")
	}
	out0 := slices.Index(cmd, "-o")
	if out0 < 0 || out0+1 == len(cmd) || cmd[len(cmd)-1] != "./cmd/gcsm" {
		t.Fatalf("Dockerfile: %q does not build ./cmd/gcsm with -o", cmd)
	}
	binary := cmd[out0+1]

	cfg := loadGcsmConfig(t)
	var user string
	var entry, args, volumes, ports []string
	copyDest := ""
	for _, c := range d.final.Commands {
		switch c := c.(type) {
		case *instructions.UserCommand:
			user = c.User
		case *instructions.EntrypointCommand:
			if c.PrependShell {
				t.Errorf("ENTRYPOINT in shell form: the final image has no shell")
			}
			entry = c.CmdLine
		case *instructions.CmdCommand:
			args = c.CmdLine
		case *instructions.VolumeCommand:
			volumes = append(volumes, c.Volumes...)
		case *instructions.ExposeCommand:
			ports = append(ports, c.Ports...)
		case *instructions.CopyCommand:
			if c.From == d.build.Name && slices.Equal(c.SourcePaths, []string{binary}) {
				copyDest = c.DestPath
			}
		}
	}
	if u, _, _ := strings.Cut(user, ":"); u == "" || u == "root" || u == "0" {
		t.Errorf("the final stage runs as root (USER %q)", user)
	}
	if copyDest == "" || !slices.Equal(entry, []string{copyDest}) {
		t.Errorf("ENTRYPOINT %q, want the binary that COPY --from=%s %s puts at %q", entry, d.build.Name, binary, copyDest)
	}
	if !slices.Equal(args, []string{"run", "--config", gcsmConfigTarget}) {
		t.Errorf("CMD %q, want [\"run\", \"--config\", %q]", args, gcsmConfigTarget)
	}
	if !slices.Contains(volumes, cfg.State.Dir) {
		t.Errorf("no VOLUME %s, gcsm.yaml's state.dir (volumes %q)", cfg.State.Dir, volumes)
	}
	if port := httpPort(t, cfg); !slices.Contains(ports, port) && !slices.Contains(ports, port+"/tcp") {
		t.Errorf("port %s of http.listen is not EXPOSEd (%q)", port, ports)
	}
}

// TestImageStarts builds the binary the way the Dockerfile does, from the
// files .dockerignore lets into the context, and checks that the final
// stage's base has its ELF interpreter and every library it needs. A pure Go
// binary that uses purego is still dynamically linked: it needs the loader,
// libc and libdl to start at all.
func TestImageStarts(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cmd/gcsm")
	}
	d := parseDockerfile(t)
	env, cmd := splitAssignments(d.goBuild)
	ctx := buildContext(t)
	bin := filepath.Join(t.TempDir(), "gcsm")
	out0 := slices.Index(cmd, "-o")
	cmd[out0+1] = bin
	build := exec.Command(cmd[0], cmd[1:]...)
	build.Dir = ctx
	// linux/amd64, the platform baseImages describes.
	build.Env = slices.Concat(os.Environ(), d.env, env, []string{"GOOS=linux", "GOARCH=amd64"})
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("%q in the build context: %v\n%s", cmd, err, out)
	}

	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	interp := ""
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b, err := io.ReadAll(p.Open())
			if err != nil {
				t.Fatalf("PT_INTERP: %v", err)
			}
			interp = strings.TrimRight(string(b), "\x00")
		}
	}
	needed, err := f.ImportedLibraries()
	if err != nil {
		t.Fatalf("DT_NEEDED: %v", err)
	}
	t.Logf("interpreter %q, needed %q", interp, needed)
	if err := canRun(d.final.BaseName, interp, needed); err != nil {
		t.Error(err)
	}
}

func TestCanRun(t *testing.T) {
	purego := []string{"libdl.so.2", "libpthread.so.0", "libc.so.6"}
	for _, tc := range []struct {
		ref, interp string
		needed      []string
		ok          bool
	}{
		{"gcr.io/distroless/base-debian12:nonroot", "/lib64/ld-linux-x86-64.so.2", purego, true},
		{"gcr.io/distroless/base-debian12@sha256:" + strings.Repeat("ab", 32), "/lib64/ld-linux-x86-64.so.2", purego, true},
		// The image that could not start gcsm: no loader, no libc.
		{"gcr.io/distroless/static-debian12:nonroot", "/lib64/ld-linux-x86-64.so.2", purego, false},
		{"gcr.io/distroless/static-debian12:nonroot", "", nil, true},
		{"scratch", "", nil, true},
		{"gcr.io/distroless/base-nossl-debian12", "/lib64/ld-linux-x86-64.so.2", []string{"libssl.so.3"}, false},
		{"gcr.io/distroless/base-debian12", "/lib/ld-linux-aarch64.so.1", purego, false},
		{"debian:12", "", nil, false}, // not in the table
	} {
		if err := canRun(tc.ref, tc.interp, tc.needed); (err == nil) != tc.ok {
			t.Errorf("canRun(%s, %q, %q) = %v, want ok=%v", tc.ref, tc.interp, tc.needed, err, tc.ok)
		}
	}
}

// buildContext copies into a temporary directory what docker build sends:
// the repository less what .dockerignore excludes, matched by the moby
// pattern matcher that docker and BuildKit use.
func buildContext(t *testing.T) string {
	t.Helper()
	patterns, err := ignorefile.ReadAll(bytes.NewReader(readFile(t, ".dockerignore")))
	if err != nil {
		t.Fatalf(".dockerignore: %v", err)
	}
	pm, err := patternmatcher.New(patterns)
	if err != nil {
		t.Fatalf(".dockerignore: %v", err)
	}
	src, dst := root(t), t.TempDir()
	err = filepath.WalkDir(src, func(path string, e fs.DirEntry, err error) error {
		if err != nil || path == src {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		excluded, err := pm.MatchesOrParentMatches(filepath.ToSlash(rel))
		if err != nil {
			return err
		}
		switch {
		case excluded && e.IsDir() && !pm.Exclusions():
			return filepath.SkipDir
		case excluded:
			return nil
		case e.IsDir():
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		case e.Type().IsRegular():
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("build context: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dst, ".git")); err == nil {
		t.Errorf(".dockerignore lets .git into the build context")
	}
	return dst
}
