package output

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"reflect"
	"testing"
)

func TestNewDeadLetterUTF8(t *testing.T) {
	value := []byte(`{"op":"+","src":"acct:17","label":"ünïcödé"}`)
	d := NewDeadLetter("missing field dst", "edges", 3, 91830, value)
	want := DeadLetter{Error: "missing field dst", Topic: "edges", Partition: 3, Offset: 91830, Value: string(value)}
	if d != want {
		t.Fatalf("got %+v, want %+v", d, want)
	}
	checkDeadLetterJSON(t, d)
}

func TestNewDeadLetterBinary(t *testing.T) {
	value := []byte{0x00, 0xff, 0xfe, 'a', 0xc3}
	d := NewDeadLetter("not UTF-8", "edges", 0, 7, value)
	if d.Encoding != "base64" {
		t.Fatalf("Encoding = %q, want base64", d.Encoding)
	}
	got, err := base64.StdEncoding.DecodeString(d.Value)
	if err != nil || !bytes.Equal(got, value) {
		t.Fatalf("Value %q decodes to %q, %v; want %q", d.Value, got, err, value)
	}
	checkDeadLetterJSON(t, d)
}

func TestNewDeadLetterEmpty(t *testing.T) {
	d := NewDeadLetter("empty message", "edges", 0, 0, nil)
	if d.Value != "" || d.Encoding != "" {
		t.Fatalf("got %+v", d)
	}
	checkDeadLetterJSON(t, d)
}

// checkDeadLetterJSON checks that appendDeadLetter writes exactly what encoding/json writes from the
// struct tags, and that it decodes back.
func checkDeadLetterJSON(t *testing.T, d DeadLetter) {
	t.Helper()
	data := appendDeadLetter(nil, &d)
	var want bytes.Buffer
	enc := json.NewEncoder(&want)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(d); err != nil {
		t.Fatal(err)
	}
	if string(data) != string(bytes.TrimSuffix(want.Bytes(), []byte("\n"))) {
		t.Fatalf("appendDeadLetter = %s, encoding/json writes %s", data, want.Bytes())
	}
	var back DeadLetter
	if err := json.Unmarshal(data, &back); err != nil || !reflect.DeepEqual(back, d) {
		t.Fatalf("%s decodes to %+v, %v; want %+v", data, back, err, d)
	}
}
