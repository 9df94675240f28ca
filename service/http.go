package service

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"net/http"
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
// With http.token set, the query API needs "Authorization: Bearer TOKEN";
// metrics and health stay open for scrapers and probes.
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
	return mux
}

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
		httpError(w, http.StatusRequestEntityTooLarge, err)
		return
	}
	var req queryRequest
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") || (len(body) > 0 && body[0] == '{') {
		dec := json.NewDecoder(strings.NewReader(string(body)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			httpError(w, http.StatusBadRequest, err)
			return
		}
	} else {
		req = queryRequest{Name: r.URL.Query().Get("name"), Pattern: string(body), Initial: r.URL.Query().Get("initial") == "true"}
	}
	c, err := req.config()
	if err != nil {
		httpError(w, http.StatusBadRequest, err)
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
		httpError(w, http.StatusNotFound, err)
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

func httpError(w http.ResponseWriter, code int, err error) {
	writeJSON(w, code, map[string]string{"error": err.Error()})
}
