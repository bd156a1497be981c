package seqno

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/windows"
)

// timeOfDay is the kernel's SYSTEM_TIMEOFDAY_INFORMATION.
type timeOfDay struct {
	BootTime      int64 // in 100 ns since 1601
	CurrentTime   int64
	TimeZoneBias  int64
	TimeZoneID    uint32
	_             uint32
	BootTimeBias  uint64
	SleepTimeBias uint64
}

// CurrentBootID names the running boot by the time the kernel records it
// began at (see bootTimeID): Windows keeps no random boot id.
func CurrentBootID() (BootID, error) {
	var t timeOfDay
	if err := windows.NtQuerySystemInformation(windows.SystemTimeOfDayInformation, unsafe.Pointer(&t), uint32(unsafe.Sizeof(t)), nil); err != nil {
		return BootID{}, fmt.Errorf("%w: NtQuerySystemInformation: %w", ErrNoBootID, err)
	}
	return bootTimeID(t.BootTime/10_000_000, t.BootTime%10_000_000)
}
