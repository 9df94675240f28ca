package service

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/pprof"
	"net/url"
	"os"
	"strings"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gcsm/gcsm/query"
)

// Handler serves /metrics, /healthz, /readyz and the query API:
//
//	GET    /queries          the standing queries and their totals
//	POST   /queries          register one: JSON {"name","pattern","initial","max_matches_per_batch","max_time"}
//	                         with Content-Type: application/json
//	DELETE /queries/{name}   unregister one
//
// With http.pprof set, /debug/pprof/ serves Go's profiles, its cmdline
// with the token blotted out.
// With http.token set, the query API needs "Authorization: Bearer TOKEN";
// metrics and health stay open for scrapers and probes.
//
// A web page the host's browser opens must not register queries, token or
// not (the default has none). A page can send a cross-site POST without
// asking first only as a form type or text/plain, so POST takes only JSON;
// and a POST or DELETE whose Origin names another host is refused.
// Every 4xx answer, and those of the query API, is {"error": MESSAGE,
// "status": CODE}.
func (s *Service) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{}))
	// /healthz is liveness alone: a stall is the input's, the broker's or
	// the output's fault far more often than the process's, and a
	// restart, which a failed liveness probe brings, would re-read a
	// checkpoint interval and fix none of them. /readyz carries them.
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		ready, active, unready := s.ready, s.active, s.unready
		s.mu.Unlock()
		if !ready {
			http.Error(w, "starting", http.StatusServiceUnavailable)
			return
		}
		if unready != "" {
			http.Error(w, unready, http.StatusServiceUnavailable)
			return
		}
		role := "standby"
		if active {
			role = "active"
		}
		io.WriteString(w, "ready: "+role+"\n")
	})
	mux.HandleFunc("GET /queries", s.auth(s.listQueries))
	mux.HandleFunc("POST /queries", sameOrigin(s.auth(s.postQuery)))
	mux.HandleFunc("DELETE /queries/{name}", sameOrigin(s.auth(s.deleteQuery)))
	if s.cfg.HTTP.Pprof {
		// Config.Validate allows this only on a loopback address.
		mux.HandleFunc("GET /debug/pprof/", pprof.Index)
		mux.HandleFunc("GET /debug/pprof/cmdline", s.cmdline)
		mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("POST /debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	}
	return jsonErrors(mux)
}

// jsonErrors gives the mux's own 404 and 405 the API's error shape, so that
// a client reads every 4xx the same way.
func jsonErrors(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, pattern := mux.Handler(r)
		if pattern != "" {
			mux.ServeHTTP(w, r)
			return
		}
		// No route: the mux's handler only sets the status (and Allow for
		// a 405); its text body is dropped for ours.
		rec := &statusRecorder{header: w.Header()}
		h.ServeHTTP(rec, r)
		w.Header().Del("X-Content-Type-Options")
		switch rec.code {
		case http.StatusMethodNotAllowed:
			httpError(w, rec.code, fmt.Errorf("method %s is not allowed on %s (allowed: %s)", r.Method, r.URL.Path, w.Header().Get("Allow")))
		case http.StatusNotFound:
			httpError(w, rec.code, fmt.Errorf("no such path: %s %s", r.Method, r.URL.Path))
		default:
			httpError(w, rec.code, errors.New(strings.ToLower(http.StatusText(rec.code))))
		}
	})
}

// statusRecorder keeps the status a handler writes and discards its body.
type statusRecorder struct {
	header http.Header
	code   int
}

func (r *statusRecorder) Header() http.Header         { return r.header }
func (r *statusRecorder) Write(b []byte) (int, error) { return len(b), nil }
func (r *statusRecorder) WriteHeader(code int)        { r.code = code }

func (s *Service) auth(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if tok := s.cfg.HTTP.Token; tok != "" {
			got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(tok)) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="gcsm"`)
				httpError(w, http.StatusUnauthorized, errors.New("missing or wrong bearer token"))
				return
			}
		}
		h(w, r)
	}
}

// sameOrigin refuses a request whose Origin header names a host other
// than the one it was sent to: a web page's cross-site request. Clients
// that are not browsers send no Origin, and pass.
func sameOrigin(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if o := r.Header.Get("Origin"); o != "" {
			u, err := url.Parse(o)
			if err != nil || u.Host == "" || !strings.EqualFold(u.Host, r.Host) {
				httpError(w, http.StatusForbidden, fmt.Errorf("cross-site request refused: Origin %q is not %q", o, r.Host))
				return
			}
		}
		h(w, r)
	}
}

// cmdline is pprof's cmdline with the token blotted out: --token (or a
// config file's value passed some other way) would otherwise hand the
// query API to anyone who can read profiles.
func (s *Service) cmdline(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	io.WriteString(w, strings.Join(redact(os.Args, s.cfg.HTTP.Token), "\x00"))
}

// redact replaces every occurrence of secret in args.
func redact(args []string, secret string) []string {
	if secret == "" {
		return args
	}
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = strings.ReplaceAll(a, secret, "REDACTED")
	}
	return out
}

func (s *Service) listQueries(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	infos := s.infos
	s.mu.Unlock()
	if infos == nil {
		infos = []queryInfo{}
	}
	writeJSON(w, http.StatusOK, infos)
}

// maxQueryBody bounds a POST body: a pattern of 32 vertices is a few KiB.
const maxQueryBody = 1 << 20

func (s *Service) postQuery(w http.ResponseWriter, r *http.Request) {
	req, c, ok := s.queryRequest(w, r)
	if !ok {
		return
	}
	v, err := s.do(r.Context(), func(ctx context.Context) (any, error) {
		return s.registerQuery(ctx, c, req.Replace)
	})
	if p, ok := v.(pending); ok {
		if v, ok = s.awaitInitial(r.Context(), p); !ok {
			return
		}
	}
	switch {
	case errors.Is(err, errQueryExists):
		httpError(w, http.StatusConflict, err)
	case errors.Is(err, errTooManyQueries):
		httpError(w, http.StatusTooManyRequests, err)
	case err != nil:
		httpError(w, http.StatusBadRequest, err)
	default:
		writeJSON(w, http.StatusCreated, v)
	}
}

// queryRequest reads and checks a POST /queries request: its body's size
// and type, the request, and the pattern's size. Where any is refused it
// writes the error response and returns false.
func (s *Service) queryRequest(w http.ResponseWriter, r *http.Request) (queryRequest, QueryConfig, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxQueryBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			httpError(w, http.StatusRequestEntityTooLarge, fmt.Errorf("request body over %d bytes", tooBig.Limit))
		} else {
			httpError(w, http.StatusBadRequest, fmt.Errorf("cannot read the request body: %w", err))
		}
		return queryRequest{}, QueryConfig{}, false
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" && !strings.HasSuffix(mt, "+json") {
		httpError(w, http.StatusUnsupportedMediaType, fmt.Errorf("Content-Type %q: want application/json", r.Header.Get("Content-Type")))
		return queryRequest{}, QueryConfig{}, false
	}
	req, err := parseQueryRequest(body)
	if err != nil {
		httpError(w, http.StatusBadRequest, err)
		return req, QueryConfig{}, false
	}
	c, err := req.config()
	if err != nil {
		httpError(w, http.StatusBadRequest, err)
		return req, c, false
	}
	if len(c.Pattern) > s.cfg.HTTP.MaxPatternBytes {
		httpError(w, http.StatusRequestEntityTooLarge, fmt.Errorf("pattern of %d bytes: at most %d (http.max_pattern_bytes)", len(c.Pattern), s.cfg.HTTP.MaxPatternBytes))
		return req, c, false
	}
	if err := s.checkPatternSize(c); err != nil {
		httpError(w, http.StatusBadRequest, err)
		return req, c, false
	}
	if s.cfg.Cluster.Shards > 0 {
		httpError(w, http.StatusConflict, errClusterQueries)
		return req, c, false
	}
	return req, c, true
}

// registerQuery adds query c, or replaces the one of its name when replace
// is set, and checkpoints the registration. It runs on the run loop (s.do)
// and returns a pending whose run, if any, is the initial run to wait for.
func (s *Service) registerQuery(ctx context.Context, c QueryConfig, replace bool) (any, error) {
	var (
		st        *standing
		run       *initialRun
		retracted int
		err       error
	)
	switch i := s.queryIndex(c.Name); {
	case i >= 0 && !replace:
		return nil, fmt.Errorf("%w: %q; to register it again, send \"replace\": true (the old pattern's standing matches are retracted first)", errQueryExists, c.Name)
	case i >= 0:
		if st, run, retracted, err = s.replaceQuery(ctx, i, c); err != nil {
			return nil, err
		}
	case len(s.queries) >= s.cfg.HTTP.MaxQueries:
		return nil, fmt.Errorf("%w: %d standing (http.max_queries); delete one first", errTooManyQueries, len(s.queries))
	default:
		if run, err = s.addQuery(c); err != nil {
			return nil, err
		}
		st = s.queries[len(s.queries)-1]
	}
	// A registration survives a crash only in a checkpoint.
	if err := s.checkpoint(); err != nil {
		return nil, err
	}
	// "warnings": [] rather than null when there is none.
	return pending{registered{queryInfo: st.info(), Warnings: append([]string{}, st.warnings...), Retracted: retracted}, run}, nil
}

// awaitInitial returns the registration to answer with, with the initial
// run's result once it is done, if p has a run. It returns false when the
// client left first, which gives the run up; nothing is to be written then.
func (s *Service) awaitInitial(ctx context.Context, p pending) (registered, bool) {
	if p.run == nil {
		return p.registered, true
	}
	// The run goes on beside the stream; the client waits for its
	// result, and leaving gives it up.
	select {
	case <-p.run.done:
	case <-ctx.Done():
		p.run.cancel(errClientGone)
		return p.registered, false
	case <-s.quit:
	}
	// Run ends every enumeration before quit, but a run whose
	// matches were queued for delivery may never be acknowledged.
	res := InitialResult{CutShort: true, Reason: "stopping"}
	select {
	case <-p.run.done:
		res = p.run.result
	default:
	}
	p.registered.Initial = &res
	return p.registered, true
}

// checkPatternSize refuses a pattern of more vertices or edges than the
// API takes; one the parser refuses is left for compileQuery to explain.
func (s *Service) checkPatternSize(c QueryConfig) error {
	p, err := query.Parse(c.Name, c.Pattern)
	if err != nil {
		return nil
	}
	if n, max := len(p.Vertices), s.cfg.HTTP.MaxPatternVertices; n > max {
		return fmt.Errorf("pattern of %d vertices: at most %d (http.max_pattern_vertices)", n, max)
	}
	if n, max := len(p.Edges), s.cfg.HTTP.MaxPatternEdges; n > max {
		return fmt.Errorf("pattern of %d edges: at most %d (http.max_pattern_edges)", n, max)
	}
	return nil
}

// registered is the answer to POST /queries: the query as GET shows it,
// and warnings about it, such as labels the graph has not seen, which are
// no error since a later message may carry them.
type registered struct {
	queryInfo
	Warnings []string `json:"warnings"`
	// Retracted counts the disappeared events written for the standing
	// matches of the pattern a "replace" changed.
	Retracted int `json:"retracted,omitempty"`
	// Initial is the initial run's result, when the query asked for one.
	Initial *InitialResult `json:"initial_matches,omitempty"`
}

// pending is a registration whose initial run may still be going.
type pending struct {
	registered
	run *initialRun
}

func (s *Service) deleteQuery(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if s.cfg.Cluster.Shards > 0 {
		httpError(w, http.StatusConflict, errClusterQueries)
		return
	}
	_, err := s.do(r.Context(), func(context.Context) (any, error) {
		i := s.queryIndex(name)
		if i < 0 {
			return nil, errQueryMissing
		}
		s.removeQuery(i)
		s.log.Info().Str("query", name).Msg("query removed")
		return nil, s.checkpoint()
	})
	switch {
	case errors.Is(err, errQueryMissing):
		httpError(w, http.StatusNotFound, fmt.Errorf("%q: %w", name, err))
	case err != nil:
		httpError(w, http.StatusServiceUnavailable, err)
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

// apiError is the body of every 4xx and 5xx answer of the query API.
type apiError struct {
	Error  string `json:"error"`
	Status int    `json:"status"`
}

func httpError(w http.ResponseWriter, code int, err error) {
	writeJSON(w, code, apiError{Error: err.Error(), Status: code})
}

// parseQueryRequest reads a POST /queries body: one JSON object.
func parseQueryRequest(body []byte) (queryRequest, error) {
	var req queryRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return req, jsonBodyError(err, dec.InputOffset(), len(body))
	}
	// One object per request: anything after it is a client bug (two
	// objects pasted together, a truncated edit), not something to ignore.
	end := int(dec.InputOffset())
	if rest := bytes.TrimLeft(body[end:], " \t\r\n"); len(rest) > 0 {
		return req, fmt.Errorf("request body: data after the JSON object at byte %d", len(body)-len(rest)+1)
	}
	return req, nil
}

// jsonBodyError says what is wrong with a JSON body and at which byte,
// counted from 1.
func jsonBodyError(err error, offset int64, size int) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.EOF):
		return errors.New(`request body: empty; want a JSON object {"name": ..., "pattern": ...}`)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("request body: invalid JSON at byte %d: the object is not closed", size)
	case errors.As(err, &syn):
		return fmt.Errorf("request body: invalid JSON at byte %d: %s", syn.Offset, strings.TrimPrefix(syn.Error(), "json: "))
	case errors.As(err, &typ) && typ.Field != "":
		return fmt.Errorf("request body: field %q at byte %d: want %s, got a JSON %s", typ.Field, typ.Offset, typ.Type, typ.Value)
	case errors.As(err, &typ):
		return fmt.Errorf("request body at byte %d: want a JSON object, got a JSON %s", typ.Offset, typ.Value)
	}
	// An unknown field: the decoder has read up to the end of its name.
	return fmt.Errorf("request body at byte %d: %s", offset, strings.TrimPrefix(err.Error(), "json: "))
}
