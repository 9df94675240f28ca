package servicebench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/gcsm/gcsm/service"
)

// soaker samples the process and the service once a second during a
// soak.
type soaker struct {
	s         *service.Service
	p         *streamProducer
	brokerDir string // "": not sampled (external brokers without --broker-dir)

	mu      sync.Mutex
	start   time.Time
	samples []SoakSample
	quit    chan struct{}
	once    sync.Once
}

// SoakSample is one second's sample of a soak.
type SoakSample struct {
	T         float64 `json:"t"` // seconds since the start
	RSS       int64   `json:"rss_bytes"`
	Heap      int64   `json:"heap_bytes"`
	Lag       int64   `json:"lag"`
	DiskBytes int64   `json:"broker_disk_bytes,omitempty"`
}

// SoakResult compares a soak's first window after the warm-up with its
// last.
type SoakResult struct {
	Warmup  float64        `json:"warmup_s"`
	Window  float64        `json:"window_s"`
	First   SoakSample     `json:"first"` // means over the first window after the warm-up
	Last    SoakSample     `json:"last"`  // means over the last window
	Drift   map[string]any `json:"drift"` // last/first − 1, per figure
	Samples []SoakSample   `json:"samples"`
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
		smp := SoakSample{T: time.Since(k.start).Seconds(), RSS: rss(), Heap: heapBytes(), Lag: max(0, k.p.count()-applied(k.s.Progress()))}
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

// SoakWindow is how long the windows are whose means a soak compares: a
// minute on a run of four minutes or more, a quarter of a shorter one.
func SoakWindow(d time.Duration) time.Duration { return min(time.Minute, d/4) }

// result compares the first window after the warm-up (warmup, or one
// window when 0) with the last one.
func (k *soaker) result(d, warmup time.Duration) *SoakResult {
	k.mu.Lock()
	defer k.mu.Unlock()
	win := SoakWindow(d).Seconds()
	from := win
	if warmup > 0 {
		from = warmup.Seconds()
	}
	r := &SoakResult{Warmup: from, Window: win, Samples: k.samples, Drift: map[string]any{}, DiskSampled: k.brokerDir != ""}
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

func meanSample(ss []SoakSample, from, to float64) SoakSample {
	var m SoakSample
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

func (r *SoakResult) report(w io.Writer) {
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
