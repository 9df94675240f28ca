package service

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestAPIErrors drives the real handler of a running service through every
// 4xx it gives and checks that each has the one error shape, and that a bad
// JSON body is named with its byte.
func TestAPIErrors(t *testing.T) {
	cfg := testConfig(t, cluster(t, 1, 1))
	cfg.HTTP.Token = "s3cret"
	r := start(t, cfg)
	srv := httptest.NewServer(r.s.Handler())
	defer srv.Close()
	waitFor(t, "the service to be ready", time.Minute, func() bool {
		resp, err := http.Get(srv.URL + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})

	ring := "(a:Account)-[:TRANSFER]->(b:Account)-[:TRANSFER]->(a)"
	for _, c := range []struct {
		name, method, path, ctype, token, body string
		code                                   int
		want                                   string
	}{
		{"no token", "GET", "/queries", "", "", "", 401, "bearer token"},
		{"not JSON", "POST", "/queries", "application/json", "s3cret", `name=x`, 400, "invalid JSON at byte 2: invalid character 'a' in literal null"},
		{"not JSON at all", "POST", "/queries", "application/json", "s3cret", `hello`, 400, "invalid JSON at byte 1"},
		{"bad JSON", "POST", "/queries", "application/json", "s3cret", `{"name": "x", "pattern" "(a)"}`, 400, "invalid JSON at byte 25"},
		{"unclosed", "POST", "/queries", "application/json", "s3cret", `{"name": "x"`, 400, "byte 12: the object is not closed"},
		{"empty", "POST", "/queries", "application/json", "s3cret", ``, 400, "empty; want a JSON object"},
		{"array", "POST", "/queries", "application/json", "s3cret", ` [1]`, 400, "byte 2: want a JSON object, got a JSON array"},
		{"wrong type", "POST", "/queries", "application/json", "s3cret", `{"name": 7}`, 400, `field "name" at byte 10: want string, got a JSON number`},
		{"unknown field", "POST", "/queries", "application/json", "s3cret", `{"nme": "x"}`, 400, `unknown field "nme"`},
		{"trailing data", "POST", "/queries", "application/json", "s3cret", `{"name":"t","pattern":"` + ring + `"} {"name":"u"}`, 400, fmt.Sprintf("data after the JSON object at byte %d", len(ring)+27)},
		{"text", "POST", "/queries", "text/plain", "s3cret", ring, 415, "want application/json"},
		{"no type", "POST", "/queries", "", "s3cret", `{"name":"x","pattern":"` + ring + `"}`, 415, "want application/json"},
		{"form", "POST", "/queries", "application/x-www-form-urlencoded", "s3cret", `{"name":"x","pattern":"` + ring + `"}`, 415, "want application/json"},
		{"too big", "POST", "/queries", "application/json", "s3cret", `{"name":"` + strings.Repeat("x", maxQueryBody) + `"}`, 413, "over 1048576 bytes"},
		{"duplicate", "POST", "/queries", "application/json", "s3cret", `{"name":"ring3","pattern":"` + ring + `"}`, 409, "ring3"},
		{"missing query", "DELETE", "/queries/nosuch", "", "s3cret", "", 404, "nosuch"},
		{"no such path", "GET", "/nosuch", "", "", "", 404, "no such path: GET /nosuch"},
		{"wrong method", "PUT", "/queries", "", "s3cret", "", 405, "method PUT is not allowed on /queries"},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, err := http.NewRequest(c.method, srv.URL+c.path, strings.NewReader(c.body))
			if err != nil {
				t.Fatal(err)
			}
			if c.ctype != "" {
				req.Header.Set("Content-Type", c.ctype)
			}
			if c.token != "" {
				req.Header.Set("Authorization", "Bearer "+c.token)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != c.code {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, c.code, body)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q, want application/json", ct)
			}
			var e struct {
				Error  string `json:"error"`
				Status int    `json:"status"`
			}
			dec := json.NewDecoder(strings.NewReader(string(body)))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&e); err != nil {
				t.Fatalf("body is not the error shape: %v\n%s", err, body)
			}
			if e.Status != c.code || !strings.Contains(e.Error, c.want) {
				t.Errorf("error %+v, want status %d and a message with %q", e, c.code, c.want)
			}
		})
	}
	// The registration the refused bodies attempted did not happen.
	resp, err := http.NewRequest("GET", srv.URL+"/queries", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Header.Set("Authorization", "Bearer s3cret")
	got, err := http.DefaultClient.Do(resp)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Body.Close()
	var infos []queryInfo
	if err := json.NewDecoder(got.Body).Decode(&infos); err != nil || len(infos) != 2 {
		t.Fatalf("GET /queries: %v, %+v; want ring3 and split only", err, infos)
	}
}

// FuzzParseQueryRequest: any body either decodes to exactly one JSON
// object or fails with a reason that names the body.
func FuzzParseQueryRequest(f *testing.F) {
	for _, s := range []string{
		`{"name":"a","pattern":"(a)--(b)"}`, `{"name":"a"} x`, `{"name":`, ``, `[]`, `(a)--(b)`, `MATCH (a)`,
		`{"name":1}`, `{"nope":1}`, `  {"name":"a","max_time":"2s"}  `, `"x"`, `nul`,
		`{"name":"a","pattern":"(a)--(b)","initial":true,"max_matches_per_batch":-1}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		req, err := parseQueryRequest([]byte(body))
		if err != nil {
			if !strings.Contains(err.Error(), "request body") {
				t.Fatalf("%q: the error does not say it is the body's: %v", body, err)
			}
			return
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal([]byte(body), &obj) != nil {
			t.Fatalf("%q accepted as JSON (%+v) but is not one JSON object", body, req)
		}
	})
}

// TestPprof: /debug/pprof/ answers only when http.pprof is set.
func TestPprof(t *testing.T) {
	addrs := cluster(t, 1, 1)
	for _, on := range []bool{false, true} {
		cfg := testConfig(t, addrs)
		cfg.HTTP.Listen, cfg.HTTP.Pprof = "127.0.0.1:0", on
		s, err := New(Options{Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(s.Handler())
		for _, path := range []string{"/debug/pprof/", "/debug/pprof/heap?debug=1", "/debug/pprof/cmdline"} {
			resp, err := http.Get(srv.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			want := http.StatusNotFound
			if on {
				want = http.StatusOK
			}
			if resp.StatusCode != want {
				t.Errorf("pprof %v: GET %s: %d %s, want %d", on, path, resp.StatusCode, body, want)
			}
			if on && path == "/debug/pprof/heap?debug=1" && !strings.Contains(string(body), "heap profile") {
				t.Errorf("GET %s: not a heap profile: %.200s", path, body)
			}
		}
		srv.Close()
		s.close()
	}
}

// TestAPIGuards: what a web page, a long name, a large pattern or one query
// too many gets from the API. Each case fails on the API before them: it
// took text/plain from any Origin and had no caps.
func TestAPIGuards(t *testing.T) {
	cfg := testConfig(t, cluster(t, 1, 1))
	cfg.HTTP.MaxQueries = 3 // ring3, split and one more
	cfg.HTTP.MaxPatternBytes = 200
	cfg.HTTP.MaxPatternVertices = 4
	r := start(t, cfg)
	srv := httptest.NewServer(r.s.Handler())
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")

	post := func(name, pattern string) string {
		b, _ := json.Marshal(QueryConfig{Name: name, Pattern: pattern})
		return string(b)
	}
	pair := "(a:Account)-[:TRANSFER]->(b:Account)"
	for _, c := range []struct {
		name, method, path, ctype, origin, body string
		code                                    int
		want                                    string
	}{
		{"foreign origin", "POST", "/queries", "application/json", "http://evil.example", post("p1", pair), 403, "cross-site request refused"},
		{"foreign origin, same port", "POST", "/queries", "application/json", "http://evil.example:" + strings.Split(host, ":")[1], post("p1", pair), 403, "cross-site"},
		{"null origin", "DELETE", "/queries/ring3", "", "null", "", 403, "cross-site"},
		{"text/plain from a page", "POST", "/queries", "text/plain", "http://" + host, post("p1", pair), 415, "want application/json"},
		{"long name", "POST", "/queries", "application/json", "", post(strings.Repeat("n", 257), pair), 400, "at most 256"},
		{"unprintable name", "POST", "/queries", "application/json", "", post("a\x00b", pair), 400, "printable"},
		{"bidi override in name", "POST", "/queries", "application/json", "", `{"name":"a\u202eb","pattern":"` + pair + `"}`, 400, "printable"},
		{"large pattern", "POST", "/queries", "application/json", "", post("big", pair+strings.Repeat(" ", 200)), 413, "http.max_pattern_bytes"},
		{"many vertices", "POST", "/queries", "application/json", "", post("p5", "(a)-->(b)-->(c)-->(d)-->(e)"), 400, "http.max_pattern_vertices"},
		{"same origin", "POST", "/queries", "application/json", "http://" + host, post("p1", pair), 201, ""},
		{"one too many", "POST", "/queries", "application/json", "", post("p2", pair), 429, "http.max_queries"},
		{"delete", "DELETE", "/queries/p1", "", "", "", 204, ""},
		{"name of 256 bytes", "POST", "/queries", "application/json", "", post(strings.Repeat("n", 256), pair), 201, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, err := http.NewRequest(c.method, srv.URL+c.path, strings.NewReader(c.body))
			if err != nil {
				t.Fatal(err)
			}
			if c.ctype != "" {
				req.Header.Set("Content-Type", c.ctype)
			}
			if c.origin != "" {
				req.Header.Set("Origin", c.origin)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != c.code || !strings.Contains(string(body), c.want) {
				t.Fatalf("status %d %s, want %d with %q", resp.StatusCode, body, c.code, c.want)
			}
		})
	}
}

// TestPprofCmdlineRedacted: with --pprof, /debug/pprof/cmdline shows the
// command line with the token blotted out.
func TestPprofCmdlineRedacted(t *testing.T) {
	cfg := testConfig(t, cluster(t, 1, 1))
	cfg.HTTP.Listen, cfg.HTTP.Pprof, cfg.HTTP.Token = "127.0.0.1:0", true, "tok-"+t.Name()
	args := os.Args
	os.Args = append(slices.Clone(args), "--token", cfg.HTTP.Token, "--token="+cfg.HTTP.Token)
	defer func() { os.Args = args }()
	s, err := New(Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/debug/pprof/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || strings.Contains(string(body), cfg.HTTP.Token) || strings.Count(string(body), "REDACTED") != 2 {
		t.Fatalf("GET /debug/pprof/cmdline: %d %q", resp.StatusCode, body)
	}
}
