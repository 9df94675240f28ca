package ingest

import (
	"strings"
	"testing"
)

func TestReaderDirected(t *testing.T) {
	for _, tc := range []struct {
		text     string
		format   Format
		directed bool
	}{
		{`{"op":"+","src":1,"dst":2}`, FormatJSON, true},
		{"src,dst\n1,2\n", FormatSNAP, true},
		{"# comment\n1,2,1,1700000000\n", FormatSNAP, true},
		{"1 2\n", FormatSNAP, false},
		{"1\t2\t1700000000\n", FormatSNAP, false},
		{"v 1 A\nv 2 A\ne 1 2\n", FormatCSM, false},
		{"e 1 2\n", FormatCSM, false},
	} {
		r := NewReader(strings.NewReader(tc.text), Options{})
		if _, err := r.Next(); err != nil {
			t.Fatalf("%q: %v", tc.text, err)
		}
		if r.Format() != tc.format || r.Directed() != tc.directed {
			t.Errorf("%q: %v directed=%v, want %v directed=%v", tc.text, r.Format(), r.Directed(), tc.format, tc.directed)
		}
	}
}
