package output

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestJSONLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// A real file, so that the sink's Sync path runs.
	s := NewJSONLines(f)
	ctx := context.Background()

	e := exampleEvent()
	odd := Event{Query: "q\n", Change: Disappeared, Match: []Binding{{"a", "x\ny\xff"}}, Batch: 2, Key: "q\n/1"}
	events := []Event{e, odd}
	letters := []DeadLetter{
		NewDeadLetter("missing field dst", "edges", 0, 91830, []byte("line\nwith newline")),
		NewDeadLetter("bad bytes", "edges", 1, 5, []byte{0xff}),
	}
	if err := s.Write(ctx, events); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteDead(ctx, letters); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, events); err == nil {
		t.Fatal("Write after Close succeeded")
	}

	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	if len(lines) != 4 {
		t.Fatalf("got %d lines, want 4:\n%s", len(lines), data)
	}
	for i, ev := range events {
		got, err := decodeEvent(lines[i])
		if err != nil {
			t.Fatal(err)
		}
		if want := wantWire(&ev); !reflect.DeepEqual(got, want) {
			t.Errorf("line %d = %+v, want %+v", i, got, want)
		}
	}
	for i, d := range letters {
		var got struct {
			DeadLetter *DeadLetter `json:"dead_letter"`
		}
		dec := json.NewDecoder(bytes.NewReader(lines[2+i]))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&got); err != nil {
			t.Fatalf("line %s: %v", lines[2+i], err)
		}
		if got.DeadLetter == nil || *got.DeadLetter != d {
			t.Errorf("line %s decodes to %+v, want %+v", lines[2+i], got.DeadLetter, d)
		}
	}
}

func TestJSONLinesFlushes(t *testing.T) {
	var out bytes.Buffer
	s := NewJSONLines(bufio.NewWriterSize(&out, 1<<16))
	e := exampleEvent()
	if err := s.Write(context.Background(), []Event{e}); err != nil {
		t.Fatal(err)
	}
	// Write promises durability, so nothing may linger in the bufio.Writer.
	if want := string(AppendJSON(nil, &e)) + "\n"; out.String() != want {
		t.Fatalf("after Write the writer holds %q, want %q", out.String(), want)
	}
}

func TestJSONLinesPipe(t *testing.T) {
	// fsync of a pipe fails with EINVAL; the sink must accept it, as it accepts stdout.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	s := NewJSONLines(w)
	e := exampleEvent()
	if err := s.Write(context.Background(), []Event{e}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	line, err := bufio.NewReader(r).ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	if _, err := decodeEvent(line); err != nil {
		t.Fatal(err)
	}
}
