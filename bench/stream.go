package bench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/ingest"
)

// SplitStream turns a static graph into a dynamic one by the protocol of the
// CSM literature (docs/benchmarks.md): a seeded fraction of the edges is chosen;
// half of them are left out of the initial graph and inserted by the stream,
// the other half stay in it and are deleted by the stream, and the two kinds
// are interleaved at random. When the chosen count is odd the insertions have
// the extra edge.
//
// The edges must be distinct. A fraction of 0 or less chooses none, 1 or
// more all of them. initial keeps the order of edges; both results are new
// slices. The vertex labels of the updates are graph.NoLabel, since the
// graph already knows them.
func SplitStream(edges []graph.Edge, fraction float64, seed uint64) (initial []graph.Edge, stream []graph.Update) {
	n := len(edges)
	var k int
	switch {
	case fraction >= 1:
		k = n
	case fraction > 0:
		k = int(math.Round(fraction * float64(n)))
	}
	inserts, deletes := k-k/2, k/2
	initial = make([]graph.Edge, 0, n-inserts)
	stream = make([]graph.Update, 0, k)
	rng := rand.New(rand.NewPCG(seed, saltSplit))
	for i, e := range edges {
		// Selection sampling (Knuth's Algorithm S) with two kinds: of the
		// n-i edges left, inserts are to be inserted and deletes deleted,
		// so this one is each with those odds. One pass picks uniform
		// random sets of exactly the right sizes without an index array,
		// which for 2^28 edges would cost 2 GiB.
		u := graph.Update{Src: e.Src, Dst: e.Dst, Label: e.Label, SrcLabel: graph.NoLabel, DstLabel: graph.NoLabel}
		switch x := rng.IntN(n - i); {
		case x < inserts:
			inserts--
			u.Op = graph.Insert
			stream = append(stream, u)
		case x < inserts+deletes:
			deletes--
			u.Op = graph.Delete
			stream = append(stream, u)
			initial = append(initial, e)
		default:
			initial = append(initial, e)
		}
	}
	rng.Shuffle(len(stream), func(i, j int) { stream[i], stream[j] = stream[j], stream[i] })
	return initial, stream
}

// TransferEvent is one event of a money-transfer stream, with the names and
// labels an application would send.
type TransferEvent struct {
	Op                 graph.Op // graph.Insert for a transfer, graph.Delete for its reversal
	Src, Dst           string   // "acct-17", "merchant-3"
	Label              string   // "TRANSFER"
	SrcLabel, DstLabel string   // "Account" or "Merchant"
	Time               int64    // milliseconds since the Unix epoch, strictly increasing
	// ID names the transfer, "tx-<n>", unique in the stream; a reversal
	// carries the id of the transfer it undoes.
	ID string
	// Amount is the transfer's amount in EUR, in whole cents; a reversal
	// carries the amount of the transfer it undoes, and an edge set
	// (graph.SetEdge, naming its transfer by ID) the amount it sets.
	Amount float64
	// Status is the status a vertex set (graph.SetVertex of Src) gives.
	Status string
}

// AmountProp is the property under which Record passes a transfer's
// amount, and StatusProp the one under which a vertex set passes its status.
const (
	AmountProp = "amount"
	StatusProp = "status"
)

// WithSets returns evs with property set events among them, a fraction
// ratio of the result: after a transfer, now and then, a set of the amount
// of one of the last 1,000 transfers (within 15% of what it was, which
// moves it across the layering predicates' 90% now and then) or of a
// recent sender's status (flagged or cleared), alike. The sets carry the
// time of the event before them.
func WithSets(evs []TransferEvent, ratio float64, seed uint64) []TransferEvent {
	if ratio <= 0 || ratio >= 1 {
		return evs
	}
	rng := rand.New(rand.NewPCG(seed, saltSets))
	per := ratio / (1 - ratio) // sets per transfer
	out := make([]TransferEvent, 0, int(float64(len(evs))*(1+per))+1)
	var recent []TransferEvent
	for _, ev := range evs {
		out = append(out, ev)
		if ev.Op != graph.Insert {
			continue
		}
		if len(recent) < 1000 {
			recent = append(recent, ev)
		} else {
			recent[rng.IntN(len(recent))] = ev
		}
		for n := per; n > 0; n-- {
			if n < 1 && rng.Float64() >= n {
				break
			}
			r := recent[rng.IntN(len(recent))]
			set := TransferEvent{Op: graph.SetVertex, Src: r.Src, Time: ev.Time, Status: []string{"flagged", "cleared"}[rng.IntN(2)]}
			if rng.IntN(2) == 0 {
				set = TransferEvent{Op: graph.SetEdge, ID: r.ID, Time: ev.Time, Amount: math.Round(r.Amount*(0.85+0.3*rng.Float64())*100) / 100}
			}
			out = append(out, set)
		}
	}
	return out
}

// Record is the event as gcsm's input reads it: a transfer carries its id
// and its amount (property "amount"); a reversal names its transfer by id
// alone, since a delete by id needs nothing else.
func (e TransferEvent) Record() ingest.Record {
	switch e.Op {
	case graph.SetVertex:
		return ingest.Record{Op: e.Op, Src: e.Src, Time: e.Time, SrcProps: []graph.Prop{{Name: StatusProp, Value: graph.StringValue(e.Status)}}}
	case graph.SetEdge:
		return ingest.Record{Op: e.Op, ID: e.ID, Time: e.Time, Props: []graph.Prop{{Name: AmountProp, Value: graph.NumberValue(e.Amount)}}}
	}
	r := ingest.Record{Op: e.Op, Src: e.Src, Dst: e.Dst, Label: e.Label, SrcLabel: e.SrcLabel, DstLabel: e.DstLabel, ID: e.ID, Time: e.Time}
	if e.Op == graph.Insert {
		r.Props = []graph.Prop{{Name: AmountProp, Value: graph.NumberValue(e.Amount)}}
	}
	return r
}

const (
	transferLabel = "TRANSFER"
	accountLabel  = "Account"
	merchantLabel = "Merchant"

	// transfersEpoch is the time of the first event, fixed so that the
	// stream is the same on every run: 2023-11-14T22:13:20Z.
	transfersEpoch = 1_700_000_000_000

	// transferGapMillis is the mean gap between ordinary transfers. The
	// legs of a ring or a fan-in follow one another within a second, as
	// money moved by one hand would.
	transferGapMillis = 200

	// Ordinary amounts are log-normal around a median of 150 EUR, cut to
	// [10, 50000]: about one transfer in 250 is over the 10,000 that a
	// layering ring's first leg exceeds.
	amountMedian, amountSigma = 150, 1.3
	amountMin, amountMax      = 10, 50_000
	// A ring's first leg is over ringFirstMin; every later leg keeps 90.5
	// to 99% of the one before, the rest taken as fees, the layering a
	// "t2.amount >= 0.9 * t1.amount" predicate looks for. The lower end
	// stays above 90% so that rounding to cents cannot cross it.
	ringFirstMin, ringFirstMax = 10_000, 50_000
	ringKeepMin, ringKeepMax   = 0.905, 0.99
	// Fan-in legs stay just under the 10,000 that banks must report:
	// structuring.
	fanInMin, fanInMax = 9_000, 9_999.99
)

// Transfers returns a stream of n events among accounts accounts and a few
// merchants (one for every 50 accounts, at least one), deterministic for the
// seed.
//
// Most events are ordinary transfers between accounts chosen by a Zipf law,
// so a few accounts take a large share of the traffic, and a fifth of them
// are payments to merchants. Planted among them, so that a demonstration
// finds matches, are:
//   - rings of three and of four distinct accounts, a→b→c(→d)→a, about one
//     of each kind for every 200 and 400 events: layering, whose legs
//     follow one another within a second each, the first over 10,000 EUR
//     and each later one 90.5 to 99% of the one before;
//   - fan-ins, five to eight accounts paying one account (a money mule),
//     about one for every 400 events, each just under 10,000 EUR;
//   - reversals, about one event in a hundred: a Delete of an earlier
//     ordinary transfer. A reversal never removes an edge of a ring or a
//     fan-in, so every planted pattern is still in the graph at the end.
//
// Every transfer has its own id and amount. Amounts come from a random
// stream of their own, so the rest of each event is what it was before
// streams had amounts.
//
// A stream of at least 3 events among at least 3 accounts has a ring of
// three. Transfers panics if n > 0 and accounts < 2.
func Transfers(accounts int, n int, seed uint64) []TransferEvent {
	return TransfersHead(accounts, n, seed, 100)
}

// TransfersHead is Transfers with the Zipf law's offset: the busiest
// account sends ((accounts+head)/head)^1.1 times what the quietest does.
// Transfers' 100 gives a dense core of hubs, whose natural cycles
// outnumber the planted rings on a long stream (a million transfers close
// hundreds of 4- and 5-rings per update through it); accounts/10 keeps
// the law's tail but leaves cycles to the planted rings. head must be 1 or
// more.
func TransfersHead(accounts int, n int, seed uint64, head float64) []TransferEvent {
	if n <= 0 {
		return nil
	}
	if accounts < 2 {
		panic(fmt.Sprintf("bench: Transfers needs at least 2 accounts, got %d", accounts))
	}
	if !(head >= 1) {
		panic(fmt.Sprintf("bench: TransfersHead needs a head of 1 or more, got %v", head))
	}
	rng := rand.New(rand.NewPCG(seed, saltTransfers))
	t := &transfers{
		rng:       rng,
		amounts:   rand.New(rand.NewPCG(seed, saltAmounts)),
		accounts:  accounts,
		merchants: max(1, accounts/50),
		// An exponent near 1 with an offset of 100 keeps the head of the
		// law flat: with 20000 accounts the busiest takes about 0.5% of
		// the transfers. With 1.3 and 8 a few hubs took 7% each, and
		// natural triangles among them drowned the planted rings.
		zipf:      rand.NewZipf(rng, 1.1, head, uint64(accounts-1)),
		now:       transfersEpoch,
		events:    make([]TransferEvent, 0, n),
		present:   make(map[[2]int]bool),
		protected: make(map[[2]int]bool),
	}
	for _, p := range t.plan(n) {
		switch p.kind {
		case planRing:
			t.ring(p.size)
		case planFanIn:
			t.fanIn(p.size)
		case planReversal:
			t.reversal()
		default:
			t.ordinary()
		}
	}
	return t.events
}

type planKind uint8

const (
	planOrdinary planKind = iota
	planRing
	planFanIn
	planReversal
)

// planned is a unit of the stream: one event, or a pattern of size events.
type planned struct {
	kind planKind
	size int
}

// transfers is the state of one Transfers call. Vertices are numbered
// accounts first, then merchants.
type transfers struct {
	rng                 *rand.Rand
	amounts             *rand.Rand // draws amounts only, so rng draws as it did before amounts
	zipf                *rand.Zipf
	accounts, merchants int
	now                 int64
	events              []TransferEvent

	// reversible lists the ordinary transfers that a reversal may still
	// undo.
	reversible []transferRef
	// present holds the (src, dst) pairs in the graph, so that a reversal
	// never deletes an edge that an earlier one already removed.
	present map[[2]int]bool
	// protected holds the pairs of planted patterns, which a reversal must
	// not delete.
	protected map[[2]int]bool
	// inserted counts the transfers emitted: the next one's id.
	inserted int
}

// transferRef is an event of the stream, with its vertices as numbers.
type transferRef struct {
	event    int // index in events
	src, dst int
}

// plan returns the units of a stream of exactly n events, in random order.
// Rings of three come first in the budget so that even a short stream has
// one.
func (t *transfers) plan(n int) []planned {
	var units []planned
	budget := n
	add := func(count int, p planned) {
		for ; count > 0 && p.size <= budget; count-- {
			units = append(units, p)
			budget -= p.size
		}
	}
	if t.accounts >= 3 {
		add(n/200+1, planned{planRing, 3})
	}
	if t.accounts >= 4 {
		add(n/400+1, planned{planRing, 4})
	}
	for range n/400 + 1 {
		add(1, planned{planFanIn, min(5+t.rng.IntN(4), t.accounts-1)})
	}
	add(n/100, planned{planReversal, 1})
	add(budget, planned{planOrdinary, 1})
	t.rng.Shuffle(len(units), func(i, j int) { units[i], units[j] = units[j], units[i] })
	return units
}

// ordinary emits a transfer from a Zipf-chosen account to another account
// or, one time in five, to a merchant.
func (t *transfers) ordinary() {
	src := t.account()
	var dst int
	if t.rng.IntN(5) == 0 {
		dst = t.accounts + t.rng.IntN(t.merchants)
	} else {
		for dst = t.account(); dst == src; dst = t.account() {
		}
	}
	t.reversible = append(t.reversible, transferRef{len(t.events), src, dst})
	amount := cents(min(max(amountMedian*math.Exp(amountSigma*t.amounts.NormFloat64()), amountMin), amountMax))
	t.emit(src, dst, 1+int64(t.rng.ExpFloat64()*transferGapMillis), amount)
}

// ring emits a cycle of transfers among size distinct accounts. Ring members
// are drawn uniformly rather than by the Zipf law: fraud rings are made of
// otherwise quiet accounts.
func (t *transfers) ring(size int) {
	members := t.distinctAccounts(size)
	amount := cents(ringFirstMin + 0.01 + t.amounts.Float64()*(ringFirstMax-ringFirstMin-0.01))
	for i, src := range members {
		if i > 0 {
			amount = cents(amount * (ringKeepMin + t.amounts.Float64()*(ringKeepMax-ringKeepMin)))
		}
		t.plant(src, members[(i+1)%size], amount)
	}
}

// fanIn emits size transfers from distinct accounts into one account.
func (t *transfers) fanIn(size int) {
	members := t.distinctAccounts(size + 1)
	for _, src := range members[1:] {
		t.plant(src, members[0], cents(fanInMin+t.amounts.Float64()*(fanInMax-fanInMin)))
	}
}

// reversal emits a Delete of a random earlier ordinary transfer, or an
// ordinary transfer when none may be reversed.
func (t *transfers) reversal() {
	for len(t.reversible) > 0 {
		k := t.rng.IntN(len(t.reversible))
		r := t.reversible[k]
		t.reversible[k] = t.reversible[len(t.reversible)-1]
		t.reversible = t.reversible[:len(t.reversible)-1]
		p := [2]int{r.src, r.dst}
		if t.protected[p] || !t.present[p] {
			continue
		}
		delete(t.present, p)
		e := t.events[r.event]
		t.now += 1 + int64(t.rng.ExpFloat64()*transferGapMillis)
		e.Op, e.Time = graph.Delete, t.now
		t.events = append(t.events, e)
		return
	}
	t.ordinary()
}

// plant emits one leg of a planted pattern and protects it from reversal.
func (t *transfers) plant(src, dst int, amount float64) {
	t.protected[[2]int{src, dst}] = true
	t.emit(src, dst, 1+int64(t.rng.IntN(1000)), amount)
}

// emit appends a transfer of amount from src to dst, gap milliseconds after
// the last event, with the next id.
func (t *transfers) emit(src, dst int, gap int64, amount float64) {
	t.present[[2]int{src, dst}] = true
	t.now += gap
	t.events = append(t.events, TransferEvent{
		Op:       graph.Insert,
		Src:      t.name(src),
		Dst:      t.name(dst),
		Label:    transferLabel,
		SrcLabel: t.label(src),
		DstLabel: t.label(dst),
		Time:     t.now,
		ID:       "tx-" + strconv.Itoa(t.inserted),
		Amount:   amount,
	})
	t.inserted++
}

// cents rounds an amount to whole cents.
func cents(x float64) float64 { return math.Round(x*100) / 100 }

// account returns a Zipf-distributed account: account 0 is the busiest.
func (t *transfers) account() int { return int(t.zipf.Uint64()) }

// distinctAccounts returns k distinct accounts drawn uniformly. Rejection is
// cheap because k is at most 9 and accounts at least k.
func (t *transfers) distinctAccounts(k int) []int {
	out := make([]int, 0, k)
next:
	for len(out) < k {
		a := t.rng.IntN(t.accounts)
		for _, b := range out {
			if a == b {
				continue next
			}
		}
		out = append(out, a)
	}
	return out
}

func (t *transfers) name(v int) string {
	if v < t.accounts {
		return "acct-" + strconv.Itoa(v)
	}
	return "merchant-" + strconv.Itoa(v-t.accounts)
}

func (t *transfers) label(v int) string {
	if v < t.accounts {
		return accountLabel
	}
	return merchantLabel
}
