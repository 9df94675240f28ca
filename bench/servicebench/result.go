package servicebench

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/gcsm/gcsm/incremental"
)

// Result is gcsm bench service's summary, its last line of stdout.
type Result struct {
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
	Transfers bool `json:"transfers,omitempty"`
	// Sets is the fraction of the stream's events that set properties
	// (bench.WithSets): Updates counts them.
	Sets       float64 `json:"sets,omitempty"`
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
	AlertLatency    LatencySummary `json:"alert_latency_ms"` // input record's arrival → alert acknowledged, per event
	BatchLatency    LatencySummary `json:"batch_latency_ms"` // batch cut → its output acknowledged, per batch
	Stages          []StageShare   `json:"stages"`
	// OutputSteps split the output stage: build, log, send and acknowledge
	// (service.output_step_seconds), seconds summed over batches.
	OutputSteps []StageShare   `json:"output_steps"`
	LoopIdle    float64        `json:"run_loop_idle_s"` // the run loop's waits, from its first batch on
	Matches     []QueryMatches `json:"matches"`
	// Pairs sets each bare pattern of the mix beside its predicated form.
	Pairs  []QueryPair   `json:"pairs,omitempty"`
	Engine *EngineResult `json:"engine,omitempty"`
	Ratio  float64       `json:"service_over_engine,omitempty"`
	Soak   *SoakResult   `json:"soak,omitempty"`
}

// QueryPair is a bare pattern's alerts beside its predicated form's, as the
// service found them.
type QueryPair struct {
	Bare          string `json:"bare"`
	Where         string `json:"where"`
	BareAppeared  int64  `json:"bare_appeared"`
	WhereAppeared int64  `json:"where_appeared"`
	// Kept is the predicated form's appeared matches over the bare one's:
	// the share of alerts that the predicates leave.
	Kept float64 `json:"kept"`
}

// Pair fills r.Pairs from the mix's pairs whose queries both ran.
func (r *Result) Pair(pairs [][2]string) {
	find := func(name string) *QueryMatches {
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
		qp := QueryPair{Bare: b.Query, Where: w.Query, BareAppeared: b.Appeared, WhereAppeared: w.Appeared}
		if b.Appeared > 0 {
			qp.Kept = float64(w.Appeared) / float64(b.Appeared)
		}
		r.Pairs = append(r.Pairs, qp)
	}
}

// LatencySummary is a latency's percentiles and maximum, in ms, over Count
// samples.
type LatencySummary struct {
	P50   float64 `json:"p50"`
	P99   float64 `json:"p99"`
	Max   float64 `json:"max"`
	Count int64   `json:"count"`
}

// StageShare is a stage's seconds, summed over batches, and its share of
// all stages' seconds.
type StageShare struct {
	Stage   string  `json:"stage"`
	Seconds float64 `json:"seconds"`
	Share   float64 `json:"share"`
}

// QueryMatches is a query's matches and the batches it ran in.
type QueryMatches struct {
	Query       string `json:"query"`
	Appeared    int64  `json:"appeared"`
	Disappeared int64  `json:"disappeared"`
	// The batches the query was matched in on each device: under --device
	// auto, where the Placer ran it.
	CPUBatches int64 `json:"cpu_batches"`
	GPUBatches int64 `json:"gpu_batches"`
}

// AddBatch counts a batch of the query on device d.
func (m *QueryMatches) AddBatch(d incremental.Device, n int64) {
	if d == incremental.OnGPU {
		m.GPUBatches += n
	} else {
		m.CPUBatches += n
	}
}

// EngineResult is the engine alone's run over the same stream.
type EngineResult struct {
	// Seconds runs from the first message decoded to the last step
	// finished, the core stepped as the service steps it (decoding and
	// interning beside the steps, matches overlapped where the matcher
	// can); Serial* are the same stream resolved beforehand and stepped
	// one step after another.
	Seconds       float64 `json:"seconds"`
	UpdatesPerSec float64 `json:"updates_per_s"`
	// Overlapped counts the steps whose match overlapped the next apply,
	// of Steps.
	Steps               int64          `json:"steps"`
	Overlapped          int64          `json:"overlapped_steps"`
	SerialSeconds       float64        `json:"serial_seconds"`
	SerialUpdatesPerSec float64        `json:"serial_updates_per_s"`
	MatchesPerSec       float64        `json:"matches_per_s"`
	Matches             []QueryMatches `json:"matches"`
	// Consistent says that each query's net count (appeared − disappeared)
	// is the service's; totals may differ where batch cuts differ, as a
	// match that appears and goes within one batch is never reported.
	Consistent bool `json:"consistent"`
}

// Report writes the human table.
func (r *Result) Report(w io.Writer) {
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
		fmt.Fprintf(tw, "engine alone\t%.2fs, %.0f updates/s, %.0f matches/s (the same bytes decoded, interned and stepped as the service does, no Kafka; %d of %d matches overlapped)\t\n",
			r.Engine.Seconds, r.Engine.UpdatesPerSec, r.Engine.MatchesPerSec, r.Engine.Overlapped, r.Engine.Steps)
		fmt.Fprintf(tw, "  serial\t%.2fs, %.0f updates/s (resolved beforehand, one step after another)\t\n", r.Engine.SerialSeconds, r.Engine.SerialUpdatesPerSec)
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
