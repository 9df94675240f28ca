package ingest

import (
	"errors"
	"io"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// TestDecodeIDTooLong: an id or a label over MaxIDBytes, in any field and
// format, is refused with ReasonIDTooLong and a detail naming the field and
// its length; one at the limit is taken, and the zero limit is
// DefaultMaxIDBytes. Lengths are those of the decoded names.
func TestDecodeIDTooLong(t *testing.T) {
	long := strings.Repeat("x", 9)
	tests := []struct {
		value, field string
		n            int
	}{
		{`{"op":"+","src":"` + long + `","dst":"b"}`, "src", 9},
		{`{"op":"+","src":"a","dst":"` + long + `"}`, "dst", 9},
		{`{"op":"-","src":"a","dst":"b","label":"` + long + `"}`, "label", 9},
		{`{"op":"+","src":"a","dst":"b","src_label":"` + long + `"}`, "src_label", 9},
		{`{"op":"+","dst_label":"` + long + `","src":"a","dst":"b"}`, "dst_label", 9},
		{`{"op":"+","src":"a","dst":"b","id":"` + long + `"}`, "id", 9},
		{`{"op":"+","src":123456789,"dst":1}`, "src", 9},
		{`{"op":"vertex","id":"` + long + `","label":"A"}`, "id", 9},
		{`{"op":"vertex","id":"v","label":"` + long + `"}`, "label", 9},
		// Five é, ten bytes decoded from thirty escaped.
		{`{"op":"+","src":"\u00e9\u00e9\u00e9\u00e9\u00e9","dst":"b"}`, "src", 10},
		{"e 123456789 2", "src", 9},
		{"+e 1 123456789", "dst", 9},
		{"-e 1 2 " + long, "label", 9},
		{"v 1 " + long, "label", 9},
		{"v 123456789 A", "id", 9},
	}
	d := Decoder{MaxIDBytes: 8}
	for _, tt := range tests {
		_, err := d.Decode([]byte(tt.value))
		var de *DecodeError
		if !errors.As(err, &de) || de.Reason != ReasonIDTooLong {
			t.Errorf("Decode(%s): %v, want %s", tt.value, err, ReasonIDTooLong)
			continue
		}
		want := `field "` + tt.field + `" is ` + strconv.Itoa(tt.n) + " bytes, over the limit of 8"
		if !strings.HasPrefix(de.Detail, want) {
			t.Errorf("Decode(%s): %q, want it to start %q", tt.value, de.Detail, want)
		}
	}
	for _, v := range []string{`{"op":"+","src":"12345678","dst":"b","label":"12345678","id":"12345678"}`, "e 12345678 2 12345678"} {
		if _, err := d.Decode([]byte(v)); err != nil {
			t.Errorf("Decode(%s) at the limit: %v", v, err)
		}
	}

	var zero Decoder
	at := strings.Repeat("a", DefaultMaxIDBytes)
	if _, err := zero.Decode([]byte(`{"op":"+","src":"` + at + `","dst":"b"}`)); err != nil {
		t.Errorf("the zero Decoder refuses an id of DefaultMaxIDBytes: %v", err)
	}
	_, err := zero.Decode([]byte(`{"op":"+","src":"` + at + `b","dst":"b"}`))
	if de := (*DecodeError)(nil); !errors.As(err, &de) || de.Reason != ReasonIDTooLong {
		t.Errorf("the zero Decoder takes an id of DefaultMaxIDBytes+1: %v", err)
	}
}

// TestDecodeIDTooLongKeepsDecoding: a refused event leaves nothing in the
// Decoder that changes the next one, and costs the good ones no
// allocation more than they had.
func TestDecodeIDTooLongKeepsDecoding(t *testing.T) {
	d := Decoder{MaxIDBytes: 8}
	good := []byte(`{"op":"+","src":"a","dst":"b","ts":5}`)
	bad := []byte(`{"op":"+","src":"a-long-one","dst":"b","ts":5}`)
	want, err := d.Decode(good)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Decode(bad); err == nil {
		t.Fatal("took a long id")
	}
	if got, err := d.Decode(good); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("after a refusal: %+v, %v; want %+v", got, err, want)
	}
	if n := testing.AllocsPerRun(100, func() { d.Decode(good) }); n > 1 {
		t.Fatalf("Decode of a good event: %v allocations, want at most the record's one", n)
	}
}

// TestReaderIDTooLong: a file's line with a long name is malformed, in each
// format, and the lines around it are read.
func TestReaderIDTooLong(t *testing.T) {
	for _, tt := range []struct {
		data   string
		format Format
	}{
		{"e 1 2\ne 123456789 2\ne 3 4\n", FormatCSM},
		{"1,2\n1,123456789\n3,4\n", FormatSNAP},
		{"1 2\n123456789 1\n3 4\n", FormatSNAP},
		{`{"op":"+","src":1,"dst":2}` + "\n" + `{"op":"+","src":1,"dst":2,"id":"123456789"}` + "\n" + `{"op":"+","src":3,"dst":4}` + "\n", FormatJSON},
	} {
		r := NewReader(strings.NewReader(tt.data), Options{Format: tt.format, File: "f", MaxIDBytes: 8, SkipBad: true})
		var srcs []string
		for {
			rec, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			srcs = append(srcs, rec.Src)
		}
		if strings.Join(srcs, " ") != "1 3" || r.Skipped() != 1 || r.Bad()[0].Line != 2 ||
			!strings.Contains(r.Bad()[0].Error(), "is 9 bytes, over the limit of 8") {
			t.Errorf("%v %q: read %v, skipped %d %v", tt.format, tt.data, srcs, r.Skipped(), r.Bad())
		}
	}
}
