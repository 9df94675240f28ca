package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/gcsm/gcsm/query"
	"github.com/gcsm/gcsm/service"
)

// runFlags are gcsm run's overrides of the configuration file.
type runFlags struct {
	config, brokers, state, http, token, logLevel, logFormat string
	tsUnit                                                   string
	queries                                                  queryFlags
	workers                                                  int
	pprof, acceptInputLoss                                   bool
	dev                                                      deviceFlags
}

func runRun(args []string, stdout, stderr io.Writer) error {
	var f runFlags
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.StringVar(&f.config, "config", "", "YAML configuration `file`; built-in defaults (embedded broker, ./gcsm-state) if omitted")
	fs.StringVar(&f.brokers, "brokers", "", "comma-separated Kafka `brokers`; overrides the file's, and \"embedded\" forces the in-process broker")
	fs.StringVar(&f.state, "state", "", "state `directory` for checkpoints (and the embedded broker's log)")
	fs.StringVar(&f.http, "http", "", "`address` of the HTTP API and /metrics (\"off\" disables it)")
	fs.BoolVar(&f.pprof, "pprof", false, "serve Go's profiles on /debug/pprof/ of the HTTP address, which must be loopback")
	fs.BoolVar(&f.acceptInputLoss, "accept-input-loss", false, "start, with a warning, although the input topic was recreated behind the checkpoint or retention removed records no checkpoint holds (state.accept_input_loss)")
	fs.StringVar(&f.token, "token", "", "bearer `token` the query API requires (default from $GCSM_TOKEN)")
	fs.Var(&f.queries, "q", "standing query NAME=PATTERN, added to the file's (repeatable)")
	fs.IntVar(&f.workers, "workers", -1, "matching goroutines on the CPU; 0 uses every core")
	fs.StringVar(&f.logLevel, "log-level", "", "debug, info, warn or error")
	fs.StringVar(&f.logFormat, "log-format", "", "console or json")
	fs.StringVar(&f.tsUnit, "ts-unit", "", "what a numeric ts of the input counts since 1970: s, ms, us or ns (input.ts_unit, default ms); times outside 1990-2100 get a warning")
	f.dev.register(fs)
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	cfg := service.DefaultConfig()
	if f.config != "" {
		var err error
		if cfg, err = service.LoadConfig(f.config); err != nil {
			return err
		}
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	if err := f.apply(&cfg, set); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	log, err := newLogger(stderr, cfg.Log)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return serve(ctx, cfg, &f.dev, log)
}

// apply copies the flags that were set over cfg.
func (f *runFlags) apply(cfg *service.Config, set map[string]bool) error {
	if set["brokers"] {
		cfg.Brokers = nil
		if f.brokers != "embedded" {
			for _, b := range strings.Split(f.brokers, ",") {
				if b = strings.TrimSpace(b); b != "" {
					cfg.Brokers = append(cfg.Brokers, b)
				}
			}
		}
	}
	if set["state"] {
		cfg.State.Dir = f.state
	}
	if set["http"] {
		cfg.HTTP.Listen = f.http
		if f.http == "off" {
			cfg.HTTP.Listen = ""
		}
	}
	if set["pprof"] {
		cfg.HTTP.Pprof = f.pprof
	}
	if set["accept-input-loss"] {
		cfg.State.AcceptInputLoss = f.acceptInputLoss
	}
	if set["token"] {
		cfg.HTTP.Token = f.token
	} else if t := os.Getenv("GCSM_TOKEN"); t != "" && cfg.HTTP.Token == "" {
		cfg.HTTP.Token = t
	}
	if set["workers"] {
		if err := badFlags(workersFlag(f.workers)); err != nil {
			return err
		}
		cfg.Engine.Workers = f.workers
	}
	if set["device"] {
		cfg.Engine.Device = f.dev.device
	}
	f.dev.device = cfg.Engine.Device
	if set["gpus"] {
		cfg.Engine.GPUs = f.dev.gpus
	}
	f.dev.gpus = max(1, cfg.Engine.GPUs)
	if set["log-level"] {
		cfg.Log.Level = f.logLevel
	}
	if set["log-format"] {
		cfg.Log.Format = f.logFormat
	}
	if set["ts-unit"] {
		if _, err := tsUnit(f.tsUnit); err != nil {
			return err
		}
		cfg.Input.TSUnit = f.tsUnit
	}
	for _, spec := range f.queries {
		name, pattern, ok := strings.Cut(spec, "=")
		if !ok || strings.ContainsAny(name, "()[]-") || strings.TrimSpace(pattern) == "" {
			return badFlags(fmt.Errorf("-q %q: want NAME=PATTERN", spec))
		}
		// A pattern that does not parse fails here, before a broker starts.
		if _, err := query.Parse(name, pattern); err != nil {
			return err
		}
		cfg.Queries = append(cfg.Queries, service.QueryConfig{Name: name, Pattern: pattern})
	}
	return nil
}

// newLogger builds the service's logger: JSON lines for machines, or the
// human console format.
func newLogger(w io.Writer, c service.LogConfig) (zerolog.Logger, error) {
	level, err := zerolog.ParseLevel(c.Level)
	if err != nil || c.Level == "" {
		return zerolog.Logger{}, fmt.Errorf("log.level %q: want debug, info, warn or error", c.Level)
	}
	switch c.Format {
	case "json":
	case "console":
		// Colour codes are noise in a file or a pipe; NO_COLOR
		// (no-color.org) turns them off on a terminal too.
		w = zerolog.ConsoleWriter{Out: w, TimeFormat: time.TimeOnly, NoColor: !isTerminal(w) || os.Getenv("NO_COLOR") != ""}
	default:
		return zerolog.Logger{}, fmt.Errorf("log.format %q: want json or console", c.Format)
	}
	return zerolog.New(w).Level(level).With().Timestamp().Logger(), nil
}

// serve runs the service until ctx is done, on the engine the device flags
// choose.
func serve(ctx context.Context, cfg service.Config, dev *deviceFlags, log zerolog.Logger) error {
	var devLine strings.Builder
	eng, err := dev.open(&devLine, cfg.Engine.Workers, 0)
	if err != nil {
		return err
	}
	defer eng.Close()
	log.Info().Msg(strings.TrimSpace(devLine.String()))
	s, err := service.New(service.Options{Config: cfg, Matcher: eng.Matcher, Alloc: eng.Alloc, Log: log})
	if err != nil {
		return err
	}
	err = s.Run(ctx)
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}
