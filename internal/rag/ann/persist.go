package ann

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
)

// The file keeps what is costly to compute: the centroids and each ordinal's
// list. The codes are not kept (re-quantising is a fast pass over the caller's
// vectors, and they would quadruple the file), so reading needs the vectors.
//
//	magic "HXANN1\n\x00" | dim u32 | lists u32 | ordinals u32 | tag u64
//	centroids lists×dim f32 | assign ordinals×u32 | crc32c of all before it
//
// All little-endian. tag is the caller's: what the ordinals must still mean for
// the file to apply (the embedded store keeps a checksum of the vectors there).
const magic = "HXANN1\n\x00"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt is wrapped by Read's error for a file that is not a whole,
// undamaged index file.
var ErrCorrupt = errors.New("ann: the index file is damaged")

// Write writes the index to w with the caller's tag.
func (x *Index) Write(w io.Writer, tag uint64) error {
	crc := crc32.New(castagnoli)
	bw := bufio.NewWriterSize(io.MultiWriter(w, crc), 1<<16)
	var buf [8]byte
	u32 := func(v uint32) {
		binary.LittleEndian.PutUint32(buf[:4], v)
		bw.Write(buf[:4])
	}
	bw.WriteString(magic)
	u32(uint32(x.dim))
	u32(uint32(len(x.lists)))
	u32(uint32(len(x.assign)))
	binary.LittleEndian.PutUint64(buf[:], tag)
	bw.Write(buf[:])
	for _, f := range x.centroids {
		u32(math.Float32bits(f))
	}
	for _, l := range x.assign {
		u32(l)
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	binary.LittleEndian.PutUint32(buf[:4], crc.Sum32())
	_, err := w.Write(buf[:4])
	return err
}

// Header is what a file says about itself before its body.
type Header struct {
	Dim, Lists, Ordinals int
	Tag                  uint64
}

// Read reads an index written by Write, re-quantising each ordinal's vector
// read through vec (which must return the vector the ordinal had when it was
// written; nil, or a wrong dimension, is an error: the file does not apply).
// check is called with the header before the body is read, and may refuse it.
// A file cut short or failing its checksum is an error wrapping [ErrCorrupt].
func Read(r io.Reader, check func(Header) error, vec func(ord int) []float32) (*Index, error) {
	crc := crc32.New(castagnoli)
	br := bufio.NewReaderSize(r, 1<<16)
	tr := io.TeeReader(br, crc)
	var buf [8]byte
	full := func(n int) error {
		if _, err := io.ReadFull(tr, buf[:n]); err != nil {
			return fmt.Errorf("%w: cut short (%v)", ErrCorrupt, err)
		}
		return nil
	}
	var m [len(magic)]byte
	if _, err := io.ReadFull(tr, m[:]); err != nil || string(m[:]) != magic {
		return nil, fmt.Errorf("%w: not an index file of this version", ErrCorrupt)
	}
	var h Header
	for _, p := range []*int{&h.Dim, &h.Lists, &h.Ordinals} {
		if err := full(4); err != nil {
			return nil, err
		}
		*p = int(binary.LittleEndian.Uint32(buf[:4]))
	}
	if err := full(8); err != nil {
		return nil, err
	}
	h.Tag = binary.LittleEndian.Uint64(buf[:])
	// Sizes bounded before anything is allocated by them: a damaged header
	// must not ask for gigabytes.
	if h.Dim <= 0 || h.Dim > 1<<16 || h.Lists <= 0 || h.Lists > 1<<24 || h.Ordinals > 1<<31 || h.Lists*h.Dim > 1<<28 {
		return nil, fmt.Errorf("%w: impossible sizes (dim %d, lists %d, ordinals %d)", ErrCorrupt, h.Dim, h.Lists, h.Ordinals)
	}
	if check != nil {
		if err := check(h); err != nil {
			return nil, err
		}
	}
	cents := make([]float32, h.Lists*h.Dim)
	for i := range cents {
		if err := full(4); err != nil {
			return nil, err
		}
		cents[i] = math.Float32frombits(binary.LittleEndian.Uint32(buf[:4]))
		if f := cents[i]; math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			return nil, fmt.Errorf("%w: a centroid holds NaN or infinity", ErrCorrupt)
		}
	}
	assign := make([]uint32, 0, min(h.Ordinals, 1<<20))
	for range h.Ordinals {
		if err := full(4); err != nil {
			return nil, err
		}
		l := binary.LittleEndian.Uint32(buf[:4])
		if l != noList && int(l) >= h.Lists {
			return nil, fmt.Errorf("%w: an ordinal names list %d of %d", ErrCorrupt, l, h.Lists)
		}
		assign = append(assign, l)
	}
	sum := crc.Sum32()
	if _, err := io.ReadFull(br, buf[:4]); err != nil {
		return nil, fmt.Errorf("%w: the checksum is missing", ErrCorrupt)
	}
	if binary.LittleEndian.Uint32(buf[:4]) != sum {
		return nil, fmt.Errorf("%w: checksum mismatch", ErrCorrupt)
	}
	x, err := New(h.Dim, cents)
	if err != nil {
		return nil, err
	}
	x.grow(h.Ordinals)
	for ord, l := range assign {
		if l == noList {
			continue
		}
		v := vec(ord)
		if len(v) != h.Dim {
			return nil, fmt.Errorf("ann: ordinal %d has no %d-dimensional vector any more", ord, h.Dim)
		}
		x.place(uint32(ord), l, v)
	}
	return x, nil
}
