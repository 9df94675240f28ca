package service

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
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
		{"not JSON, no type", "POST", "/queries", "", "s3cret", `hello`, 400, "invalid JSON at byte 1"},
		{"bad JSON", "POST", "/queries", "application/json", "s3cret", `{"name": "x", "pattern" "(a)"}`, 400, "invalid JSON at byte 25"},
		{"unclosed", "POST", "/queries", "application/json", "s3cret", `{"name": "x"`, 400, "byte 12: the object is not closed"},
		{"empty", "POST", "/queries", "application/json", "s3cret", ``, 400, "empty; want a JSON object"},
		{"array", "POST", "/queries", "", "s3cret", ` [1]`, 400, "byte 2: want a JSON object, got a JSON array"},
		{"wrong type", "POST", "/queries", "", "s3cret", `{"name": 7}`, 400, `field "name" at byte 10: want string, got a JSON number`},
		{"unknown field", "POST", "/queries", "", "s3cret", `{"nme": "x"}`, 400, `unknown field "nme"`},
		{"trailing data", "POST", "/queries", "application/json", "s3cret", `{"name":"t","pattern":"` + ring + `"} {"name":"u"}`, 400, fmt.Sprintf("data after the JSON object at byte %d", len(ring)+27)},
		{"text without a name", "POST", "/queries", "text/plain", "s3cret", ring, 400, "?name=NAME"},
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
// object, or is a text pattern with a name, or fails with a reason; a
// refused JSON body's reason names the body.
func FuzzParseQueryRequest(f *testing.F) {
	for _, s := range []string{
		`{"name":"a","pattern":"(a)--(b)"}`, `{"name":"a"} x`, `{"name":`, ``, `[]`, `(a)--(b)`, `MATCH (a)`,
		`{"name":1}`, `{"nope":1}`, `  {"name":"a","max_time":"2s"}  `, `"x"`, `nul`,
	} {
		f.Add("", "q", s)
		f.Add("application/json", "", s)
		f.Add("text/plain; charset=utf-8", "q", s)
	}
	f.Fuzz(func(t *testing.T, ctype, name, body string) {
		params := url.Values{}
		if name != "" {
			params.Set("name", name)
		}
		req, err := parseQueryRequest(ctype, params, []byte(body))
		if err != nil {
			if strings.HasPrefix(strings.TrimSpace(body), "{") && !strings.Contains(err.Error(), "request body") {
				t.Fatalf("%q: the error does not say it is the body's: %v", body, err)
			}
			return
		}
		if req.Pattern == body && req.Name == name && name != "" {
			return // the text form
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
