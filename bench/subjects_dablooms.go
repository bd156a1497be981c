//go:build dablooms && cgo

package bench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"

	"github.com/tallybloom/tallybloom/bench/dablooms"
)

func init() {
	Libraries = append(Libraries, Dablooms)
	optional[Dablooms] = func(n uint64, dir string) (Subject, error) {
		if n > math.MaxUint32 {
			return nil, fmt.Errorf("bench: dablooms counts a capacity in 32 bits, not %d", n)
		}
		// dablooms builds its first sub-filter for half the rate it is
		// given (its tightening ratio is 0.5), so it is given twice the
		// rate, and its one sub-filter is built for 1% as the others are:
		// every key is added with one id, which never opens another.
		f, err := dablooms.New(uint32(n), 2*ErrorRate, filepath.Join(dir, fmt.Sprintf("bench-%d.dablooms", rand.Uint64())))
		if err != nil {
			return nil, err
		}
		return &dabloomsSubject{f: f}, nil
	}
}

// dabloomsSubject is a dablooms filter whose keys all have tallyID, as
// tallybloom's do.
type dabloomsSubject struct{ f *dablooms.Filter }

func (d *dabloomsSubject) Add(key []byte)           { d.f.Add(key, tallyID) }
func (d *dabloomsSubject) Contains(key []byte) bool { return d.f.Check(key) }
func (d *dabloomsSubject) Bytes() uint64            { return d.f.Bytes() }

func (d *dabloomsSubject) addID(key []byte, id uint64) { d.f.Add(key, id) }
func (d *dabloomsSubject) subFilters() int             { return d.f.SubFilters() }

// Remove removes the key if dablooms finds it, so that, as BoomFilters'
// TestAndRemove, it never lowers the counters of a key it does not hold.
func (d *dabloomsSubject) Remove(key []byte) bool {
	if !d.f.Check(key) {
		return false
	}
	d.f.Remove(key, tallyID)
	return true
}

// Close removes the filter's file.
func (d *dabloomsSubject) Close() error { return d.f.Close() }
