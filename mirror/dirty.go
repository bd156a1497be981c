package mirror

import (
	"maps"
	"math/bits"
	"slices"

	"github.com/tallybloom/tallybloom/engine"
)

// blockBytes is the size of a block of counters, the unit a full copy
// records as changed and reads again.
const blockBytes = 64

// dirty is the set of blocks changes touched while a full copy is written:
// one bit a 64-byte block of each level, so a copy of many gigabytes
// tracks what changed under it in a 512th of its size at most, however
// many changes there were.
type dirty struct {
	levels map[int][]uint64 // bit b of word w: the block at byte (64w+b)*64
	blocks int              // bits set
}

// mark records that the bytes from offset, length long, of level changed.
func (d *dirty) mark(level int, offset uint64, length uint64) {
	if length == 0 {
		return
	}
	if d.levels == nil {
		d.levels = map[int][]uint64{}
	}
	words := d.levels[level]
	for b := offset / blockBytes; b <= (offset+length-1)/blockBytes; b++ {
		w := b / 64
		if w >= uint64(len(words)) {
			words = append(words, make([]uint64, int(w)+1-len(words))...)
		}
		if words[w]&(1<<(b%64)) == 0 {
			words[w] |= 1 << (b % 64)
			d.blocks++
		}
	}
	d.levels[level] = words
}

// markWrites marks the blocks writes touched.
func (d *dirty) markWrites(writes []engine.CounterWrite) {
	for _, w := range writes {
		d.mark(w.Level, w.Offset, uint64(len(w.Bytes)))
	}
}

// merge marks the blocks o marked.
func (d *dirty) merge(o *dirty) {
	if d.levels == nil {
		d.levels = map[int][]uint64{}
	}
	for level, theirs := range o.levels {
		ours := d.levels[level]
		if len(ours) < len(theirs) {
			ours = append(ours, make([]uint64, len(theirs)-len(ours))...)
		}
		for w, word := range theirs {
			d.blocks += bits.OnesCount64(word &^ ours[w])
			ours[w] |= word
		}
		d.levels[level] = ours
	}
}

// take returns the blocks marked, runs of adjacent ones as one span,
// level by level, and forgets them.
func (d *dirty) take() []engine.Span {
	var spans []engine.Span
	for _, level := range slices.Sorted(maps.Keys(d.levels)) {
		for w, word := range d.levels[level] {
			for word != 0 {
				b := uint64(64*w + bits.TrailingZeros64(word))
				word &= word - 1
				if n := len(spans); n > 0 && spans[n-1].Level == level && spans[n-1].Offset+spans[n-1].Bytes == b*blockBytes {
					spans[n-1].Bytes += blockBytes
					continue
				}
				spans = append(spans, engine.Span{Level: level, Offset: b * blockBytes, Bytes: blockBytes})
			}
		}
	}
	d.levels, d.blocks = nil, 0
	return spans
}

// cut splits spans into the first ones that take at most limit bytes and
// count at most maxSpans, a long span cut where the limit falls, and the
// rest.
func cut(spans []engine.Span, limit uint64, maxSpans int) (first, rest []engine.Span) {
	total := uint64(0)
	for i, s := range spans {
		if i == maxSpans || total == limit {
			return spans[:i], spans[i:]
		}
		if total+s.Bytes > limit {
			head := s
			head.Bytes = limit - total
			tail := s
			tail.Offset, tail.Bytes = s.Offset+head.Bytes, s.Bytes-head.Bytes
			return append(slices.Clone(spans[:i]), head), append([]engine.Span{tail}, spans[i+1:]...)
		}
		total += s.Bytes
	}
	return spans, nil
}
