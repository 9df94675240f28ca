package main

import (
	"github.com/gcsm/gcsm/bench"
	"github.com/gcsm/gcsm/ingest"
)

// The demo workload: a power-law stream of money transfers between accounts
// with planted rings and fan-ins, and the patterns a fraud team would watch.
const (
	demoAccounts = 20000
	demoEvents   = 40000
	demoSeed     = 1
)

var demoQueries = []string{
	"ring3=(a:Account)-[:TRANSFER]->(b:Account)-[:TRANSFER]->(c:Account)-[:TRANSFER]->(a)",
	"ring4=(a:Account)-[:TRANSFER]->(b:Account)-[:TRANSFER]->(c:Account)-[:TRANSFER]->(d:Account)-[:TRANSFER]->(a)",
	// Layering: money split over two paths and merged again.
	"split=(s:Account)-[:TRANSFER]->(a:Account)-[:TRANSFER]->(t:Account), (s)-[:TRANSFER]->(b:Account)-[:TRANSFER]->(t)",
}

// loadDemo generates the demo stream into the session (its graph starts
// empty) and sets the demo's queries unless the user gave some.
func (s *session) loadDemo(f *replayFlags) (*stream, error) {
	if len(f.queries) == 0 {
		f.queries = demoQueries
	}
	st := &stream{file: "demo"}
	for i, ev := range bench.Transfers(demoAccounts, demoEvents, demoSeed) {
		u, err := s.resolver.Resolve(ingest.Record{
			Op: ev.Op, Src: ev.Src, Dst: ev.Dst, Label: ev.Label,
			SrcLabel: ev.SrcLabel, DstLabel: ev.DstLabel, Time: ev.Time, Line: i + 1,
		})
		if err != nil {
			return nil, err
		}
		st.updates = append(st.updates, u)
		st.lines = append(st.lines, i+1)
	}
	return st, nil
}
