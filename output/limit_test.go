package output

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/gcsm/gcsm/internal/kafkaconn"
)

// createTopic creates topic with one partition and the given max.message.bytes.
func createTopic(t *testing.T, c *kfake.Cluster, topic string, maxBytes int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, 1, 1
	cfg := kmsg.NewCreateTopicsRequestTopicConfig()
	cfg.Name, cfg.Value = "max.message.bytes", kmsg.StringPtr(strconv.Itoa(maxBytes))
	rt.Configs = append(rt.Configs, cfg)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), cl)
	if err == nil {
		err = kerr.ErrorForCode(resp.Topics[0].ErrorCode)
	}
	if err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
}

// TestFranzTooLarge is issue 42's poison pill at the sink: an alert over the output topic's
// max.message.bytes, read from the brokers, goes to the dead-letter topic with its reason, query, key,
// batch and sizes, and so does the same match's disappeared of a later batch, while the other alerts are
// written once each.
func TestFranzTooLarge(t *testing.T) {
	c := newCluster(t)
	createTopic(t, c, "matches", 4096)
	k := newKafka(t, KafkaConfig{Conn: kafkaconn.Plaintext(c.ListenAddrs()...), Topic: "matches", DeadTopic: "dlq"}).(*Franz)
	long := strings.Repeat("x", 1200) // in the match and two edges: over 4 KiB
	var sent int
	for batch := uint64(1); batch <= 2; batch++ {
		events := matchEvents(batch, 4)
		events[2].Match[0].ID = long
		events[2].Edges[0][0], events[2].Edges[2][1] = long, long
		events[2].Key = Key("tri", "", events[2].Match)
		p := k.Send(context.Background(), nil, events)
		<-p.Done()
		if err := p.Err(); err != nil {
			t.Fatal(err)
		}
		if d := p.Diverted(); len(d) != 1 || d[0].Index != 2 || d[0].Limit != 4096 || d[0].Bytes <= 4096-recordOverhead-variantBound {
			t.Fatalf("batch %d: diverted %+v, want event 2 over 4096 bytes", batch, d)
		}
		if l, e := p.Unsent(); len(l)+len(e) > 0 {
			t.Fatalf("unsent %v %v", l, e)
		}
		sent += len(events) - 1
	}
	if err := k.LimitErr(); err != nil {
		t.Fatal(err)
	}
	recs := consume(t, c, "matches", sent)
	seen := map[string]bool{}
	for _, r := range recs {
		if strings.Contains(string(r.Value), long) {
			t.Fatalf("the long alert is in the output topic")
		}
		if seen[string(r.Value)] {
			t.Fatalf("written twice: %s", r.Value)
		}
		seen[string(r.Value)] = true
	}
	dead := consume(t, c, "dlq", 2)
	for i, r := range dead {
		var d DeadLetter
		if err := json.Unmarshal(r.Value, &d); err != nil {
			t.Fatal(err)
		}
		if d.Reason != ReasonAlertTooLarge || d.Query != "tri" || d.Batch != uint64(i+1) || d.Limit != 4096 ||
			d.Key != string(r.Key) || d.Key != Key("tri", "", []Binding{{"a", long}, {"b", "acct:3"}, {"c", "acct:4"}}) || d.Topic != "matches" || d.Bytes <= 4096-recordOverhead-variantBound {
			t.Errorf("dead letter %d: %+v", i, cutUTF8(string(r.Value), 300))
		}
		var alert map[string]any
		if err := json.Unmarshal([]byte(d.Value), &alert); err != nil {
			t.Errorf("dead letter %d holds no whole alert: %v", i, err)
		}
	}
}

// TestFitsSameForKey: whatever the limit, a key's events, which differ only in change, batch, event
// time, source and initial, are all diverted or all sent.
func TestFitsSameForKey(t *testing.T) {
	a := matchEvents(7, 1)[0]
	a.Match[0].ID = strings.Repeat("y", 700)
	a.Key = Key("tri", "", a.Match)
	d := a
	d.Change, d.Batch, d.EventTime, d.Source, d.Initial = Disappeared, 1<<63, "", nil, false
	i := a
	i.Initial, i.Batch, i.Source = true, 3, &Source{Topic: strings.Repeat("t", 249), Partition: 1 << 30, FromOffset: 1 << 62, ToOffset: 1<<63 - 1}
	var vals [][]byte
	for _, e := range []*Event{&a, &d, &i} {
		vals = append(vals, AppendJSON(nil, e))
	}
	for limit := int64(1000); limit < 3000; limit++ {
		got := [3]bool{fits(&a, []byte(a.Key), vals[0], limit), fits(&d, []byte(d.Key), vals[1], limit), fits(&i, []byte(i.Key), vals[2], limit)}
		if got[0] != got[1] || got[0] != got[2] {
			t.Fatalf("limit %d: fits %v for one key's appeared, disappeared and initial", limit, got)
		}
	}
}

// TestFranzUnsent: a produce request the broker refuses fails only its own Send's records, which Unsent
// names, and the Send after it is written.
func TestFranzUnsent(t *testing.T) {
	c := newCluster(t)
	createTopic(t, c, "matches", 1<<20)
	k := newKafka(t, KafkaConfig{Conn: kafkaconn.Plaintext(c.ListenAddrs()...), Topic: "matches", MaxAttempts: 1}).(*Franz)
	ctx := context.Background()
	if err := k.Write(ctx, matchEvents(1, 3)); err != nil {
		t.Fatal(err)
	}
	c.ControlKey(int16(kmsg.Produce), func(r kmsg.Request) (kmsg.Response, error, bool) {
		req := r.(*kmsg.ProduceRequest)
		resp := req.ResponseKind().(*kmsg.ProduceResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewProduceResponseTopic()
			st.Topic, st.TopicID = rt.Topic, rt.TopicID
			for _, rp := range rt.Partitions {
				sp := kmsg.NewProduceResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, kerr.InvalidRecord.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	p := k.Send(ctx, nil, matchEvents(2, 5))
	<-p.Done()
	if err := p.Err(); !errors.Is(err, kerr.InvalidRecord) {
		t.Fatalf("Err %v, want invalid record", err)
	}
	if l, e := p.Unsent(); len(l) != 0 || len(e) != 5 || e[0] != 0 || e[4] != 4 {
		t.Fatalf("unsent letters %v, events %v; want events 0 to 4", l, e)
	}
	p = k.Send(ctx, nil, matchEvents(3, 2))
	select {
	case <-p.Done():
	case <-time.After(time.Minute): // only against a hang
		t.Fatal("the Send after the refused one did not finish")
	}
	if err := p.Err(); err != nil {
		t.Fatal(err)
	}
	if l, e := p.Unsent(); len(l)+len(e) != 0 {
		t.Fatalf("unsent %v %v after a good send", l, e)
	}
	consume(t, c, "matches", 5)
}
