package kernels

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/gcsm/gcsm/kernels/cuda"
)

// cParam is one parameter of a kernel's signature in a .cu source.
type cParam struct{ typ, name string }

// kernelParams returns the parameters of the extern "C" __global__ kernel
// name in src, with a parameter list given through a #define (match.cu's
// MATCH_PARAMS) expanded.
func kernelParams(t *testing.T, src, name string) []cParam {
	t.Helper()
	sig := regexp.MustCompile(`extern "C" __global__ void(?:\s+__launch_bounds__\([^)]*\))?\s+` + name + `\(([^)]*)\)`).FindStringSubmatch(src)
	if sig == nil {
		t.Fatalf("no extern \"C\" __global__ signature of %s", name)
	}
	list := sig[1]
	if m := regexp.MustCompile(`^\s*([A-Z_]+)\s*$`).FindStringSubmatch(list); m != nil {
		def := regexp.MustCompile(`(?m)^#define ` + m[1] + `((?:.*\\\n)*.*)$`).FindStringSubmatch(src)
		if def == nil {
			t.Fatalf("%s's parameters %s: no #define", name, m[1])
		}
		list = strings.ReplaceAll(def[1], "\\\n", " ")
	}
	var ps []cParam
	for _, p := range strings.Split(list, ",") {
		f := strings.FieldsFunc(p, func(r rune) bool { return unicode.IsSpace(r) || r == '*' })
		if len(f) < 2 {
			t.Fatalf("%s: parameter %q", name, p)
		}
		typ := strings.Join(slicesDelete(f[:len(f)-1], "const"), " ")
		if strings.Contains(p, "*") {
			typ += "*"
		}
		ps = append(ps, cParam{typ, f[len(f)-1]})
	}
	return ps
}

// slicesDelete returns s without the elements equal to v.
func slicesDelete(s []string, v string) []string {
	var out []string
	for _, e := range s {
		if e != v {
			out = append(out, e)
		}
	}
	return out
}

// goType is the Go type a kernel parameter of C type typ takes in an
// argument struct: the C type's size, and for a pointer a device address.
func goType(t *testing.T, typ string) reflect.Type {
	t.Helper()
	if strings.HasSuffix(typ, "*") {
		return reflect.TypeFor[cuda.DevicePtr]()
	}
	switch typ {
	case "uint32_t", "unsigned", "unsigned int":
		return reflect.TypeFor[uint32]()
	case "int", "int32_t":
		return reflect.TypeFor[int32]()
	case "unsigned long long", "uint64_t":
		return reflect.TypeFor[uint64]()
	case "long long", "int64_t":
		return reflect.TypeFor[int64]()
	case "float":
		return reflect.TypeFor[float32]()
	case "double":
		return reflect.TypeFor[float64]()
	}
	t.Fatalf("C type %q has no Go type here: add it", typ)
	return nil
}

// camel is a C parameter's name as the argument struct's field: next_unit
// is nextUnit.
func camel(s string) string {
	parts := strings.Split(s, "_")
	for i := 1; i < len(parts); i++ {
		parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
	}
	return strings.Join(parts, "")
}

// checkArgs checks, field by field, that the argument struct st has the
// kernel's parameters: their names, in order, and types of their sizes.
func checkArgs(t *testing.T, src, kernel string, st reflect.Type, params int) {
	t.Helper()
	ps := kernelParams(t, src, kernel)
	if st.NumField() != len(ps) || params != len(ps) {
		t.Errorf("%s has %d parameters, %s %d fields and %d params", kernel, len(ps), st.Name(), st.NumField(), params)
	}
	for i := range min(len(ps), st.NumField()) {
		f, p := st.Field(i), ps[i]
		want := goType(t, p.typ)
		if f.Name != camel(p.name) || f.Type != want || f.Type.Size() != want.Size() {
			t.Errorf("%s parameter %d is %s %s: %s's field is %s %s (%d bytes), want %s %s (%d bytes)",
				kernel, i, p.typ, p.name, st.Name(), f.Name, f.Type, f.Type.Size(), camel(p.name), want, want.Size())
		}
	}
}

// The argument structs are the kernels' parameter lists: a field out of
// step with the .cu source would give the kernel wrong arguments, which
// only a GPU would show.
func TestArgsLayout(t *testing.T) {
	read := func(f string) string {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	match, space := read("match.cu"), read("space.cu")
	var a matchArgs
	for _, k := range []string{"match_delta", "match_keep"} {
		checkArgs(t, match, k, reflect.TypeFor[matchArgs](), len(a.params()))
	}
	var s spaceArgs
	checkArgs(t, space, "match_space", reflect.TypeFor[spaceArgs](), len(s.params()))
	// Each parameter points at its own field.
	for i, p := range a.params() {
		if f := reflect.ValueOf(&a).Elem().Field(i); p != f.Addr().UnsafePointer() {
			t.Errorf("matchArgs parameter %d does not point at field %s", i, reflect.TypeFor[matchArgs]().Field(i).Name)
		}
	}
}

// structFields returns the fields of struct name in src, one per declared
// name, comments dropped.
func structFields(t *testing.T, src, name string) []cParam {
	t.Helper()
	m := regexp.MustCompile(`(?s)\nstruct ` + name + ` \{(.*?)\n\};`).FindStringSubmatch(src)
	if m == nil {
		t.Fatalf("no struct %s", name)
	}
	var fs []cParam
	for _, line := range strings.Split(m[1], "\n") {
		if i := strings.Index(line, "//"); i >= 0 {
			line = line[:i]
		}
		decl, ok := strings.CutSuffix(strings.TrimSpace(line), ";")
		if !ok {
			continue
		}
		// "T a, b": the type is what the first name follows.
		names := strings.Split(decl, ",")
		f := strings.FieldsFunc(names[0], func(r rune) bool { return unicode.IsSpace(r) || r == '*' })
		typ := strings.Join(slicesDelete(f[:len(f)-1], "const"), " ")
		if strings.Contains(names[0], "*") {
			typ += "*"
		}
		fs = append(fs, cParam{typ, f[len(f)-1]})
		for _, n := range names[1:] {
			fs = append(fs, cParam{typ, strings.TrimSpace(n)})
		}
	}
	return fs
}

// graphDesc is match.cu's struct Graph, which the executor uploads for
// every batch, field by field (TestGraphDescLayout checks its size and two
// offsets): a field out of step would have the kernel read the wrong
// arrays. Fields the executor never sets may be blank (_).
func TestGraphDescFields(t *testing.T) {
	src, err := os.ReadFile("match.cu")
	if err != nil {
		t.Fatal(err)
	}
	fs := structFields(t, string(src), "Graph")
	st := reflect.TypeFor[graphDesc]()
	if st.NumField() != len(fs) {
		t.Fatalf("struct Graph has %d fields, graphDesc %d", len(fs), st.NumField())
	}
	for i, c := range fs {
		f, want := st.Field(i), goType(t, c.typ)
		if (f.Name != "_" && !strings.EqualFold(f.Name, camel(c.name))) || f.Type.Size() != want.Size() {
			t.Errorf("struct Graph field %d is %s %s: graphDesc's is %s %s (%d bytes), want %s (%d bytes)",
				i, c.typ, c.name, f.Name, f.Type, f.Type.Size(), camel(c.name), want.Size())
		}
	}
}
