package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"

	"github.com/gcsm/gcsm/bench/servicebench"
	"github.com/gcsm/gcsm/device"
	"github.com/gcsm/gcsm/internal/kafkaconn"
	"github.com/gcsm/gcsm/query"
	"github.com/gcsm/gcsm/replay"
	"github.com/gcsm/gcsm/service"
	"github.com/rs/zerolog"
)

// benchServiceFlags are gcsm bench service's flags.
type benchServiceFlags struct {
	mix               string
	queries           queryFlags
	ret               bool    // --return: a RETURN of three fields on the predicated queries
	sets              float64 // --sets: the fraction of property sets in the stream
	only              string  // --select: names of the mix's queries to run
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
// engine alone, as replay runs it (bench/servicebench runs them).
func runBenchService(args []string, stdout, stderr io.Writer) error {
	var f benchServiceFlags
	fs := flag.NewFlagSet("bench service", flag.ContinueOnError)
	f.register(fs)
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
	if err := f.check(fs); err != nil {
		return err
	}
	mix := servicebench.Mixes[f.mix]
	qcfg, err := f.resolve(mix)
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
		fmt.Fprintf(human, "mix %s: %s; only %s\n", f.mix, mix.Summary, f.only)
	default:
		fmt.Fprintf(human, "mix %s: %s\n", f.mix, mix.Summary)
	}
	log, err := newLogger(stderr, service.LogConfig{Level: "warn", Format: "console"})
	if err != nil {
		return err
	}
	o := f.options(name, qcfg, log, stderr)
	if f.members > 0 {
		res, err := servicebench.RunMembers(o, human)
		if err != nil {
			return err
		}
		return writeJSON(stdout, res)
	}
	res, err := servicebench.Run(o, human)
	if err != nil {
		return err
	}
	f.report(res, mix, human)
	if err := writeJSON(stdout, res); err != nil {
		return err
	}
	if res.Engine != nil && !res.Engine.Consistent {
		return errors.New("the service and the engine alone disagree on the matches (see the table): a bug")
	}
	return nil
}

// register defines gcsm bench service's flags on fs.
func (f *benchServiceFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.mix, "mix", "alert-sparse", "standard workload: alert-sparse (4- and 5-account fraud patterns, under 0.01 alerts per update), alert-heavy (triangles among few accounts, over one alert per update) rings-where (3- and 4-rings over transfers with ids and amounts, bare beside layering predicates) or five (5-account patterns over a dense stream, matching-bound: about 2.7 alerts per update)")
	fs.Var(&f.queries, "q", "query instead of the mix's: an inline pattern or NAME=PATTERN (repeatable); the stream is still the mix's")
	fs.StringVar(&f.only, "select", "", "run only the mix's queries of these comma-separated `names`: with rings-where, ring3,ring4 against ring3w,ring4w compares bare and predicated throughput")
	fs.IntVar(&f.updates, "updates", 0, "updates in the stream; 0: the mix's (1,000,000)")
	fs.BoolVar(&f.ret, "return", false, "append to each query with a WHERE over transfers a RETURN of three fields (its first account, the transfers' total amount and their span), as an analyst's alert carries")
	fs.Float64Var(&f.sets, "sets", 0, "the `fraction` of the stream's events, besides its transfers, that set properties: half a recent transfer's amount (within 15%), half a recent sender's status; mixes over transfers only (rings-where)")
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
}

// check checks the flags, each against the others.
func (f *benchServiceFlags) check(fs *flag.FlagSet) error {
	return badFlags(
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
		setsFlag(f.sets, f.mix, f.duration),
		membersFlag(f.members, f.rate, f.duration),
		brokerDirFlag(f.brokerDir, f.brokers, f.duration),
		configFlag(f.config, f.brokers),
	)
}

// resolve fills in what the mix sets and the flags left at 0, and returns
// the queries to run: -q's, or the mix's (those --select names).
func (f *benchServiceFlags) resolve(mix servicebench.Mix) ([]service.QueryConfig, error) {
	if f.updates == 0 {
		f.updates = mix.Updates
	}
	if f.accounts == 0 {
		f.accounts = mix.Accounts
	}
	if f.accounts < 3 || f.updates < 3 {
		return nil, badFlags(errors.New("--accounts and --updates: want 3 or more each (a ring needs three accounts and three transfers)"))
	}
	f.head = mix.Head(f.accounts)
	f.transfers = mix.Transfers
	specs := []string(f.queries)
	if len(specs) == 0 {
		specs = mix.Queries
	}
	if f.only != "" {
		if len(f.queries) > 0 {
			return nil, badFlags(errors.New("--select picks among the mix's queries; -q replaces them: give one or the other"))
		}
		var err error
		if specs, err = mix.Selected(f.mix, f.only); err != nil {
			return nil, badFlags(err)
		}
	}
	if f.ret {
		specs = servicebench.WithReturn(specs)
	}
	return serviceQueries(specs)
}

// options are the harness's options from the flags.
func (f *benchServiceFlags) options(name string, qcfg []service.QueryConfig, log zerolog.Logger, stderr io.Writer) *servicebench.Options {
	o := &servicebench.Options{Name: name, Queries: qcfg, Updates: f.updates, Accounts: f.accounts, Batch: f.batch, Workers: f.workers,
		Partitions: f.partitions, Rate: f.rate, Duration: f.duration, Window: f.window, Warmup: f.warmup, Brokers: f.brokers,
		Compression: f.compression, Delivery: f.delivery, Seed: f.seed, Head: f.head, Transfers: f.transfers, Sets: f.sets, Members: f.members,
		Log: log, Stderr: stderr, Open: f.openMember,
		Connect: func(cfg *service.Config, dir string) (kafkaconn.Conn, string, func(), error) {
			return servicebench.Connect(cfg, dir, servicebench.BrokerOptions{Embedded: f.brokers == "", Partitions: f.partitions, Brokers: splitBrokers(f.brokers),
				Secure: f.secure, Config: f.config, BrokerDir: f.brokerDir})
		},
	}
	if f.engine {
		o.Alone = true
	}
	return o
}

// openMember opens member i's engine, saying which on w: under --device
// gpu, member i runs on GPUs i*gpus to i*gpus+gpus-1.
func (f *benchServiceFlags) openMember(w io.Writer, i int) (*servicebench.Engine, error) {
	d := f.dev
	if d.device == "gpu" {
		d.first = i * max(1, d.gpus)
	}
	e, err := d.open(w, f.workers, 0)
	if err != nil {
		return nil, err
	}
	return harness(e), nil
}

// harness is e as bench/servicebench takes it.
func harness(e *device.Executor) *servicebench.Engine {
	return &servicebench.Engine{Matcher: e.Matcher, Alloc: e.Alloc, Close: e.Close, Warn: e.WarnFallback}
}

// report writes the human table, with the mix's pairs, and a note when a
// standard run's alert rate is not the one its mix is meant to have.
func (f *benchServiceFlags) report(res *servicebench.Result, mix servicebench.Mix, human io.Writer) {
	if len(f.queries) == 0 {
		res.Pair(mix.Pairs)
	}
	res.Report(human)
	if len(f.queries) == 0 && f.only == "" && f.duration == 0 {
		epu := res.EventsPerUpdate
		if mix.MaxEvents > 0 && epu >= mix.MaxEvents || mix.MinEvents > 0 && epu <= mix.MinEvents {
			fmt.Fprintf(human, "note: %.4f alerts per update is outside what %s is meant to have at these sizes\n", epu, f.mix)
		}
	}
}

// writeJSON writes v as one line of JSON.
func writeJSON(w io.Writer, v any) error {
	js, err := json.Marshal(v)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, string(js))
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

// configFlag checks that --config comes with the --brokers it secures.
func configFlag(config, brokers string) error {
	if config != "" && brokers == "" {
		return fmt.Errorf("--config %s secures --brokers; without them, --secure secures the embedded broker", config)
	}
	return nil
}

// brokerDirFlag allows --broker-dir only where a soak samples another
// process's broker.
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
	case w > 0 && w+servicebench.SoakWindow(d) > d:
		return fmt.Errorf("--warmup %v leaves less than the %v window to compare in a soak of %v", w, servicebench.SoakWindow(d), d)
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

// serviceQueries turns -q specs (NAME=PATTERN or a bare pattern, named qN)
// into the service's query configuration, checking that each parses.
func serviceQueries(specs []string) ([]service.QueryConfig, error) {
	var out []service.QueryConfig
	for i, spec := range specs {
		name, text, _ := replay.SplitQuerySpec(spec, i)
		if _, err := query.Parse(name, text); err != nil {
			return nil, fmt.Errorf("-q %q: %w", spec, err)
		}
		out = append(out, service.QueryConfig{Name: name, Pattern: strings.TrimSpace(text)})
	}
	return out, nil
}

// membersFlag refuses --members with the modes it does not run.
// setsFlag checks --sets: a fraction below one half, on a mix whose
// transfers have ids (a set names its transfer by id), not in a soak, whose
// generated stream has no sets.
func setsFlag(sets float64, mix string, d time.Duration) error {
	switch {
	case sets == 0:
		return nil
	case !(sets > 0 && sets <= 0.5):
		return fmt.Errorf("--sets %v: give a fraction of the stream above 0 and at most 0.5", sets)
	case !servicebench.Mixes[mix].Transfers:
		return fmt.Errorf("--sets: mix %s streams bare pairs, without the transfer ids a set names; use rings-where", mix)
	case d > 0:
		return errors.New("--sets applies to a backlog: leave out --duration")
	}
	return nil
}

func membersFlag(members, rate int, d time.Duration) error {
	if members > 0 && (rate > 0 || d > 0) {
		return errors.New("--members measures a backlog's throughput: leave out --rate and --duration")
	}
	return nil
}
