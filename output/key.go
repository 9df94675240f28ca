package output

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"strings"
)

// keyHashBytes is how much of the SHA-256 goes into a key: 128 bits make a collision among 2^40 live
// matches about 2^-48 likely, and keep the key at 32 hex digits after the query name.
const keyHashBytes = 16

// Key returns the event key of a match: query, "/", then the hex of the first 16 bytes of the SHA-256 of
// uvarint(len(pattern)) pattern, then the bindings sorted by Var (then ID), each written as
// uvarint(len(Var)) Var uvarint(len(ID)) ID.
//
// pattern is the query's pattern in a canonical form (the service passes query.Pattern.Form, its parsed
// structure written out, so spacing does not count): a name registered again with another pattern keys its
// matches apart from the old ones. The length prefixes make the encoding prefix-free, so two different
// (pattern, match) pairs never hash the same bytes (bindings {a:"b=c"} and {"a=b":c}, or one binding and
// two, differ). The value depends only on query, pattern and the set of bindings: the same match has the
// same key in any order, in any process, after any restart, whatever other queries stand beside it, and its
// Appeared and Disappeared events share it. Changing this function changes every key that consumers and
// compacted topics hold; TestKeyGolden guards it.
//
// Key allocates only the returned string for matches of up to 32 bindings whose encoding, pattern
// included, fits in 1 KiB.
func Key(query, pattern string, match []Binding) string {
	var orderBuf [32]int32
	order := orderBuf[:0]
	if len(match) > len(orderBuf) {
		order = make([]int32, 0, len(match))
	}
	for i := range match {
		order = append(order, int32(i))
	}
	// Insertion sort: a match has a handful of bindings, and sort.Slice would allocate its closure.
	for i := 1; i < len(order); i++ {
		for j := i; j > 0 && bindingLess(&match[order[j]], &match[order[j-1]]); j-- {
			order[j], order[j-1] = order[j-1], order[j]
		}
	}

	var encBuf [1024]byte
	enc := binary.AppendUvarint(encBuf[:0], uint64(len(pattern)))
	enc = append(enc, pattern...)
	for _, i := range order {
		b := &match[i]
		enc = binary.AppendUvarint(enc, uint64(len(b.Var)))
		enc = append(enc, b.Var...)
		enc = binary.AppendUvarint(enc, uint64(len(b.ID)))
		enc = append(enc, b.ID...)
	}
	sum := sha256.Sum256(enc)
	var digits [2 * keyHashBytes]byte
	hex.Encode(digits[:], sum[:keyHashBytes])

	var sb strings.Builder
	sb.Grow(len(query) + 1 + len(digits))
	sb.WriteString(query)
	sb.WriteByte('/')
	sb.Write(digits[:])
	return sb.String()
}

// bindingLess orders bindings by Var, then by ID, so that even a malformed match with a repeated Var has
// one canonical order.
func bindingLess(a, b *Binding) bool {
	if a.Var != b.Var {
		return a.Var < b.Var
	}
	return a.ID < b.ID
}
