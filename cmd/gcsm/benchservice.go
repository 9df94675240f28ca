package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gcsm/gcsm/bench"
	"github.com/gcsm/gcsm/bundle"
	"github.com/gcsm/gcsm/engine"
	"github.com/gcsm/gcsm/graph"
	"github.com/gcsm/gcsm/incremental"
	"github.com/gcsm/gcsm/ingest"
	"github.com/gcsm/gcsm/internal/kafkaconn"
	"github.com/gcsm/gcsm/output"
	"github.com/gcsm/gcsm/query"
	"github.com/gcsm/gcsm/service"
)

// serviceMix is a standard workload of gcsm bench service: its queries and
// the stream size at which it has the alert rate it is named for.
type serviceMix struct {
	queries              []string
	accounts, updates    int
	summary              string
	minEvents, maxEvents float64 // the events per update the mix is meant to have; 0: no bound
	// flat streams transfers with the Zipf law's head at a tenth of the
	// accounts (bench.TransfersHead), so that no dense core of hubs closes
	// cycles on every update.
	flat bool
	// transfers streams events with ids and amounts (bench.TransferEvent's
	// Record), so that every transfer is an edge of its own and queries
	// bind transfers. The other mixes stream bare pairs, as their figures
	// were taken on.
	transfers bool
	// pairs names queries reported side by side: a bare pattern and its
	// predicated form.
	pairs [][2]string
}

// head is the Zipf offset of the mix's stream among accounts accounts.
func (m serviceMix) head(accounts int) float64 {
	if m.flat {
		return max(100, float64(accounts)/10)
	}
	return 100
}

// serviceMixes are the standard mixes. alert-sparse is fraud-like
// patterns of four and five accounts that fire under once per 100 updates
// on a large population; alert-heavy is triangles among few accounts,
// where every update closes several; rings-where sets rings beside their
// predicated forms; five is patterns of five accounts over a dense stream,
// where matching, not Kafka, bounds the service.
var serviceMixes = map[string]serviceMix{
	"alert-sparse": {
		queries: []string{
			"ring4=(a:Account)-[:TRANSFER]->(b:Account)-[:TRANSFER]->(c:Account)-[:TRANSFER]->(d:Account)-[:TRANSFER]->(a)",
			"ring5=(a:Account)-[:TRANSFER]->(b:Account)-[:TRANSFER]->(c:Account)-[:TRANSFER]->(d:Account)-[:TRANSFER]->(e:Account)-[:TRANSFER]->(a)",
			"cashout=(a:Account)-[:TRANSFER]->(b:Account)-[:TRANSFER]->(c:Account)-[:TRANSFER]->(d:Account)-[:TRANSFER]->(a), (d)-[:TRANSFER]->(m:Merchant)",
		},
		accounts: 1_000_000, updates: 1_000_000, maxEvents: 0.01, flat: true,
		summary: "rings of 4 and 5 accounts, and a 4-ring cashed out at a merchant",
	},
	"alert-heavy": {
		queries:  []string{"ring3=(a:Account)-[:TRANSFER]->(b:Account)-[:TRANSFER]->(c:Account)-[:TRANSFER]->(a)"},
		accounts: 20_000, updates: 1_000_000, minEvents: 1,
		summary: "triangles, among few accounts",
	},
	// At 50,000 accounts a million transfers close about 6,000 natural
	// 3-rings and 120,000 natural 4-rings beside the 5,000 and 2,500
	// planted layering rings, which alone pass the predicates.
	"rings-where": {
		queries: []string{
			"ring3=(a:Account)-[t1:TRANSFER]->(b:Account)-[t2:TRANSFER]->(c:Account)-[t3:TRANSFER]->(a)",
			"ring3w=(a:Account)-[t1:TRANSFER]->(b:Account)-[t2:TRANSFER]->(c:Account)-[t3:TRANSFER]->(a)" + layering3,
			"ring4=(a:Account)-[t1:TRANSFER]->(b:Account)-[t2:TRANSFER]->(c:Account)-[t3:TRANSFER]->(d:Account)-[t4:TRANSFER]->(a)",
			"ring4w=(a:Account)-[t1:TRANSFER]->(b:Account)-[t2:TRANSFER]->(c:Account)-[t3:TRANSFER]->(d:Account)-[t4:TRANSFER]->(a)" + layering4,
		},
		accounts: 50_000, updates: 1_000_000, flat: true, transfers: true,
		pairs:   [][2]string{{"ring3", "ring3w"}, {"ring4", "ring4w"}},
		summary: "3- and 4-rings over transfers with ids and amounts, bare and as layering (time-ordered within 1h, first leg over 10,000, each leg at least 90% of the one before)",
	},
	// Twenty transfers per account make the join's partial matches many and
	// its complete ones few: a million transfers close 2.6 5-rings per
	// update, a house per 40 and a mule per 80, and matching takes over 80%
	// of the service's time on the CPU, so the engine, not the alerts,
	// bounds it. Flat keeps hubs from closing cycles on every update.
	"five": {
		queries: []string{
			"ring5=(a:Account)-[:TRANSFER]->(b:Account)-[:TRANSFER]->(c:Account)-[:TRANSFER]->(d:Account)-[:TRANSFER]->(e:Account)-[:TRANSFER]->(a)",
			"house=(a:Account)-[:TRANSFER]->(b:Account)-[:TRANSFER]->(c:Account)-[:TRANSFER]->(d:Account)-[:TRANSFER]->(a), (a)-[:TRANSFER]->(e:Account)-[:TRANSFER]->(b)",
			"mule=(a:Account)-[:TRANSFER]->(b:Account)-[:TRANSFER]->(c:Account)-[:TRANSFER]->(d:Account)-[:TRANSFER]->(a), (a)-[:TRANSFER]->(e:Account), (c)-[:TRANSFER]->(e)",
		},
		accounts: 50_000, updates: 1_000_000, minEvents: 0.1, maxEvents: 5, flat: true,
		summary: "patterns of 5 accounts (a 5-ring; a house, a 4-ring with one leg also routed through a fifth account; a 4-ring whose opposite members both pay one mule) over a dense stream: matching bounds the service, for the GPU against the CPU end to end",
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

// benchServiceFlags are gcsm bench service's flags.
type benchServiceFlags struct {
	mix               string
	queries           queryFlags
	only              string // --select: names of the mix's queries to run
	updates, accounts int
	batch, workers    int
	partitions        int
	rate              int
	duration, window  time.Duration
	warmup            time.Duration // a soak's warm-up; 0: a minute, or a quarter of a shorter soak
	brokers           string
	brokerDir         string // --broker-dir: the data directory of --brokers' broker, for a soak's disk figure
	secure            bool   // --secure: TLS and SCRAM on every connection
	delivery          string // output.delivery
	config            string // --config: tls and sasl for --brokers
	compression       string // output.compression
	seed              uint64
	head              float64 // the stream's Zipf offset, from the mix
	transfers         bool    // the stream's events carry ids and amounts, from the mix
	jsonOut, engine   bool
	cpuprofile        string
	dev               deviceFlags
	members           int // --members: cluster members in this process; 0: the service alone
}

// runBenchService is gcsm bench service: the service end to end through
// Kafka on a generated transfer stream, then the same stream through the
// engine alone, as replay runs it.
func runBenchService(args []string, stdout, stderr io.Writer) error {
	var f benchServiceFlags
	fs := flag.NewFlagSet("bench service", flag.ContinueOnError)
	fs.StringVar(&f.mix, "mix", "alert-sparse", "standard workload: alert-sparse (4- and 5-account fraud patterns, under 0.01 alerts per update), alert-heavy (triangles among few accounts, over one alert per update) rings-where (3- and 4-rings over transfers with ids and amounts, bare beside layering predicates) or five (5-account patterns over a dense stream, matching-bound: about 2.7 alerts per update)")
	fs.Var(&f.queries, "q", "query instead of the mix's: an inline pattern or NAME=PATTERN (repeatable); the stream is still the mix's")
	fs.StringVar(&f.only, "select", "", "run only the mix's queries of these comma-separated `names`: with rings-where, ring3,ring4 against ring3w,ring4w compares bare and predicated throughput")
	fs.IntVar(&f.updates, "updates", 0, "updates in the stream; 0: the mix's (1,000,000)")
	fs.IntVar(&f.accounts, "accounts", 0, "accounts among which the transfers flow; 0: the mix's")
	fs.IntVar(&f.batch, "batch", 4096, "updates per batch at most, for the service and the engine alone")
	fs.IntVar(&f.workers, "workers", 0, "CPU matching goroutines; 0 uses every core")
	fs.IntVar(&f.partitions, "partitions", 1, "partitions of the input and output topics")
	fs.IntVar(&f.rate, "rate", 0, "updates per second to produce while the service runs, for end-to-end latency; 0 loads the whole stream first and measures throughput")
	fs.DurationVar(&f.duration, "duration", 0, "run at --rate for this long, sampling RSS, Go heap, consumer lag and the broker's disk (the embedded one's, or --broker-dir) every second, and report their drift (a soak); the engine alone is not run")
	fs.DurationVar(&f.warmup, "warmup", 0, "a soak's warm-up before the first window it compares with the last: long enough for the window's graph and accounts to fill (they grow for minutes when the service keeps pace on 2 cores); 0: a minute, or a quarter of a soak shorter than four minutes")
	fs.DurationVar(&f.window, "window", 24*time.Hour, "a soak's event-time window (window.size), which bounds its graph: the stream's transfers are 200 ms of event time apart on average, so 24h holds about 430,000")
	fs.StringVar(&f.brokers, "brokers", "", "comma-separated Kafka `brokers` (a gcsm broker in another process, say); empty starts the embedded broker in this process")
	fs.StringVar(&f.brokerDir, "broker-dir", "", "with --brokers and --duration, the `directory` that broker keeps its log in (gcsm broker's --data), whose size the soak samples; the embedded broker's is sampled anyway")
	fs.BoolVar(&f.secure, "secure", false, "TLS and SCRAM-SHA-512 on every connection: the embedded broker serves them with a fresh self-signed certificate; with --brokers, --config says how")
	fs.StringVar(&f.config, "config", "", "with --brokers, gcsm run's YAML `file` whose tls and sasl sections reach them")
	fs.StringVar(&f.compression, "compression", "none", "compression of the produced alerts: none, gzip, snappy, lz4 or zstd")
	fs.StringVar(&f.delivery, "delivery", service.ExactlyOnce, "the service's output.delivery: exactly-once (Kafka transactions; an alert's latency runs to its transaction's commit) or at-least-once")
	fs.Uint64Var(&f.seed, "seed", 1, "stream seed")
	fs.BoolVar(&f.jsonOut, "json", false, "write only the JSON summary to stdout; the table goes to stderr")
	fs.BoolVar(&f.engine, "engine", true, "also run the stream through the engine alone and report the service's share of its throughput")
	fs.StringVar(&f.cpuprofile, "cpuprofile", "", "write a Go CPU profile of the whole run to `file`")
	fs.IntVar(&f.members, "members", 0, "run one cluster member, then N members sharing the stream, each with its own matcher (with --device gpu, member i on GPUs i*gpus to i*gpus+gpus-1), and report their throughputs and each member's share of the work; 0 benchmarks the service alone")
	f.dev.register(fs)
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if f.cpuprofile != "" {
		stop, err := startProfile(f.cpuprofile)
		if err != nil {
			return err
		}
		defer stop()
	}
	err := badFlags(
		choice("mix", f.mix, "alert-sparse", "alert-heavy", "rings-where", "five"),
		choice("compression", f.compression, "none", "gzip", "snappy", "lz4", "zstd"),
		choice("delivery", f.delivery, service.ExactlyOnce, service.AtLeastOnce),
		intIn("updates", int64(f.updates), 0, math.MaxInt32),
		intIn("accounts", int64(f.accounts), 0, math.MaxInt32),
		intIn("batch", int64(f.batch), 1, math.MaxInt32),
		intIn("partitions", int64(f.partitions), 1, 1<<10),
		intIn("rate", int64(f.rate), 0, math.MaxInt32),
		durationFlag(f.duration, f.rate),
		windowFlag(f.window, f.duration, fs),
		warmupFlag(f.warmup, f.duration),
		intIn("members", int64(f.members), 0, 64),
		membersFlag(f.members, f.rate, f.duration),
		brokerDirFlag(f.brokerDir, f.brokers, f.duration),
		configFlag(f.config, f.brokers),
	)
	if err != nil {
		return err
	}
	mix := serviceMixes[f.mix]
	if f.updates == 0 {
		f.updates = mix.updates
	}
	if f.accounts == 0 {
		f.accounts = mix.accounts
	}
	if f.accounts < 3 || f.updates < 3 {
		return badFlags(errors.New("--accounts and --updates: want 3 or more each (a ring needs three accounts and three transfers)"))
	}
	f.head = mix.head(f.accounts)
	f.transfers = mix.transfers
	specs := []string(f.queries)
	if len(specs) == 0 {
		specs = mix.queries
	}
	if f.only != "" {
		if len(f.queries) > 0 {
			return badFlags(errors.New("--select picks among the mix's queries; -q replaces them: give one or the other"))
		}
		if specs, err = mix.selected(f.mix, f.only); err != nil {
			return badFlags(err)
		}
	}
	qcfg, err := serviceQueries(specs)
	if err != nil {
		return err
	}
	human := humanOut(stdout, stderr, f.jsonOut)
	name := f.mix
	switch {
	case len(f.queries) > 0:
		name = "custom"
	case f.only != "":
		name = f.mix + " (" + f.only + ")"
		fmt.Fprintf(human, "mix %s: %s; only %s\n", f.mix, mix.summary, f.only)
	default:
		fmt.Fprintf(human, "mix %s: %s\n", f.mix, mix.summary)
	}
	if f.members > 0 {
		return benchMembers(&f, name, qcfg, human, stdout, stderr)
	}
	res, err := benchService(&f, name, qcfg, human, stderr)
	if err != nil {
		return err
	}
	if len(f.queries) == 0 {
		res.pair(mix.pairs)
	}
	res.report(human)
	if len(f.queries) == 0 && f.only == "" && f.duration == 0 {
		epu := res.EventsPerUpdate
		if mix.maxEvents > 0 && epu >= mix.maxEvents || mix.minEvents > 0 && epu <= mix.minEvents {
			fmt.Fprintf(human, "note: %.4f alerts per update is outside what %s is meant to have at these sizes\n", epu, f.mix)
		}
	}
	js, err := json.Marshal(res)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, string(js))
	if res.Engine != nil && !res.Engine.Consistent {
		return errors.New("the service and the engine alone disagree on the matches (see the table): a bug")
	}
	return nil
}

func durationFlag(d time.Duration, rate int) error {
	switch {
	case d < 0:
		return fmt.Errorf("--duration %v: want a positive duration", d)
	case d > 0 && rate == 0:
		return fmt.Errorf("--duration %v needs --rate: a soak runs at a set rate", d)
	}
	return nil
}

// brokerDirFlag allows --broker-dir only where a soak samples another
// process's broker.
// benchBroker points cfg at the bench's brokers, secured as f says: the
// embedded broker started in this process unless --brokers names others,
// with TLS and SCRAM under --secure (its files under dir), or the tls and
// sasl sections of --config. It returns the connection, the broker's data
// directory (where known, for a soak's disk figure), and what stops it.
func benchBroker(f *benchServiceFlags, cfg *service.Config, dir string) (kafkaconn.Conn, string, func(), error) {
	closeBroker, brokerDir := func() {}, f.brokerDir
	if f.brokers == "" {
		bcfg := *cfg
		bcfg.Embedded.Listen = "127.0.0.1:0"
		bcfg.Embedded.Partitions = f.partitions
		bcfg.State.Dir = filepath.Join(dir, "broker")
		var sec service.BrokerSecurity
		if f.secure {
			local, err := newSecureLocal(dir)
			if err != nil {
				return kafkaconn.Conn{}, "", nil, err
			}
			sec, cfg.TLS, cfg.SASL = local.brokerSecurity(), local.tls, local.sasl
		}
		b, err := service.StartBroker(bcfg, sec)
		if err != nil {
			return kafkaconn.Conn{}, "", nil, err
		}
		closeBroker = b.Close
		cfg.Brokers, brokerDir = b.Addrs(), b.Dir()
	} else {
		cfg.Brokers = splitBrokers(f.brokers)
		if f.config != "" {
			file, err := service.LoadConfig(f.config)
			if err != nil {
				return kafkaconn.Conn{}, "", nil, err
			}
			cfg.TLS, cfg.SASL = file.TLS, file.SASL
		}
	}
	conn, err := kafkaconn.Build(cfg.Brokers, cfg.TLS, cfg.SASL, os.Getenv)
	if err == nil {
		err = conn.Check(context.Background())
	}
	if err != nil {
		closeBroker()
		return kafkaconn.Conn{}, "", nil, err
	}
	return conn, brokerDir, closeBroker, nil
}

// configFlag checks that --config comes with the --brokers it secures.
func configFlag(config, brokers string) error {
	if config != "" && brokers == "" {
		return fmt.Errorf("--config %s secures --brokers; without them, --secure secures the embedded broker", config)
	}
	return nil
}

func brokerDirFlag(dir, brokers string, d time.Duration) error {
	switch {
	case dir == "":
		return nil
	case brokers == "" || d == 0:
		return fmt.Errorf("--broker-dir %s needs --brokers and --duration: only a soak samples a broker's disk, and the embedded broker's is sampled anyway", dir)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return fmt.Errorf("--broker-dir %s: not a directory", dir)
	}
	return nil
}

// warmupFlag allows --warmup only in a soak, and short enough to leave a
// minute (or a quarter of the soak) after it to compare.
func warmupFlag(w, d time.Duration) error {
	switch {
	case w < 0:
		return fmt.Errorf("--warmup %v: want a positive duration", w)
	case w > 0 && d == 0:
		return errors.New("--warmup needs --duration: only a soak warms up")
	case w > 0 && w+soakWindow(d) > d:
		return fmt.Errorf("--warmup %v leaves less than the %v window to compare in a soak of %v", w, soakWindow(d), d)
	}
	return nil
}

// windowFlag allows --window only in a soak: elsewhere the engine alone,
// which has no window, checks the service's counts.
func windowFlag(w, d time.Duration, fs *flag.FlagSet) error {
	switch {
	case w <= 0:
		return fmt.Errorf("--window %v: want a positive duration", w)
	case d == 0 && flagGiven(fs, "window"):
		return errors.New("--window needs --duration: only a soak runs with a window")
	}
	return nil
}

// selected returns the mix's query specs named in the comma-separated list
// only, in the mix's order.
func (m serviceMix) selected(mix, only string) ([]string, error) {
	var names []string
	for _, q := range m.queries {
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
	for i, q := range m.queries {
		if want[names[i]] {
			out = append(out, q)
		}
	}
	return out, nil
}

// serviceQueries turns -q specs (NAME=PATTERN or a bare pattern, named qN)
// into the service's query configuration, checking that each parses.
func serviceQueries(specs []string) ([]service.QueryConfig, error) {
	var out []service.QueryConfig
	for i, spec := range specs {
		name, text, _ := splitQuerySpec(spec, i)
		if _, err := query.Parse(name, text); err != nil {
			return nil, fmt.Errorf("-q %q: %w", spec, err)
		}
		out = append(out, service.QueryConfig{Name: name, Pattern: strings.TrimSpace(text)})
	}
	return out, nil
}

// serviceResult is gcsm bench service's summary, its last line of stdout.
type serviceResult struct {
	Mix         string   `json:"mix"`
	Mode        string   `json:"mode"` // backlog: the stream waits in the topic; rate: produced while the service runs
	Broker      string   `json:"broker"`
	Security    string   `json:"security"` // plaintext, or TLS with the SASL mechanism
	Compression string   `json:"compression"`
	Delivery    string   `json:"delivery"`
	Device      string   `json:"device"`
	Updates     int      `json:"updates"`
	Accounts    int      `json:"accounts"`
	Batch       int      `json:"batch"`
	Rate        int      `json:"rate,omitempty"`
	Queries     []string `json:"queries"`
	// Transfers says that the stream's events carried ids and amounts, so
	// that queries bound transfers, not pairs.
	Transfers  bool    `json:"transfers,omitempty"`
	LoadPerSec float64 `json:"load_updates_per_s,omitempty"` // backlog: how fast the producer filled the topic
	ReadPerSec float64 `json:"read_updates_per_s,omitempty"` // backlog: how fast a bare consumer reads it back, the broker's ceiling
	// backlog: how fast a bare client, nothing else running, produces as many records as the service's
	// events (200,000 at least), copies of the alerts it wrote (EventBytes each, key and value, on average), with the
	// service's producer settings: the broker's ceiling for the events/s figure.
	EventCeiling    float64        `json:"produce_events_per_s,omitempty"`
	EventBytes      float64        `json:"event_bytes,omitempty"`
	Batches         int            `json:"batches"`
	Seconds         float64        `json:"seconds"` // first batch's cut to last acknowledgement
	UpdatesPerSec   float64        `json:"updates_per_s"`
	Events          int64          `json:"events"`
	EventsPerSec    float64        `json:"events_per_s"`
	EventsPerUpdate float64        `json:"events_per_update"`
	AlertLatency    latencySummary `json:"alert_latency_ms"` // input record's arrival → alert acknowledged, per event
	BatchLatency    latencySummary `json:"batch_latency_ms"` // batch cut → its output acknowledged, per batch
	Stages          []stageShare   `json:"stages"`
	// OutputSteps split the output stage: build, log, send and acknowledge
	// (service.output_step_seconds), seconds summed over batches.
	OutputSteps []stageShare   `json:"output_steps"`
	LoopIdle    float64        `json:"run_loop_idle_s"` // the run loop's waits, from its first batch on
	Matches     []queryMatches `json:"matches"`
	// Pairs sets each bare pattern of the mix beside its predicated form.
	Pairs  []queryPair   `json:"pairs,omitempty"`
	Engine *engineResult `json:"engine,omitempty"`
	Ratio  float64       `json:"service_over_engine,omitempty"`
	Soak   *soakResult   `json:"soak,omitempty"`
}

// queryPair is a bare pattern's alerts beside its predicated form's, as the
// service found them.
type queryPair struct {
	Bare          string `json:"bare"`
	Where         string `json:"where"`
	BareAppeared  int64  `json:"bare_appeared"`
	WhereAppeared int64  `json:"where_appeared"`
	// Kept is the predicated form's appeared matches over the bare one's:
	// the share of alerts that the predicates leave.
	Kept float64 `json:"kept"`
}

// pair fills r.Pairs from the mix's pairs whose queries both ran.
func (r *serviceResult) pair(pairs [][2]string) {
	find := func(name string) *queryMatches {
		for i := range r.Matches {
			if r.Matches[i].Query == name {
				return &r.Matches[i]
			}
		}
		return nil
	}
	for _, p := range pairs {
		b, w := find(p[0]), find(p[1])
		if b == nil || w == nil {
			continue
		}
		qp := queryPair{Bare: b.Query, Where: w.Query, BareAppeared: b.Appeared, WhereAppeared: w.Appeared}
		if b.Appeared > 0 {
			qp.Kept = float64(w.Appeared) / float64(b.Appeared)
		}
		r.Pairs = append(r.Pairs, qp)
	}
}

type latencySummary struct {
	P50   float64 `json:"p50"`
	P99   float64 `json:"p99"`
	Max   float64 `json:"max"`
	Count int64   `json:"count"`
}

type stageShare struct {
	Stage   string  `json:"stage"`
	Seconds float64 `json:"seconds"`
	Share   float64 `json:"share"`
}

type queryMatches struct {
	Query       string `json:"query"`
	Appeared    int64  `json:"appeared"`
	Disappeared int64  `json:"disappeared"`
	// The batches the query was matched in on each device: under --device
	// auto, where the Placer ran it.
	CPUBatches int64 `json:"cpu_batches"`
	GPUBatches int64 `json:"gpu_batches"`
}

// addBatch counts a batch of the query on device d.
func (m *queryMatches) addBatch(d incremental.Device, n int64) {
	if d == incremental.OnGPU {
		m.GPUBatches += n
	} else {
		m.CPUBatches += n
	}
}

type engineResult struct {
	Seconds       float64        `json:"seconds"` // apply + match + reorganize
	UpdatesPerSec float64        `json:"updates_per_s"`
	MatchesPerSec float64        `json:"matches_per_s"`
	Matches       []queryMatches `json:"matches"`
	// Consistent says that each query's net count (appeared − disappeared)
	// is the service's; totals may differ where batch cuts differ, as a
	// match that appears and goes within one batch is never reported.
	Consistent bool `json:"consistent"`
}

// benchService runs the service over the stream and, unless told not to,
// the engine alone.
func benchService(f *benchServiceFlags, mix string, qcfg []service.QueryConfig, human, stderr io.Writer) (*serviceResult, error) {
	state, err := os.MkdirTemp("", "gcsm-bench-service-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(state)
	res := &serviceResult{Mix: mix, Mode: "backlog", Updates: f.updates, Accounts: f.accounts, Batch: f.batch, Rate: f.rate,
		Security: "plaintext", Compression: f.compression, Delivery: f.delivery, Transfers: f.transfers}
	if f.rate > 0 {
		res.Mode = "rate"
	}
	if f.duration > 0 {
		res.Mode = "soak"
	}
	for _, q := range qcfg {
		res.Queries = append(res.Queries, q.Name+"="+q.Pattern)
	}

	// Topics and group of their own, so that runs against one broker do
	// not read each other's records.
	run := strings.ToLower(rand.Text()[:8])
	cfg := service.DefaultConfig()
	cfg.State.Dir = state
	cfg.HTTP.Listen = ""
	cfg.Input.Topic, cfg.Output.Topic, cfg.Output.DeadLetterTopic = "bench-"+run+"-edges", "bench-"+run+"-matches", "bench-"+run+"-dlq"
	cfg.Input.Group = "bench-" + run
	cfg.Input.SessionTimeout = 6 * time.Second
	cfg.Batch = service.BatchConfig{Size: f.batch, Linger: 10 * time.Millisecond}
	cfg.Graph = service.GraphConfig{Directed: true, DefaultEdgeLabel: "TRANSFER", DefaultVertexLabel: "Account"}
	cfg.Engine.Workers = f.workers
	cfg.Queries = qcfg
	if f.duration > 0 {
		cfg.Window.Size = f.window
	}
	cfg.Output.Compression = f.compression
	cfg.Output.Delivery = f.delivery

	conn, brokerDir, closeBroker, err := benchBroker(f, &cfg, state)
	if err != nil {
		return nil, err
	}
	defer closeBroker()
	res.Broker = "in-process"
	if f.brokers != "" {
		res.Broker = f.brokers
	}
	if conn.TLS != nil {
		res.Security = "TLS"
		if conn.SASL != nil {
			res.Security += "+" + conn.SASL.Name()
		}
	} else if conn.SASL != nil {
		res.Security = conn.SASL.Name()
	}
	cl, err := conn.NewClient(kgo.DefaultProduceTopic(cfg.Input.Topic),
		kgo.ProducerLinger(time.Millisecond), kgo.MaxBufferedRecords(1<<20))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := createTopics(ctx, cl, f.partitions, cfg.Input.Topic, cfg.Output.Topic, cfg.Output.DeadLetterTopic); err != nil {
		return nil, err
	}
	if f.brokers != "" {
		defer dropRunTopics(cl, "bench-"+run+"-", human)
	}

	var devLine strings.Builder
	eng, err := f.dev.open(&devLine, f.workers)
	if err != nil {
		return nil, err
	}
	defer eng.close()
	res.Device = strings.TrimSpace(strings.TrimPrefix(devLine.String(), "device: "))
	size := fmt.Sprintf("%d updates", f.updates)
	if f.duration > 0 {
		size = fmt.Sprintf("%d updates/s for %v", f.rate, f.duration)
	}
	fmt.Fprintf(human, "gcsm bench service: %s, %s among %d accounts, batches of %d, broker %s (%s), device %s, compression %s, %s\n",
		res.Mix, size, f.accounts, f.batch, res.Broker, res.Security, res.Device, f.compression, f.delivery)

	arr := newArrivals(f.partitions, f.rate, f.duration > 0)
	sink, err := output.NewKafka(output.KafkaConfig{Conn: conn, Topic: cfg.Output.Topic,
		DeadTopic: cfg.Output.DeadLetterTopic, Compression: cfg.Output.Compression})
	if err != nil {
		return nil, err
	}
	ts := &timedSink{Sink: sink, arr: arr}
	var out output.Sink = ts
	if sender, ok := sink.(output.Sender); ok {
		out = timedSender{ts, sender}
	}
	ob := &batchLog{}
	reg := prometheus.NewRegistry()
	log, err := newLogger(stderr, service.LogConfig{Level: "warn", Format: "console"})
	if err != nil {
		return nil, err
	}
	s, err := service.New(service.Options{Config: cfg, Matcher: eng.matcher, Alloc: eng.alloc, Log: log, Registry: reg, Sink: out, OnBatch: ob.add})
	if err != nil {
		sink.Close()
		return nil, err
	}
	p := &streamProducer{cl: cl, arr: arr, transfers: f.transfers}
	var stream []bench.TransferEvent
	if f.duration == 0 {
		stream = bench.TransfersHead(f.accounts, f.updates, f.seed, f.head)
	}
	if f.rate == 0 {
		t0 := time.Now()
		if err := p.produce(ctx, stream, 0); err != nil {
			return nil, err
		}
		res.LoadPerSec = float64(len(stream)) / time.Since(t0).Seconds()
		fmt.Fprintf(human, "loaded the stream into %s in %.2fs (%.0f updates/s)\n", cfg.Input.Topic, time.Since(t0).Seconds(), res.LoadPerSec)
		if res.ReadPerSec, err = readAll(ctx, conn, cfg.Input.Topic, int64(len(stream))); err != nil {
			return nil, err
		}
		fmt.Fprintf(human, "a bare consumer reads it back at %.0f updates/s\n", res.ReadPerSec)
	}
	ran := make(chan error, 1)
	// The label lets --cpuprofile's readers keep to the service's goroutines
	// (pprof -tagfocus phase=service); the ones they start inherit it.
	go pprof.Do(ctx, pprof.Labels("phase", "service"), func(ctx context.Context) { ran <- s.Run(ctx) })
	produced := make(chan error, 1)
	var soak *soaker
	switch {
	case f.duration > 0:
		soak = &soaker{s: s, p: p, brokerDir: brokerDir}
		go func() { produced <- p.soak(ctx, f.accounts, f.seed, f.head, f.rate, f.duration) }()
		go soak.run(ctx)
	case f.rate > 0:
		go func() { produced <- p.produce(ctx, stream, f.rate) }()
	default:
		produced <- nil
	}
	// Done when the producer has finished and the service has applied
	// every record it wrote.
	prodDone := false
	for {
		select {
		case err := <-ran:
			return nil, fmt.Errorf("the service stopped: %v", err)
		case err := <-produced:
			if err != nil {
				return nil, err
			}
			prodDone = true
		case <-time.After(20 * time.Millisecond):
		}
		if prodDone && applied(s.Progress()) >= p.count() {
			break
		}
	}
	if soak != nil {
		soak.stop()
	}
	cancel()
	if err := <-ran; err != nil && !errors.Is(err, context.Canceled) {
		return nil, err
	}
	if f.duration > 0 {
		res.Updates = int(p.count())
	}

	ob.summarize(res)
	ts.summarize(res)
	if err := gatherService(reg, res); err != nil {
		return nil, err
	}
	if soak != nil {
		res.Soak = soak.result(f.duration, f.warmup)
	}
	if res.Mode == "backlog" && res.Events > 0 {
		c := eventCeiling{conn: conn, from: cfg.Output.Topic, to: "bench-" + run + "-ceiling",
			partitions: f.partitions, compression: f.compression, have: res.Events, n: max(res.Events, minCeilingRecords)}
		// The service's context is done by now.
		cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Minute)
		res.EventCeiling, res.EventBytes, err = c.measure(cctx)
		ccancel()
		if err != nil {
			return nil, fmt.Errorf("events' ceiling: %w", err)
		}
	}
	eng.warnFallback(stderr)
	// The engine alone opens its own executor; this one goes first so the
	// two never hold the GPU at once.
	eng.close()
	eng.gpu, eng.multi = nil, nil
	if f.engine && f.duration == 0 {
		var e *engineResult
		pprof.Do(context.Background(), pprof.Labels("phase", "engine"), func(context.Context) { e, err = engineAlone(f, stream, qcfg) })
		if err != nil {
			return nil, fmt.Errorf("engine alone: %w", err)
		}
		e.Consistent = slices.EqualFunc(e.Matches, res.Matches, func(a, b queryMatches) bool {
			return a.Query == b.Query && a.Appeared-a.Disappeared == b.Appeared-b.Disappeared
		})
		res.Engine = e
		if e.UpdatesPerSec > 0 {
			res.Ratio = res.UpdatesPerSec / e.UpdatesPerSec
		}
	}
	return res, nil
}

// readAll reads the n records of topic from the start, with nothing
// done to them, and returns the records per second: what the broker and
// the client can do at most, which the service's rate is to be seen
// against.
func readAll(ctx context.Context, conn kafkaconn.Conn, topic string, n int64) (float64, error) {
	cl, err := conn.NewClient(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	t0 := time.Now()
	var got int64
	for got < n {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			return 0, fmt.Errorf("read %s back: %w", topic, err)
		}
		got += int64(fs.NumRecords())
	}
	return float64(n) / time.Since(t0).Seconds(), nil
}

// eventCeiling measures what the broker takes of the service's output
// with nothing else running: n records, copies of the first alerts in the
// output topic (from), produced to a topic of their own (to) by a bare
// client with the service's producer settings (acks from all in-sync
// replicas, idempotent, the same compression, batch bytes and
// partitioner), as fast as it can.
type eventCeiling struct {
	conn        kafkaconn.Conn
	from, to    string
	partitions  int
	compression string
	have        int64 // records in from
	n           int64 // records to produce
}

// minCeilingRecords is the fewest records the events' ceiling produces: a
// sparse mix's few hundred alerts would time little but a round trip.
const minCeilingRecords = 200_000

// ceilingSample is how many alerts are read back to be copied: enough to
// give their sizes and keys' spread, few enough to hold in memory.
const ceilingSample = 1 << 16

// measure returns records per second and the records' mean size, key and
// value, in bytes.
func (c *eventCeiling) measure(ctx context.Context) (float64, float64, error) {
	sample, size, err := sampleAlerts(ctx, c.conn, c.from, c.have)
	if err != nil {
		return 0, 0, err
	}
	pr, err := newCopier(ctx, c.conn, c.to, c.partitions, c.compression)
	if err != nil {
		return 0, 0, err
	}
	defer pr.Close()
	t0 := time.Now()
	if err := produceCopies(ctx, pr, sample, 0, c.n); err != nil {
		return 0, 0, err
	}
	return float64(c.n) / time.Since(t0).Seconds(), size, nil
}

// sampleAlerts reads the first of topic's have alerts, up to
// ceilingSample, and returns them with their mean size, key and value, in
// bytes.
func sampleAlerts(ctx context.Context, conn kafkaconn.Conn, topic string, have int64) ([]*kgo.Record, float64, error) {
	cl, err := conn.NewClient(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return nil, 0, err
	}
	defer cl.Close()
	var sample []*kgo.Record
	for int64(len(sample)) < min(have, ceilingSample) {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			return nil, 0, fmt.Errorf("read %s back: %w", topic, err)
		}
		fs.EachRecord(func(r *kgo.Record) { sample = append(sample, r) })
	}
	var size int64
	for _, r := range sample {
		size += int64(len(r.Key) + len(r.Value))
	}
	return sample, float64(size) / float64(max(1, len(sample))), nil
}

// newCopier is a bare client that produces to topic, which it creates,
// with the service's producer settings (acks from all in-sync replicas,
// idempotent, the same compression, batch bytes and partitioner).
func newCopier(ctx context.Context, conn kafkaconn.Conn, topic string, partitions int, compression string) (*kgo.Client, error) {
	opts, err := output.FranzOptions(output.KafkaConfig{Conn: conn, Topic: topic, Compression: compression})
	if err != nil {
		return nil, err
	}
	// The sink buffers one Write's records; this client, all of them but
	// for this bound.
	pr, err := kgo.NewClient(append(opts, kgo.DefaultProduceTopic(topic), kgo.MaxBufferedRecords(1<<20))...)
	if err != nil {
		return nil, err
	}
	if err := createTopics(ctx, pr, partitions, topic); err != nil {
		pr.Close()
		return nil, err
	}
	return pr, nil
}

// produceCopies produces n copies of sample's records through pr, from
// the one at first on, as fast as the broker takes them, and returns once
// all are acknowledged.
func produceCopies(ctx context.Context, pr *kgo.Client, sample []*kgo.Record, first, n int64) error {
	var (
		mu     sync.Mutex
		failed error
	)
	done := func(_ *kgo.Record, err error) {
		if err != nil {
			mu.Lock()
			failed = cmp.Or(failed, err)
			mu.Unlock()
		}
	}
	for i := range n {
		r := sample[(first+i)%int64(len(sample))]
		pr.Produce(ctx, &kgo.Record{Key: r.Key, Value: r.Value}, done)
	}
	if err := pr.Flush(ctx); err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	if failed != nil {
		return fmt.Errorf("produce copies of alerts: %w", failed)
	}
	return nil
}

// applied is the number of input records the service has applied, all
// partitions together; the bench's topics start at offset 0.
func applied(p service.Progress) int64 {
	var n int64
	for _, o := range p.Position {
		n += o
	}
	return n
}

// createTopics creates the run's topics, so that neither the producer nor
// the service depends on the broker creating them on first use.
func createTopics(ctx context.Context, cl *kgo.Client, partitions int, names ...string) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 10000
	for _, n := range names {
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic, t.NumPartitions, t.ReplicationFactor = n, int32(partitions), 1
		req.Topics = append(req.Topics, t)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("cannot create the bench topics: %w", err)
	}
	for _, t := range resp.Topics {
		// A topic that exists is fine: the in-process broker seeds them.
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return fmt.Errorf("cannot create topic %s: %w", t.Topic, err)
		}
	}
	return nil
}

// dropRunTopics deletes the run's topics, those whose names start with
// prefix, from brokers the bench did not start: every run makes topics of
// its own, and a series of runs against one gcsm broker filled its disk
// with topics nobody reads again. A failure is reported, not returned: the
// run's figures stand.
func dropRunTopics(cl *kgo.Client, prefix string, w io.Writer) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	meta, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		fmt.Fprintf(w, "warning: cannot list the run's topics to delete them: %v\n", err)
		return
	}
	req := kmsg.NewPtrDeleteTopicsRequest()
	req.TimeoutMillis = 10000
	for _, t := range meta.Topics {
		if t.Topic == nil || !strings.HasPrefix(*t.Topic, prefix) {
			continue
		}
		rt := kmsg.NewDeleteTopicsRequestTopic()
		rt.Topic = t.Topic
		req.Topics = append(req.Topics, rt)
		req.TopicNames = append(req.TopicNames, *t.Topic)
	}
	if len(req.TopicNames) == 0 {
		return
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		fmt.Fprintf(w, "warning: cannot delete the run's topics: %v\n", err)
		return
	}
	for i, t := range resp.Topics {
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil && !errors.Is(err, kerr.UnknownTopicOrPartition) {
			name := fmt.Sprint("#", i)
			if t.Topic != nil {
				name = *t.Topic
			}
			fmt.Fprintf(w, "warning: cannot delete topic %s: %v\n", name, err)
		}
	}
}

// arrivals holds each input record's timestamp, the time it was handed to
// the producer (which also stamps it for the broker), by partition and
// offset: at most a linger and a round trip before its arrival in the
// topic, so latencies from it are upper bounds. A soak keeps the last
// few minutes in a ring of fixed size, so the bench's own memory stays
// flat while it measures the service's.
type arrivals struct {
	mu   sync.Mutex
	ring bool      // slots are reused: offset modulo their number
	offs [][]int64 // per partition, per slot: the offset held, -1 for none
	at   [][]int64 // per partition, per slot: Unix nanoseconds
}

func newArrivals(partitions, rate int, soak bool) *arrivals {
	a := &arrivals{offs: make([][]int64, partitions), at: make([][]int64, partitions)}
	if !soak {
		// Grown as records come: keyed records spread unevenly.
		return a
	}
	n := min(max(rate*180/partitions, 1<<16), 1<<24)
	a.ring = true
	for p := range partitions {
		a.offs[p], a.at[p] = make([]int64, n), make([]int64, n)
		for i := range a.offs[p] {
			a.offs[p][i] = -1
		}
	}
	return a
}

func (a *arrivals) set(p int32, off int64, t time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if int(p) >= len(a.offs) || off < 0 {
		return
	}
	if !a.ring {
		for int64(len(a.offs[p])) <= off {
			a.offs[p], a.at[p] = append(a.offs[p], -1), append(a.at[p], 0)
		}
	}
	i := off % int64(len(a.offs[p]))
	a.offs[p][i], a.at[p][i] = off, t.UnixNano()
}

// get returns the arrival of a record, or false if it is not (or no
// longer) known.
func (a *arrivals) get(p int, off int64) (int64, bool) {
	if p >= len(a.offs) || off < 0 || len(a.offs[p]) == 0 {
		return 0, false
	}
	i := off % int64(len(a.offs[p]))
	if a.offs[p][i] != off {
		return 0, false
	}
	return a.at[p][i], true
}

// streamProducer writes the stream to the input topic and notes each record's
// arrival.
type streamProducer struct {
	cl        *kgo.Client
	arr       *arrivals
	transfers bool // events carry their ids and amounts

	mu    sync.Mutex
	acked int64
	err   error
}

func (p *streamProducer) count() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.acked
}

func (p *streamProducer) done(r *kgo.Record, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		if p.err == nil {
			p.err = fmt.Errorf("produce to %s: %w", r.Topic, err)
		}
		return
	}
	p.acked++
	p.arr.set(r.Partition, r.Offset, r.Timestamp)
}

// produce writes evs, at rate records per second or, with rate 0, as fast
// as the broker takes them, and waits for every acknowledgement.
func (p *streamProducer) produce(ctx context.Context, evs []bench.TransferEvent, rate int) error {
	// Chunks of a hundredth of a second at the rate keep the pace smooth.
	chunk := 4096
	if rate > 0 {
		chunk = max(1, rate/100)
	}
	start := time.Now()
	var buf []byte
	for lo := 0; lo < len(evs); lo += chunk {
		if rate > 0 {
			time.Sleep(time.Until(start.Add(time.Duration(float64(lo) / float64(rate) * float64(time.Second)))))
		}
		for _, ev := range evs[lo:min(lo+chunk, len(evs))] {
			buf = ingest.AppendEvent(buf[:0], transferRecord(ev, p.transfers))
			// Keyed by the sender, so a reversal lands on its transfer's
			// partition after it, whatever --partitions is.
			p.cl.Produce(ctx, &kgo.Record{Key: []byte(ev.Src), Value: slices.Clone(buf)}, p.done)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	if err := p.cl.Flush(ctx); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// transferRecord is ev as an input record: with its id and amount when
// transfers is set, else the bare pair, as the stream was before transfers
// had ids.
func transferRecord(ev bench.TransferEvent, transfers bool) ingest.Record {
	if transfers {
		return ev.Record()
	}
	return ingest.Record{Op: ev.Op, Src: ev.Src, Dst: ev.Dst, Label: ev.Label, SrcLabel: ev.SrcLabel, DstLabel: ev.DstLabel, Time: ev.Time}
}

// soak produces at rate for d: transfers among the same accounts, a
// generated chunk at a time with event times running on, so that the graph
// fills up to the accounts' reach and then stays near that size.
func (p *streamProducer) soak(ctx context.Context, accounts int, seed uint64, head float64, rate int, d time.Duration) error {
	const chunk = 100_000
	end := time.Now().Add(d)
	var shift int64
	for k := uint64(0); time.Now().Before(end); k++ {
		evs := bench.TransfersHead(accounts, chunk, seed+k, head)
		for i := range evs {
			evs[i].Time += shift
			// Every chunk numbers its transfers from tx-0.
			evs[i].ID = strconv.FormatUint(k, 10) + "/" + evs[i].ID
		}
		shift = evs[len(evs)-1].Time + 1 - evs[0].Time + shift
		// Whole seconds of the chunk, so that the run ends near d.
		n := min(len(evs), int(max(time.Until(end), time.Second).Seconds()*float64(rate)))
		if err := p.produce(ctx, evs[:n], rate); err != nil {
			return err
		}
	}
	return nil
}

// timedSink is the service's output, noting when each write is
// acknowledged: an alert's latency runs from its source's last input record
// (Source.ToOffset, the newest record of the batch that caused it) entering
// the producer, which stamps the record with that time, to then.
type timedSink struct {
	output.Sink
	arr    *arrivals
	noting sync.WaitGroup // timedSender's goroutines, noting acknowledgements

	mu      sync.Mutex
	events  int64
	lat     []weighted // per write and source record: latency, events
	pending []pending  // alerts whose source's produce callback had not yet run
}

type weighted struct {
	d time.Duration
	n int64
}

// pending is n alerts acknowledged at ack (Unix nanoseconds) whose source
// record's timestamp is not known yet: the service read the record before
// the producer's callback, which notes it, ran.
type pending struct {
	p       int
	off, at int64
	n       int64
}

func (t *timedSink) Write(ctx context.Context, evs []output.Event) error {
	var err error
	counts := countedDuring(evs, func() { err = t.Sink.Write(ctx, evs) })
	if err != nil {
		return err
	}
	t.acked(counts, len(evs))
	return nil
}

// timedSender is a timedSink whose sink is an output.Sender, which it
// stays: the service pipelines its delivery only through a Sender.
type timedSender struct {
	*timedSink
	sender output.Sender
}

// Transactional opens the wrapped sink's transactions, for exactly-once
// delivery, which writes through them and not through Send: an alert's
// latency then runs to the commit of its transaction, when a
// read_committed consumer can first read it.
func (t timedSender) Transactional(ctx context.Context, id string) (*output.Txn, error) {
	tr, ok := t.sender.(output.Transactor)
	if !ok {
		return nil, fmt.Errorf("bench service: the sink has no transactions")
	}
	tx, err := tr.Transactional(ctx, id)
	if err != nil {
		return nil, err
	}
	tx.Watch = func(evs []output.Event) func(bool) {
		// Counted beside the send, as countedDuring does; the events stay
		// the service's until their transaction has ended.
		var counts map[[2]int64]int64
		var counted sync.WaitGroup
		counted.Go(func() { counts = sourceCounts(evs) })
		n := len(evs)
		return func(committed bool) {
			counted.Wait()
			if committed {
				t.acked(counts, n)
			}
		}
	}
	return tx, nil
}

// Send notes the alerts' acknowledgement when the sender's Pending is done,
// on a goroutine of its own, so as not to hold up the next Send.
func (t timedSender) Send(ctx context.Context, letters []output.DeadLetter, evs []output.Event) output.Pending {
	var p output.Pending
	counts := countedDuring(evs, func() { p = t.sender.Send(ctx, letters, evs) })
	t.noting.Go(func() {
		<-p.Done()
		if p.Err() == nil {
			t.acked(counts, len(evs))
		}
	})
	return p
}

// countedDuring counts evs by source (sourceCounts) on a goroutine of its
// own while deliver runs. Delivery is the service's one serial step: counted
// before it, on alert-heavy, the sources took 0.23 of its 2.2 s (the H200
// machine), a cost of the benchmark's own. The events are the caller's only
// until Write or Send returns (output.Sink), hence the wait.
func countedDuring(evs []output.Event, deliver func()) map[[2]int64]int64 {
	var counts map[[2]int64]int64
	var counted sync.WaitGroup
	counted.Go(func() { counts = sourceCounts(evs) })
	deliver()
	counted.Wait()
	return counts
}

// sourceCounts counts events by their source's newest input record.
func sourceCounts(evs []output.Event) map[[2]int64]int64 {
	counts := map[[2]int64]int64{}
	for _, ev := range evs {
		if ev.Source != nil {
			counts[[2]int64{int64(ev.Source.Partition), ev.Source.ToOffset}]++
		}
	}
	return counts
}

// acked notes n alerts, from the sources counted, acknowledged now.
func (t *timedSink) acked(counts map[[2]int64]int64, n int) {
	now := time.Now().UnixNano()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.events += int64(n)
	for k, n := range counts {
		t.pending = append(t.pending, pending{int(k[0]), k[1], now, n})
	}
	t.resolve()
}

// resolve turns the pending alerts whose source is now known into
// latencies.
func (t *timedSink) resolve() {
	t.arr.mu.Lock()
	defer t.arr.mu.Unlock()
	left := t.pending[:0]
	for _, p := range t.pending {
		if at, ok := t.arr.get(p.p, p.off); ok {
			t.lat = append(t.lat, weighted{time.Duration(p.at - at), p.n})
		} else {
			left = append(left, p)
		}
	}
	t.pending = left
}

func (t *timedSink) summarize(res *serviceResult) {
	t.noting.Wait()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.resolve()
	res.Events = t.events
	res.AlertLatency = percentiles(t.lat)
	if res.Seconds > 0 {
		res.EventsPerSec = float64(t.events) / res.Seconds
	}
	if res.Updates > 0 {
		res.EventsPerUpdate = float64(t.events) / float64(res.Updates)
	}
}

// percentiles returns p50, p99 and the maximum of weighted samples, in ms.
func percentiles(ws []weighted) latencySummary {
	slices.SortFunc(ws, func(a, b weighted) int { return int(a.d - b.d) })
	var total int64
	for _, w := range ws {
		total += w.n
	}
	var s latencySummary
	if total == 0 {
		return s
	}
	at := func(q float64) float64 {
		rank := int64(math.Ceil(q * float64(total)))
		var seen int64
		for _, w := range ws {
			if seen += w.n; seen >= rank {
				return ms(w.d)
			}
		}
		return ms(ws[len(ws)-1].d)
	}
	s.P50, s.P99, s.Max, s.Count = at(0.5), at(0.99), ms(ws[len(ws)-1].d), total
	return s
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// batchLog collects what the service's OnBatch hook says.
type batchLog struct {
	mu          sync.Mutex
	first, last time.Time
	messages    int
	lat         []weighted
}

func (b *batchLog) add(bi service.BatchInfo) {
	now := time.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.first.IsZero() {
		b.first = now.Add(-bi.Latency)
	}
	b.last = now
	b.messages += bi.Messages
	b.lat = append(b.lat, weighted{bi.Latency, 1})
}

func (b *batchLog) summarize(res *serviceResult) {
	b.mu.Lock()
	defer b.mu.Unlock()
	res.Batches = len(b.lat)
	res.BatchLatency = percentiles(b.lat)
	res.Seconds = b.last.Sub(b.first).Seconds()
	if res.Seconds > 0 {
		res.UpdatesPerSec = float64(b.messages) / res.Seconds
	}
}

// gatherService reads the stage times and the match counts from the
// service's metrics.
func gatherService(reg *prometheus.Registry, res *serviceResult) error {
	mfs, err := reg.Gather()
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	stages := map[string]float64{}
	var order []string
	byQuery := map[string]*queryMatches{}
	for _, mf := range mfs {
		switch mf.GetName() {
		case "gcsm_batch_seconds":
			for _, m := range mf.GetMetric() {
				st := labelOf(m.GetLabel(), "stage")
				if _, ok := stages[st]; !ok {
					order = append(order, st)
				}
				stages[st] += m.GetHistogram().GetSampleSum()
			}
		case "gcsm_output_step_seconds":
			for _, m := range mf.GetMetric() {
				res.OutputSteps = append(res.OutputSteps, stageShare{Stage: labelOf(m.GetLabel(), "step"), Seconds: m.GetHistogram().GetSampleSum()})
			}
		case "gcsm_run_loop_idle_seconds_total":
			for _, m := range mf.GetMetric() {
				res.LoopIdle += m.GetCounter().GetValue()
			}
		case "gcsm_matches_total":
			for _, m := range mf.GetMetric() {
				q := labelOf(m.GetLabel(), "query")
				if byQuery[q] == nil {
					byQuery[q] = &queryMatches{Query: q}
				}
				if labelOf(m.GetLabel(), "change") == output.Appeared {
					byQuery[q].Appeared += int64(m.GetCounter().GetValue())
				} else {
					byQuery[q].Disappeared += int64(m.GetCounter().GetValue())
				}
			}
		case "gcsm_query_batches_total":
			for _, m := range mf.GetMetric() {
				q := labelOf(m.GetLabel(), "query")
				if byQuery[q] == nil {
					byQuery[q] = &queryMatches{Query: q}
				}
				d := incremental.OnCPU
				if labelOf(m.GetLabel(), "device") == incremental.OnGPU.String() {
					d = incremental.OnGPU
				}
				byQuery[q].addBatch(d, int64(m.GetCounter().GetValue()))
			}
		}
	}
	var total float64
	for _, v := range stages {
		total += v
	}
	// Pipeline order, then any stage this list does not know.
	slices.SortStableFunc(order, func(a, b string) int { return stageRank(a) - stageRank(b) })
	for _, st := range order {
		sh := stageShare{Stage: st, Seconds: stages[st]}
		if total > 0 {
			sh.Share = stages[st] / total
		}
		res.Stages = append(res.Stages, sh)
	}
	steps := []string{"build", "log", "send", "acknowledge", "transaction"}
	slices.SortFunc(res.OutputSteps, func(a, b stageShare) int {
		return slices.Index(steps, a.Stage) - slices.Index(steps, b.Stage)
	})
	for _, q := range res.Queries {
		name, _, _ := strings.Cut(q, "=")
		m := queryMatches{Query: name}
		if byQuery[name] != nil {
			m = *byQuery[name]
		}
		res.Matches = append(res.Matches, m)
	}
	return nil
}

var stageOrder = []string{"decode", "apply", "estimate", "upload", "match", "reorganize", "output", "commit"}

func stageRank(s string) int {
	if i := slices.Index(stageOrder, s); i >= 0 {
		return i
	}
	return len(stageOrder)
}

func labelOf[L interface {
	GetName() string
	GetValue() string
}](ls []L, name string) string {
	for _, l := range ls {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// engineAlone runs the stream through the engine's core as replay does:
// the updates resolved up front, then one step per batch (apply, match
// enumerating, as the service must to build its events, and reorganize),
// overlapped where the matcher can, as the service's are, and timed.
func engineAlone(f *benchServiceFlags, evs []bench.TransferEvent, qcfg []service.QueryConfig) (*engineResult, error) {
	eng, err := f.dev.open(io.Discard, f.workers)
	if err != nil {
		return nil, err
	}
	defer eng.close()
	s, err := newSession(true, false, eng.alloc)
	if err != nil {
		return nil, err
	}
	defer s.g.Close()
	// The service's graph: unlabelled vertices are Accounts, edges
	// TRANSFERs; every event here names its labels.
	s.resolver.DefaultEdgeLabel = "TRANSFER"
	specs := make([]string, len(qcfg))
	for i, q := range qcfg {
		specs[i] = q.Name + "=" + q.Pattern
	}
	qs, err := loadQueries(specs, s.labels, true, "", query.Instances, false)
	if err != nil {
		return nil, err
	}
	// As the service does, keep transfers when the events have ids (from
	// the first batch on) or a query reads them, and then bind them in
	// every query.
	if f.transfers {
		s.keepTransfers()
	}
	s.keepTransfersFor(qs)
	st, err := s.transferStream("bench", evs, func(ev bench.TransferEvent) ingest.Record { return transferRecord(ev, f.transfers) })
	if err != nil {
		return nil, err
	}
	s.core.SetMatcher(eng.matcher)
	counts := make([]incremental.Counts, len(qs))
	ran := make([]queryMatches, len(qs))
	b := engine.Batch{Queries: qs, Mode: incremental.Enumerate,
		Sink:  func(int, int, graph.Sign, []graph.VertexID) {},
		Bound: func(int, int, graph.Sign, []graph.VertexID, []bundle.Tx) {}}
	// A step is counted once finished: within the next step where its
	// match overlapped, as the service's are.
	add := func(step *engine.Step) error {
		if step == nil {
			return nil
		}
		if err := step.Err(); err != nil {
			return err
		}
		for i, c := range step.Counts() {
			counts[i].Positive += c.Positive
			counts[i].Negative += c.Negative
			if step.Matched {
				ran[i].addBatch(step.Devices[i], 1)
			}
		}
		return nil
	}
	var last *engine.Step
	t0 := time.Now()
	for lo := 0; lo < len(st.updates); lo += f.batch {
		hi := min(lo+f.batch, len(st.updates))
		step, err := s.step(st, lo, hi, b)
		if err != nil {
			return nil, err
		}
		if err := add(last); err != nil {
			return nil, err
		}
		last = step
	}
	s.core.Finish()
	if err := add(last); err != nil {
		return nil, err
	}
	spent := time.Since(t0)
	r := &engineResult{Seconds: spent.Seconds()}
	var total int64
	for i, q := range qs {
		r.Matches = append(r.Matches, queryMatches{Query: q.Name, Appeared: int64(counts[i].Positive), Disappeared: int64(counts[i].Negative),
			CPUBatches: ran[i].CPUBatches, GPUBatches: ran[i].GPUBatches})
		total += int64(counts[i].Positive + counts[i].Negative)
	}
	if r.Seconds > 0 {
		r.UpdatesPerSec = float64(len(st.updates)) / r.Seconds
		r.MatchesPerSec = float64(total) / r.Seconds
	}
	return r, nil
}

// report writes the human table.
func (r *serviceResult) report(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "service (%s)\t%d updates in %d batches, %.2fs from the first cut to the last ack\t\n", r.Mode, r.Updates, r.Batches, r.Seconds)
	fmt.Fprintf(tw, "  updates/s\t%.0f\t\n", r.UpdatesPerSec)
	if r.ReadPerSec > 0 {
		fmt.Fprintf(tw, "  broker ceiling\tproduce %.0f, read %.0f updates/s (a bare client, nothing else running)\t\n", r.LoadPerSec, r.ReadPerSec)
	}
	fmt.Fprintf(tw, "  events/s\t%.0f (%d events, %.4f per update)\t\n", r.EventsPerSec, r.Events, r.EventsPerUpdate)
	if r.EventCeiling > 0 {
		fmt.Fprintf(tw, "  event ceiling\tproduce %.0f events/s of %.0f bytes (a bare client copying the alerts, nothing else running); the service at %.2f of it\t\n",
			r.EventCeiling, r.EventBytes, r.EventsPerSec/r.EventCeiling)
	}
	fmt.Fprintf(tw, "  alert latency ms\tp50 %.1f  p99 %.1f  max %.1f over %d alerts (input record produced to alert acknowledged)\t\n", r.AlertLatency.P50, r.AlertLatency.P99, r.AlertLatency.Max, r.AlertLatency.Count)
	fmt.Fprintf(tw, "  batch latency ms\tp50 %.1f  p99 %.1f  max %.1f (cut to acknowledged output)\t\n", r.BatchLatency.P50, r.BatchLatency.P99, r.BatchLatency.Max)
	var stages []string
	for _, s := range r.Stages {
		if s.Seconds > 0 {
			stages = append(stages, fmt.Sprintf("%s %.0f%%", s.Stage, 100*s.Share))
		}
	}
	fmt.Fprintf(tw, "  stages\t%s\t\n", strings.Join(stages, ", "))
	var steps []string
	for _, s := range r.OutputSteps {
		steps = append(steps, fmt.Sprintf("%s %.2fs", s.Stage, s.Seconds))
	}
	fmt.Fprintf(tw, "  output steps\t%s (summed over batches; they overlap)\t\n", strings.Join(steps, ", "))
	if r.Seconds > 0 {
		fmt.Fprintf(tw, "  run loop idle\t%.2fs, %.0f%% of the run (under a backlog: waiting for the decoding stage)\t\n", r.LoopIdle, 100*r.LoopIdle/r.Seconds)
	}
	if r.Engine != nil {
		fmt.Fprintf(tw, "engine alone\t%.2fs, %.0f updates/s, %.0f matches/s\t\n", r.Engine.Seconds, r.Engine.UpdatesPerSec, r.Engine.MatchesPerSec)
		fmt.Fprintf(tw, "service / engine\t%.2f\t\n", r.Ratio)
	}
	tw.Flush()
	if r.Mode == "backlog" {
		fmt.Fprintln(w, "  (the stream waited in the topic, so the alert latency includes that wait; --rate measures it at a set load)")
	}
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "query\tappeared\tdisappeared\tbatches cpu/gpu\tengine appeared\tengine disappeared\tengine batches cpu/gpu\t")
	for i, m := range r.Matches {
		line := fmt.Sprintf("%s\t%d\t%d\t%d/%d\t", m.Query, m.Appeared, m.Disappeared, m.CPUBatches, m.GPUBatches)
		if r.Engine != nil && i < len(r.Engine.Matches) {
			e := r.Engine.Matches[i]
			line += fmt.Sprintf("%d\t%d\t%d/%d\t", e.Appeared, e.Disappeared, e.CPUBatches, e.GPUBatches)
		} else {
			line += "-\t-\t-\t"
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
	if len(r.Pairs) > 0 {
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "bare\tappeared\tpredicated\tappeared\tkept\t")
		for _, p := range r.Pairs {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%.4f\t\n", p.Bare, p.BareAppeared, p.Where, p.WhereAppeared, p.Kept)
		}
		tw.Flush()
	}
	if r.Soak != nil {
		r.Soak.report(w)
	}
}

// soaker samples the process and the service once a second during a
// soak.
type soaker struct {
	s         *service.Service
	p         *streamProducer
	brokerDir string // "": not sampled (external brokers without --broker-dir)

	mu      sync.Mutex
	start   time.Time
	samples []soakSample
	quit    chan struct{}
	once    sync.Once
}

type soakSample struct {
	T         float64 `json:"t"` // seconds since the start
	RSS       int64   `json:"rss_bytes"`
	Heap      int64   `json:"heap_bytes"`
	Lag       int64   `json:"lag"`
	DiskBytes int64   `json:"broker_disk_bytes,omitempty"`
}

type soakResult struct {
	Warmup  float64        `json:"warmup_s"`
	Window  float64        `json:"window_s"`
	First   soakSample     `json:"first"` // means over the first window after the warm-up
	Last    soakSample     `json:"last"`  // means over the last window
	Drift   map[string]any `json:"drift"` // last/first − 1, per figure
	Samples []soakSample   `json:"samples"`
	// DiskSampled says whether the broker's disk was sampled: not for
	// external brokers without --broker-dir, whose disk figures are 0.
	DiskSampled bool `json:"broker_disk_sampled"`
}

func (k *soaker) run(ctx context.Context) {
	k.mu.Lock()
	k.start, k.quit = time.Now(), make(chan struct{})
	k.mu.Unlock()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-k.quit:
			return
		case <-tick.C:
		}
		smp := soakSample{T: time.Since(k.start).Seconds(), RSS: rss(), Heap: heapBytes(), Lag: max(0, k.p.count()-applied(k.s.Progress()))}
		if k.brokerDir != "" {
			smp.DiskBytes = dirBytes(k.brokerDir)
		}
		k.mu.Lock()
		k.samples = append(k.samples, smp)
		k.mu.Unlock()
	}
}

func (k *soaker) stop() {
	k.once.Do(func() {
		k.mu.Lock()
		defer k.mu.Unlock()
		if k.quit != nil {
			close(k.quit)
		}
	})
}

// soakWindow is how long the windows are whose means a soak compares: a
// minute on a run of four minutes or more, a quarter of a shorter one.
func soakWindow(d time.Duration) time.Duration { return min(time.Minute, d/4) }

// result compares the first window after the warm-up (warmup, or one
// window when 0) with the last one.
func (k *soaker) result(d, warmup time.Duration) *soakResult {
	k.mu.Lock()
	defer k.mu.Unlock()
	win := soakWindow(d).Seconds()
	from := win
	if warmup > 0 {
		from = warmup.Seconds()
	}
	r := &soakResult{Warmup: from, Window: win, Samples: k.samples, Drift: map[string]any{}, DiskSampled: k.brokerDir != ""}
	end := 0.0
	if n := len(k.samples); n > 0 {
		end = k.samples[n-1].T
	}
	r.First = meanSample(k.samples, from, from+win)
	r.Last = meanSample(k.samples, end-win, end+1)
	rel := func(a, b int64) any {
		if a == 0 {
			return nil
		}
		return float64(b)/float64(a) - 1
	}
	r.Drift["rss"] = rel(r.First.RSS, r.Last.RSS)
	r.Drift["heap"] = rel(r.First.Heap, r.Last.Heap)
	r.Drift["lag"] = rel(r.First.Lag, r.Last.Lag)
	r.Drift["broker_disk"] = rel(r.First.DiskBytes, r.Last.DiskBytes)
	return r
}

func meanSample(ss []soakSample, from, to float64) soakSample {
	var m soakSample
	var n int64
	for _, s := range ss {
		if s.T >= from && s.T < to {
			m.RSS, m.Heap, m.Lag, m.DiskBytes = m.RSS+s.RSS, m.Heap+s.Heap, m.Lag+s.Lag, m.DiskBytes+s.DiskBytes
			n++
		}
	}
	if n > 0 {
		m.RSS, m.Heap, m.Lag, m.DiskBytes = m.RSS/n, m.Heap/n, m.Lag/n, m.DiskBytes/n
	}
	m.T = from
	return m
}

func (r *soakResult) report(w io.Writer) {
	fmt.Fprintf(w, "soak: %d samples; means over %.0fs windows, after %.0fs of warm-up and at the end:\n", len(r.Samples), r.Window, r.Warmup)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\tfirst\tlast\tdrift\t")
	row := func(name string, a, b int64, unit float64, key string) {
		d := "-"
		if v, ok := r.Drift[key].(float64); ok {
			d = fmt.Sprintf("%+.1f%%", 100*v)
		}
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%s\t\n", name, float64(a)/unit, float64(b)/unit, d)
	}
	row("RSS MiB", r.First.RSS, r.Last.RSS, 1<<20, "rss")
	row("Go heap MiB", r.First.Heap, r.Last.Heap, 1<<20, "heap")
	row("consumer lag", r.First.Lag, r.Last.Lag, 1, "lag")
	if r.DiskSampled {
		row("broker disk MiB", r.First.DiskBytes, r.Last.DiskBytes, 1<<20, "broker_disk")
	}
	tw.Flush()
	if !r.DiskSampled {
		fmt.Fprintln(w, "broker disk: not sampled, the broker runs in another process (--broker-dir names its data directory)")
	}
}

// rss is the process's resident set (VmRSS), 0 where /proc is missing.
func rss() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// heapBytes is the Go heap's live and not yet swept objects.
func heapBytes() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64())
}

// dirBytes is the size of the files under dir.
func dirBytes(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}
