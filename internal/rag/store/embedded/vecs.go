package embedded

import (
	"hash/crc32"
	"io"
	"unsafe"
)

// vecPage is the number of vectors on one heap page of vectorSlab.
const vecPage = 4096

// vectorSlab holds dim float32s per chunk ordinal (zeros for chunks without
// vectors): the first in base (the saved index's mapping, outside the Go
// heap, or one heap slice), the rest on heap pages of vecPage vectors, so
// that a put neither copies base nor grows one huge slice. Puts only append:
// a vector never changes once added, which lets a frozen copy share them.
type vectorSlab struct {
	dim   int
	base  []float32
	pages [][]float32
	n     int // vectors held
}

// len returns the number of vectors held.
func (v *vectorSlab) len() int { return v.n }

// at returns vector ord.
func (v *vectorSlab) at(ord int) []float32 {
	nb := len(v.base) / v.dim
	if ord < nb {
		return v.base[ord*v.dim : (ord+1)*v.dim : (ord+1)*v.dim]
	}
	i := ord - nb
	p := v.pages[i/vecPage]
	j := i % vecPage
	return p[j*v.dim : (j+1)*v.dim : (j+1)*v.dim]
}

// add appends a vector (zeros when vec is nil).
func (v *vectorSlab) add(vec []float32) {
	nb := len(v.base) / v.dim
	if (v.n-nb)%vecPage == 0 {
		v.pages = append(v.pages, make([]float32, 0, vecPage*v.dim))
	}
	p := &v.pages[len(v.pages)-1]
	if vec == nil {
		*p = append(*p, make([]float32, v.dim)...)
	} else {
		*p = append(*p, vec[:v.dim]...)
	}
	v.n++
}

// frozen returns a copy that later adds do not change (they append past
// every page's present length).
func (v *vectorSlab) frozen() vectorSlab {
	f := *v
	f.pages = make([][]float32, len(v.pages))
	for i, p := range v.pages {
		f.pages[i] = p[:len(p):len(p)]
	}
	return f
}

// pieces calls fn with the first n vectors' floats, in order, in as few
// contiguous pieces as they are held in; it stops at fn's first error.
func (v *vectorSlab) pieces(n int, fn func([]float32) error) error {
	want := n * v.dim
	for _, p := range append([][]float32{v.base}, v.pages...) {
		if want == 0 {
			return nil
		}
		k := min(len(p), want)
		if k > 0 {
			if err := fn(p[:k]); err != nil {
				return err
			}
		}
		want -= k
	}
	return nil
}

// checksum returns the CRC32-C of the first n vectors' bytes.
func (v *vectorSlab) checksum(n int) uint32 {
	var sum uint32
	v.pieces(n, func(p []float32) error {
		sum = crc32.Update(sum, crcTable, floatBytes(p))
		return nil
	})
	return sum
}

// writeTo writes the first n vectors' bytes to w.
func (v *vectorSlab) writeTo(w io.Writer, n int) error {
	return v.pieces(n, func(p []float32) error {
		_, err := w.Write(floatBytes(p))
		return err
	})
}

// floatBytes is p's memory as bytes.
func floatBytes(p []float32) []byte {
	if len(p) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&p[0])), len(p)*4)
}
