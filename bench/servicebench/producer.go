package servicebench

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/gcsm/gcsm/bench"
	"github.com/gcsm/gcsm/ingest"
	"github.com/twmb/franz-go/pkg/kgo"
)

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
			buf = ingest.AppendEvent(buf[:0], TransferRecord(ev, p.transfers))
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

// TransferRecord is ev as an input record: with its id and amount when
// transfers is set, else the bare pair, as the stream was before transfers
// had ids.
func TransferRecord(ev bench.TransferEvent, transfers bool) ingest.Record {
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
