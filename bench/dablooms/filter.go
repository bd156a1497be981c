//go:build dablooms && cgo

package dablooms

/*
#include <stdio.h>
#include <stdlib.h>
#include <dablooms.h>

// quiet sends what dablooms writes to C's stderr (a line for every counter
// an add finds at 15, and for every failure) to /dev/null: the benchmarks
// add the same keys many times over, and each such line would land in the
// report's output. Go's own output goes to file descriptor 2, not through
// this stream, and is untouched. It is called once.
static void quiet(void) {
	FILE *null = fopen("/dev/null", "w");
	if (null != NULL) {
		stderr = null;
	}
}

static int nothing(int x) { return x; }
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"unsafe"
)

// ErrCreate is New's error when dablooms cannot make its file.
var ErrCreate = errors.New("dablooms: cannot create the filter")

var quietOnce sync.Once

// Filter is a dablooms scaling filter in a file: 4-bit counters in
// sub-filters of the capacity it was created with, the first built for 0.5
// of the error rate and each next one for half the one before. dablooms
// opens a new sub-filter only for an id above every id it has seen once the
// newest is full; keys added with one id stay in the first.
type Filter struct {
	f    *C.scaling_bloom_t
	path string
}

// New creates a filter of capacity keys a sub-filter at errorRate in path.
func New(capacity uint32, errorRate float64, path string) (*Filter, error) {
	quietOnce.Do(func() { C.quiet() })
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	f := C.new_scaling_bloom(C.uint(capacity), C.double(errorRate), cpath)
	if f == nil {
		return nil, fmt.Errorf("%w: %s", ErrCreate, path)
	}
	return &Filter{f: f, path: path}, nil
}

// key is a pointer to key's bytes for dablooms, which reads them during the
// call only, and a pointer to a byte for an empty key, which it then does
// not read.
func key(k []byte) *C.char {
	if len(k) == 0 {
		return (*C.char)(unsafe.Pointer(&empty))
	}
	return (*C.char)(unsafe.Pointer(unsafe.SliceData(k)))
}

var empty byte

// Add adds k with id.
func (f *Filter) Add(k []byte, id uint64) {
	C.scaling_bloom_add(f.f, key(k), C.size_t(len(k)), C.uint64_t(id))
}

// Remove removes k, added with id. Like every counting filter, dablooms
// lowers the counters of a key it does not hold, and its own check is the
// caller's to make.
func (f *Filter) Remove(k []byte, id uint64) {
	C.scaling_bloom_remove(f.f, key(k), C.size_t(len(k)), C.uint64_t(id))
}

// Check reports whether some sub-filter may hold k.
func (f *Filter) Check(k []byte) bool {
	return C.scaling_bloom_check(f.f, key(k), C.size_t(len(k))) == 1
}

// SubFilters is the number of sub-filters dablooms has opened.
func (f *Filter) SubFilters() int { return int(f.f.num_blooms) }

// Bytes is the size of the filter's file: its headers and counters.
func (f *Filter) Bytes() uint64 {
	info, err := os.Stat(f.path)
	if err != nil {
		return 0
	}
	return uint64(info.Size())
}

// Close unmaps the filter, closes and removes its file.
func (f *Filter) Close() error {
	C.free_scaling_bloom(f.f)
	f.f = nil
	return os.Remove(f.path)
}

// Call calls a C function that returns its argument: the cost of a call
// from Go into C, which every call of a Filter pays.
func Call(x int) int { return int(C.nothing(C.int(x))) }
