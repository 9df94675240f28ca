// Package statedir keeps the service's checkpoints in a state directory:
// each one written atomically, checksummed, and the newest few kept, so that
// a crash at any instant leaves the last published checkpoint readable, and a
// checkpoint damaged on disk is noticed and skipped in favour of an older one
// instead of restoring a wrong graph.
//
// A checkpoint is published by the classic sequence: write a temporary file
// in the same directory, fsync it, rename it to its final name, fsync the
// directory. Until the rename the old state is intact; after the directory
// fsync the new one survives power loss. A crash in between leaves a
// temporary file, which Open removes. Names carry a zero-padded sequence
// number (ckpt-00000000000000000042), so the lexical order of the names is
// the order of the writes and no clock is involved.
//
// File layout, version 1 (integers little-endian):
//
//	offset  size  field
//	0       8     magic "GCSMCKPT"
//	8       4     version (1)
//	12      8     content length n
//	20      n     content, as the caller's write function produced it
//	20+n    4     CRC-32C (Castagnoli) of the content
//
// The header has no checksum of its own: each of its fields is checked
// exactly (the magic, the version, and the length against the file's size),
// so a damaged header fails as surely as damaged content. Go's hash/crc32
// computes CRC-32C with a CPU instruction where there is one, over a
// thousand times faster than dyngraph.Read decodes the graph it guards, so
// the extra verification pass costs next to nothing.
//
// statedir knows nothing of what a checkpoint holds; the service composes
// the content (the graph of dyngraph.WriteTo, the dictionaries, the input
// offsets the checkpoint covers). A directory belongs to one process at a
// time: Open takes an flock on its LOCK file, which the kernel releases when
// the process ends however it ends, and refuses a directory whose lock
// another process holds, naming that process's pid, which the holder writes
// into the file.
package statedir
