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
	"strings"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Handler serves /metrics, /healthz, /readyz and the query API:
//
//	GET    /queries          the standing queries and their totals
//	POST   /queries          register one: JSON {"name","pattern","initial","max_matches_per_batch","max_time"},
//	                         or a pattern as text/plain with ?name=NAME[&initial=true]
//	DELETE /queries/{name}   unregister one
//
// With http.pprof set, /debug/pprof/ serves Go's profiles.
// With http.token set, the query API needs "Authorization: Bearer TOKEN";
// metrics and health stay open for scrapers and probes.
// Every 4xx answer, and those of the query API, is {"error": MESSAGE,
// "status": CODE}.
func (s *Service) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		ready, active := s.ready, s.active
		s.mu.Unlock()
		if !ready {
			http.Error(w, "starting", http.StatusServiceUnavailable)
			return
		}
		role := "standby"
		if active {
			role = "active"
		}
		io.WriteString(w, "ready: "+role+"\n")
	})
	mux.HandleFunc("GET /queries", s.auth(s.listQueries))
	mux.HandleFunc("POST /queries", s.auth(s.postQuery))
	mux.HandleFunc("DELETE /queries/{name}", s.auth(s.deleteQuery))
	if s.cfg.HTTP.Pprof {
		// Config.Validate allows this only on a loopback address.
		mux.HandleFunc("GET /debug/pprof/", pprof.Index)
		mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
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
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxQueryBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			httpError(w, http.StatusRequestEntityTooLarge, fmt.Errorf("request body over %d bytes", tooBig.Limit))
		} else {
			httpError(w, http.StatusBadRequest, fmt.Errorf("cannot read the request body: %w", err))
		}
		return
	}
	req, err := parseQueryRequest(r.Header.Get("Content-Type"), r.URL.Query(), body)
	if err != nil {
		httpError(w, http.StatusBadRequest, err)
		return
	}
	c, err := req.config()
	if err != nil {
		httpError(w, http.StatusBadRequest, err)
		return
	}
	if s.cfg.Cluster.Shards > 0 {
		httpError(w, http.StatusConflict, errClusterQueries)
		return
	}
	// Registering may run the static matcher over the whole graph; the
	// client's deadline, not ours, decides how long that may take.
	v, err := s.do(r.Context(), func(ctx context.Context) (any, error) {
		if err := s.addQuery(ctx, c); err != nil {
			return nil, err
		}
		// A registration survives a crash only in a checkpoint.
		if err := s.checkpoint(); err != nil {
			return nil, err
		}
		st := s.queries[len(s.queries)-1]
		// "warnings": [] rather than null when there is none.
		return registered{st.info(), append([]string{}, st.warnings...)}, nil
	})
	switch {
	case errors.Is(err, errQueryExists):
		httpError(w, http.StatusConflict, err)
	case err != nil:
		httpError(w, http.StatusBadRequest, err)
	default:
		writeJSON(w, http.StatusCreated, v)
	}
}

// registered is the answer to POST /queries: the query as GET shows it,
// and warnings about it, such as labels the graph has not seen, which are
// no error since a later message may carry them.
type registered struct {
	queryInfo
	Warnings []string `json:"warnings"`
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

// parseQueryRequest reads a POST /queries body: a JSON object, or a pattern
// as text with ?name=NAME[&initial=true]. The body is JSON when the
// Content-Type says so, or, when it names neither JSON nor text/plain (curl
// -d sends a form type), when it does not start like a pattern. A body that
// starts with '{' is JSON whatever the type says: no pattern starts so.
func parseQueryRequest(contentType string, params url.Values, body []byte) (queryRequest, error) {
	mt, _, _ := mime.ParseMediaType(contentType)
	t := bytes.TrimSpace(body)
	text := mt == "text/plain" && !bytes.HasPrefix(t, []byte("{"))
	if mt != "application/json" && !strings.HasSuffix(mt, "+json") && mt != "text/plain" {
		text = bytes.HasPrefix(t, []byte("(")) || len(t) >= 5 && strings.EqualFold(string(t[:5]), "MATCH")
	}
	if text {
		req := queryRequest{Name: params.Get("name"), Pattern: string(body), Initial: params.Get("initial") == "true"}
		if req.Name == "" {
			return req, errors.New("a pattern sent as text needs ?name=NAME in the URL")
		}
		return req, nil
	}
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
