package mirror

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/tallybloom/tallybloom/engine"
)

// TestDirtyBlocks: the record of changed blocks counts each block once,
// gives runs of adjacent blocks as one span, level by level, and empties
// when taken.
func TestDirtyBlocks(t *testing.T) {
	var d dirty
	d.mark(2, 0, 64)
	d.mark(0, 64*100, 64)
	d.mark(0, 64*101+8, 8) // a word of a flat sub-filter
	d.mark(0, 64*100, 64)  // again
	d.mark(0, 64*63, 130)  // three blocks, across a word of the bitmap
	d.mark(2, 64*5, 0)     // nothing
	assert.Equal(t, 6, d.blocks)
	assert.Equal(t, []engine.Span{
		{Level: 0, Offset: 64 * 63, Bytes: 3 * 64},
		{Level: 0, Offset: 64 * 100, Bytes: 2 * 64},
		{Level: 2, Offset: 0, Bytes: 64},
	}, d.take())
	assert.Zero(t, d.blocks)
	assert.Empty(t, d.take())
}

// TestCutSpans: cut takes spans up to a number of bytes, cutting a long
// span where the limit falls, or up to a number of spans.
func TestCutSpans(t *testing.T) {
	spans := []engine.Span{span(0, 0, 128), span(0, 512, 256), span(1, 0, 64)}
	first, rest := cut(spans, 256, 10)
	assert.Equal(t, []engine.Span{span(0, 0, 128), span(0, 512, 128)}, first)
	assert.Equal(t, []engine.Span{span(0, 640, 128), span(1, 0, 64)}, rest)
	assert.Equal(t, []engine.Span{span(0, 0, 128), span(0, 512, 256), span(1, 0, 64)}, spans, "spans are not changed")

	first, rest = cut(spans, 128, 10)
	assert.Equal(t, spans[:1], first)
	assert.Equal(t, spans[1:], rest)

	first, rest = cut(spans, 4096, 2)
	assert.Equal(t, spans[:2], first)
	assert.Equal(t, spans[2:], rest)

	first, rest = cut(spans, 4096, 10)
	assert.Equal(t, spans, first)
	assert.Empty(t, rest)
}

func span(level int, offset, bytes uint64) engine.Span {
	return engine.Span{Level: level, Offset: offset, Bytes: bytes}
}
