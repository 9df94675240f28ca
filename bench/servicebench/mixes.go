package servicebench

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Mix is a standard workload of gcsm bench service: its queries and
// the stream size at which it has the alert rate it is named for.
type Mix struct {
	Queries              []string
	Accounts, Updates    int
	Summary              string
	MinEvents, MaxEvents float64 // the events per update the mix is meant to have; 0: no bound
	// flat streams transfers with the Zipf law's head at a tenth of the
	// accounts (bench.TransfersHead), so that no dense core of hubs closes
	// cycles on every update.
	flat bool
	// Transfers streams events with ids and amounts (bench.TransferEvent's
	// Record), so that every transfer is an edge of its own and queries
	// bind transfers. The other mixes stream bare pairs, as their figures
	// were taken on.
	Transfers bool
	// Pairs names queries reported side by side: a bare pattern and its
	// predicated form.
	Pairs [][2]string
}

// Head is the Zipf offset of the mix's stream among accounts accounts.
func (m Mix) Head(accounts int) float64 {
	if m.flat {
		return max(100, float64(accounts)/10)
	}
	return 100
}

// Mixes are the standard mixes. alert-sparse is fraud-like
// patterns of four and five accounts that fire under once per 100 updates
// on a large population; alert-heavy is triangles among few accounts,
// where every update closes several; rings-where sets rings beside their
// predicated forms; five is patterns of five accounts over a dense stream,
// where matching, not Kafka, bounds the service.
var Mixes = map[string]Mix{
	"alert-sparse": {
		Queries: []string{
			"ring4=(a:Account)-[:TRANSFER]->(b:Account)-[:TRANSFER]->(c:Account)-[:TRANSFER]->(d:Account)-[:TRANSFER]->(a)",
			"ring5=(a:Account)-[:TRANSFER]->(b:Account)-[:TRANSFER]->(c:Account)-[:TRANSFER]->(d:Account)-[:TRANSFER]->(e:Account)-[:TRANSFER]->(a)",
			"cashout=(a:Account)-[:TRANSFER]->(b:Account)-[:TRANSFER]->(c:Account)-[:TRANSFER]->(d:Account)-[:TRANSFER]->(a), (d)-[:TRANSFER]->(m:Merchant)",
		},
		Accounts: 1_000_000, Updates: 1_000_000, MaxEvents: 0.01, flat: true,
		Summary: "rings of 4 and 5 accounts, and a 4-ring cashed out at a merchant",
	},
	"alert-heavy": {
		Queries:  []string{"ring3=(a:Account)-[:TRANSFER]->(b:Account)-[:TRANSFER]->(c:Account)-[:TRANSFER]->(a)"},
		Accounts: 20_000, Updates: 1_000_000, MinEvents: 1,
		Summary: "triangles, among few accounts",
	},
	// At 50,000 accounts a million transfers close about 6,000 natural
	// 3-rings and 120,000 natural 4-rings beside the 5,000 and 2,500
	// planted layering rings, which alone pass the predicates.
	"rings-where": {
		Queries: []string{
			"ring3=(a:Account)-[t1:TRANSFER]->(b:Account)-[t2:TRANSFER]->(c:Account)-[t3:TRANSFER]->(a)",
			"ring3w=(a:Account)-[t1:TRANSFER]->(b:Account)-[t2:TRANSFER]->(c:Account)-[t3:TRANSFER]->(a)" + layering3,
			"ring4=(a:Account)-[t1:TRANSFER]->(b:Account)-[t2:TRANSFER]->(c:Account)-[t3:TRANSFER]->(d:Account)-[t4:TRANSFER]->(a)",
			"ring4w=(a:Account)-[t1:TRANSFER]->(b:Account)-[t2:TRANSFER]->(c:Account)-[t3:TRANSFER]->(d:Account)-[t4:TRANSFER]->(a)" + layering4,
		},
		Accounts: 50_000, Updates: 1_000_000, flat: true, Transfers: true,
		Pairs:   [][2]string{{"ring3", "ring3w"}, {"ring4", "ring4w"}},
		Summary: "3- and 4-rings over transfers with ids and amounts, bare and as layering (time-ordered within 1h, first leg over 10,000, each leg at least 90% of the one before)",
	},
	// Twenty transfers per account make the join's partial matches many and
	// its complete ones few: a million transfers close 2.6 5-rings per
	// update, a house per 40 and a mule per 80, and matching takes over 80%
	// of the service's time on the CPU, so the engine, not the alerts,
	// bounds it. Flat keeps hubs from closing cycles on every update.
	"five": {
		Queries: []string{
			"ring5=(a:Account)-[:TRANSFER]->(b:Account)-[:TRANSFER]->(c:Account)-[:TRANSFER]->(d:Account)-[:TRANSFER]->(e:Account)-[:TRANSFER]->(a)",
			"house=(a:Account)-[:TRANSFER]->(b:Account)-[:TRANSFER]->(c:Account)-[:TRANSFER]->(d:Account)-[:TRANSFER]->(a), (a)-[:TRANSFER]->(e:Account)-[:TRANSFER]->(b)",
			"mule=(a:Account)-[:TRANSFER]->(b:Account)-[:TRANSFER]->(c:Account)-[:TRANSFER]->(d:Account)-[:TRANSFER]->(a), (a)-[:TRANSFER]->(e:Account), (c)-[:TRANSFER]->(e)",
		},
		Accounts: 50_000, Updates: 1_000_000, MinEvents: 0.1, MaxEvents: 5, flat: true,
		Summary: "patterns of 5 accounts (a 5-ring; a house, a 4-ring with one leg also routed through a fifth account; a 4-ring whose opposite members both pay one mule) over a dense stream: matching bounds the service, for the GPU against the CPU end to end",
	},
}

// layering3 and layering4 are the predicates of rings-where's layering
// rings: money moved on through the ring in order, within an hour, from a
// large first transfer, each hop keeping at least 90% (the rest fees).
const (
	layering3 = " WHERE t1.amount > 10000 AND t1.ts < t2.ts AND t2.ts < t3.ts AND t3.ts - t1.ts < 1h" +
		" AND t2.amount >= 0.9 * t1.amount AND t3.amount >= 0.9 * t2.amount"
	layering4 = " WHERE t1.amount > 10000 AND t1.ts < t2.ts AND t2.ts < t3.ts AND t3.ts < t4.ts AND t4.ts - t1.ts < 1h" +
		" AND t2.amount >= 0.9 * t1.amount AND t3.amount >= 0.9 * t2.amount AND t4.amount >= 0.9 * t3.amount"
)

var (
	relVar    = regexp.MustCompile(`-\[(\w+):`)
	vertexVar = regexp.MustCompile(`\((\w+)[:)]`)
)

// WithReturn appends to each spec with a WHERE over relationship variables
// a RETURN of three fields, what an analyst reads first: its first vertex
// (the account), the total amount of its transfers and their span in time.
// The others are left as they are.
func WithReturn(specs []string) []string {
	out := make([]string, len(specs))
	for i, spec := range specs {
		out[i] = spec
		rels := relVar.FindAllStringSubmatch(spec, -1)
		first := vertexVar.FindStringSubmatch(spec)
		if !strings.Contains(spec, " WHERE ") || len(rels) == 0 || first == nil {
			continue
		}
		var vars []string
		for _, m := range rels {
			vars = append(vars, m[1])
		}
		list := "[" + strings.Join(vars, ", ") + "]"
		out[i] += fmt.Sprintf(" RETURN %s, sum(%s.amount) AS total, max(%s.ts) - min(%s.ts) AS span", first[1], list, list, list)
	}
	return out
}

// Selected returns the mix's query specs named in the comma-separated list
// only, in the mix's order.
func (m Mix) Selected(mix, only string) ([]string, error) {
	var names []string
	for _, q := range m.Queries {
		name, _, _ := strings.Cut(q, "=")
		names = append(names, name)
	}
	want := map[string]bool{}
	for _, n := range strings.Split(only, ",") {
		n = strings.TrimSpace(n)
		if !slices.Contains(names, n) {
			return nil, fmt.Errorf("--select %q: mix %s has no query %q; its queries are %s", only, mix, n, strings.Join(names, ", "))
		}
		want[n] = true
	}
	var out []string
	for i, q := range m.Queries {
		if want[names[i]] {
			out = append(out, q)
		}
	}
	return out, nil
}

// serviceQueries turns -q specs (NAME=PATTERN or a bare pattern, named qN)
