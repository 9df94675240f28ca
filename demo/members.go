package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/gcsm/gcsm/bench"
	"github.com/gcsm/gcsm/bench/servicebench"
	"github.com/gcsm/gcsm/ingest"
	"github.com/gcsm/gcsm/internal/kafkaconn"
	"github.com/gcsm/gcsm/service"
)

// memberEvent is what the members' comparison reads of an event: repeats
// after a rebalance have the same key, change and batch.
type memberEvent struct {
	Key    string `json:"key"`
	Change string `json:"change"`
	Batch  uint64 `json:"batch"`
}

// readEvents reads topic's partition 0 to its end.
func readEvents(ctx context.Context, brokers []string, topic string) ([]memberEvent, error) {
	conn := kafkaconn.Plaintext(brokers...)
	first, end, err := ingest.Offsets(ctx, conn, topic, 0)
	if err != nil || first == end {
		return nil, err
	}
	var out []memberEvent
	err = ingest.ConsumePartition(ctx, conn, topic, 0, kgo.NewOffset().AtStart(), end, func(m *kgo.Record) error {
		var ev memberEvent
		if err := json.Unmarshal(m.Value, &ev); err != nil {
			return fmt.Errorf("topic %q offset %d: %w", topic, m.Offset, err)
		}
		out = append(out, ev)
		return nil
	})
	return out, err
}

// union is a set of events, and the final state per key: the change of
// the key's event of the highest batch.
type union struct {
	events map[memberEvent]bool
	final  map[string]memberEvent
}

func unionOf(evs []memberEvent) union {
	u := union{events: map[memberEvent]bool{}, final: map[string]memberEvent{}}
	for _, e := range evs {
		u.events[e] = true
		if f, ok := u.final[e.Key]; !ok || e.Batch > f.Batch {
			u.final[e.Key] = e
		}
	}
	return u
}

func (u union) appeared() int {
	n := 0
	for _, e := range u.final {
		if e.Change == "appeared" {
			n++
		}
	}
	return n
}

func (u union) equal(v union) bool {
	if len(u.events) != len(v.events) {
		return false
	}
	for e := range u.events {
		if !v.events[e] {
			return false
		}
	}
	return true
}

// runMembers is gcsm demo --members n: n members on the embedded broker
// share the stream; then one member follows the same batches alone, and
// the union of the members' alerts is compared with its alerts.
func runMembers(stdout io.Writer, log zerolog.Logger, cfg service.Config, openEngine func(io.Writer) (*servicebench.Engine, error), n int, evs []bench.TransferEvent, rate int) error {
	cfg.Cluster = service.ClusterConfig{Shards: servicebench.MemberShards, Group: "gcsm-demo-members"}
	var devLine strings.Builder
	open := func(int) (*servicebench.Engine, error) { return openEngine(&devLine) }
	ms, err := servicebench.StartMembers(cfg, n, log, nil, open)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "gcsm demo: %d members, %d shards, embedded Kafka broker on %s, %s", n, servicebench.MemberShards, ms[0].Service.Brokers()[0],
		strings.SplitN(devLine.String(), "\n", 2)[0]+"\n")
	brokers := ms[0].Service.Brokers()
	// Each member must own its shards before the stream flows, or the
	// first would match it all before the others join.
	if err := servicebench.WaitMembers(ms, "the members to share the shards", time.Minute, servicebench.OwnsShards); err != nil {
		servicebench.StopMembers(ms)
		return err
	}
	ctx := context.Background()
	d := &demo{out: io.Discard, seen: map[string]int{}, totals: map[string]int{}}
	t0 := time.Now()
	sent, err := d.produce(ctx, brokers, cfg.Input.Topic, evs, rate)
	if err != nil {
		servicebench.StopMembers(ms)
		return err
	}
	if err := servicebench.WaitMembers(ms, "the members to apply the stream", 5*time.Minute, servicebench.AppliedAll(int64(sent))); err != nil {
		servicebench.StopMembers(ms)
		return err
	}
	elapsed := time.Since(t0)
	fmt.Fprintf(stdout, "produced %d events; the members applied them all in %.2fs\n\n", sent, elapsed.Seconds())
	servicebench.ShareTable(stdout, ms)
	many, err := readEvents(ctx, brokers, cfg.Output.Topic)
	if err != nil {
		servicebench.StopMembers(ms)
		return err
	}

	// One member alone, on its own group and output topic, follows the
	// batches the members cut.
	one := cfg
	one.Cluster.Group = "gcsm-demo-one"
	one.Output.Topic = cfg.Output.Topic + "-one"
	one.Brokers = brokers
	one.State.Dir = filepath.Join(cfg.State.Dir, "one")
	solo, err := servicebench.StartMembers(one, 1, log, nil, open)
	if err != nil {
		servicebench.StopMembers(ms)
		return err
	}
	err = servicebench.WaitMembers(solo, "one member to apply the stream", 5*time.Minute, servicebench.AppliedAll(int64(sent)))
	if serr := servicebench.StopMembers(solo); err == nil {
		err = serr
	}
	var single []memberEvent
	if err == nil {
		single, err = readEvents(ctx, brokers, one.Output.Topic)
	}
	if serr := servicebench.StopMembers(ms); err == nil {
		err = serr
	}
	if err != nil {
		return err
	}
	u, v := unionOf(many), unionOf(single)
	same := u.equal(v)
	verdict := "yes"
	if !same {
		verdict = "NO"
	}
	fmt.Fprintf(stdout, "\nunion of the members' alerts: %d distinct events (%d written, repeats after rebalances included), %d matches standing at the end\n",
		len(u.events), len(many), u.appeared())
	fmt.Fprintf(stdout, "one member over the same batches: %d events, %d matches standing at the end\n", len(v.events), v.appeared())
	fmt.Fprintf(stdout, "the union equals one member's output: %s\n", verdict)
	if !same {
		return errors.New("the members' union differs from one member's output")
	}
	return nil
}
