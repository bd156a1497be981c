// Package prefetch asks the processor for a cache line ahead of its use,
// without waiting for it: a writer asks for the block a change will write
// before it waits for the writer's lock, so that the cache miss runs while
// it waits.
//
// On amd64 and arm64 Line is one prefetch instruction, in assembly; on other
// architectures it does nothing.
package prefetch
