package embedded

import (
	"encoding/binary"
)

// postingBlock is how many postings a block of a posting list holds. A block is
// the unit of compression (its ordinals are delta-encoded varints) and of
// skipping: a query that needs no chunk of a block passes it by its last
// ordinal without decoding it.
const postingBlock = 128

// postingList is one term's postings in one field, by increasing chunk
// ordinal. Full blocks are sealed into data (delta + varint, about two bytes a
// posting where an uncompressed posting takes eight); the last, partial block
// stays as plain postings so that appending stays cheap.
type postingList struct {
	blocks []blockMeta
	data   []byte
	tail   []posting
}

// blockMeta describes a sealed block: enough to skip it (last) and to bound
// the BM25 score of any of its postings (maxTF, minLen) without decoding it.
type blockMeta struct {
	off    uint32 // of its bytes in data
	last   uint32 // its greatest ordinal
	maxTF  uint32
	minLen uint32 // the shortest field among its chunks (BM25 favours short ones)
}

// add appends a posting; ord must be greater than every ordinal in the list.
// lengths gives a chunk's field length, for the bound of the block it seals.
func (p *postingList) add(ord, tf uint32, lengths func(uint32) uint32) {
	p.tail = append(p.tail, posting{ord: ord, tf: tf})
	if len(p.tail) == postingBlock {
		p.seal(lengths)
	}
}

// seal encodes the tail as a block.
func (p *postingList) seal(lengths func(uint32) uint32) {
	m := blockMeta{off: uint32(len(p.data)), last: p.tail[len(p.tail)-1].ord, minLen: ^uint32(0)}
	prev := uint32(0)
	if n := len(p.blocks); n > 0 {
		prev = p.blocks[n-1].last
	}
	for _, q := range p.tail {
		p.data = binary.AppendUvarint(p.data, uint64(q.ord-prev))
		p.data = binary.AppendUvarint(p.data, uint64(q.tf))
		prev = q.ord
		m.maxTF = max(m.maxTF, q.tf)
		m.minLen = min(m.minLen, lengths(q.ord))
	}
	p.blocks = append(p.blocks, m)
	// A new tail: the old one may be in the saved index's mapping (read
	// only), or shared with a frozen copy.
	p.tail = make([]posting, 0, postingBlock)
}

// len returns the number of postings (live or not).
func (p *postingList) len() int { return len(p.blocks)*postingBlock + len(p.tail) }

// compact trims spare capacity, for lists that will not grow soon (after a
// rebuild).
func (p *postingList) compact() {
	p.blocks = append([]blockMeta(nil), p.blocks...)
	p.data = append([]byte(nil), p.data...)
	if len(p.tail) == 0 {
		p.tail = nil
	} else {
		p.tail = append([]posting(nil), p.tail...)
	}
}

// cursor walks a posting list block by block.
type cursor struct {
	list *postingList
	blk  int // the block buf holds; len(list.blocks) for the tail
	buf  []posting
	i    int // position in buf
	ord  uint32
	done bool
}

// exhausted is an ordinal past every chunk, the ordinal of a spent cursor.
const exhausted = ^uint32(0)

func newCursor(p *postingList, buf []posting) *cursor {
	c := &cursor{list: p, buf: buf[:0], blk: -1}
	c.load(0)
	return c
}

// load decodes block b (or the tail) and moves to its first posting.
func (c *cursor) load(b int) {
	p := c.list
	c.blk, c.i = b, 0
	switch {
	case b < len(p.blocks):
		m := p.blocks[b]
		prev := uint32(0)
		if b > 0 {
			prev = p.blocks[b-1].last
		}
		data := p.data[m.off:]
		c.buf = c.buf[:0]
		for range postingBlock {
			d, n := binary.Uvarint(data)
			data = data[n:]
			tf, n := binary.Uvarint(data)
			data = data[n:]
			prev += uint32(d)
			c.buf = append(c.buf, posting{ord: prev, tf: uint32(tf)})
		}
	case b == len(p.blocks) && len(p.tail) > 0:
		c.buf = append(c.buf[:0], p.tail...)
	default:
		c.done, c.ord, c.buf = true, exhausted, c.buf[:0]
		return
	}
	c.ord = c.buf[0].ord
}

// next moves to the following posting.
func (c *cursor) next() {
	if c.done {
		return
	}
	if c.i++; c.i < len(c.buf) {
		c.ord = c.buf[c.i].ord
		return
	}
	c.load(c.blk + 1)
}

// advance moves to the first posting with an ordinal ≥ target, skipping whole
// blocks by their last ordinal.
func (c *cursor) advance(target uint32) {
	if c.done || c.ord >= target {
		return
	}
	p := c.list
	if c.blk < len(p.blocks) && p.blocks[c.blk].last < target {
		b := c.blk + 1
		for b < len(p.blocks) && p.blocks[b].last < target {
			b++
		}
		c.load(b)
		if c.done {
			return
		}
	}
	for c.buf[c.i].ord < target {
		if c.i++; c.i == len(c.buf) {
			c.load(c.blk + 1)
			if c.done {
				return
			}
		}
	}
	c.ord = c.buf[c.i].ord
}

// tf is the current posting's term frequency.
func (c *cursor) tf() uint32 { return c.buf[c.i].tf }
