//go:build !purego && linux

package simd

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/lanesgo/lanes/dispatch"
)

// TestPackCopying checks the levels' copying packs of B (packN) against
// the Go loop they replace: every column count from 1 to three panels (full
// panels and the masked partial one), several depths and row strides,
// values that must come through bit for bit, and a canary after the
// panels. B's block ends at the end of a page whose successor is not
// mapped, so a load of anything past its last column faults.
func TestPackCopying(t *testing.T) {
	t.Run("float32", func(t *testing.T) {
		testPackCopying(t, []float32{float32(math.NaN()), math.Float32frombits(0x7fc01234), float32(math.Copysign(0, -1)), math.Float32frombits(1), float32(math.Inf(-1))})
	})
	t.Run("float64", func(t *testing.T) {
		testPackCopying(t, []float64{math.NaN(), math.Float64frombits(0x7ff8000000012345), math.Copysign(0, -1), math.Float64frombits(1), math.Inf(-1)})
	})
}

func testPackCopying[T float](t *testing.T, specials []T) {
	page := unix.Getpagesize()
	mem, err := unix.Mmap(-1, 0, 64*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Skipf("mmap: %v", err)
	}
	defer unix.Munmap(mem)
	if err := unix.Mprotect(mem[63*page:], unix.PROT_NONE); err != nil {
		t.Fatalf("mprotect: %v", err)
	}
	size := int(unsafe.Sizeof(T(0)))
	room := unsafe.Slice((*T)(unsafe.Pointer(&mem[0])), 63*page/size) // ends at the guard page
	forEachLevel(t, func(t *testing.T, l dispatch.Level) {
		kern := familyOf[T]().kernels.get()
		if kern.packN == nil {
			t.Skip("no copying pack at this level")
		}
		goKern := *kern
		goKern.packN = nil
		r := rand.New(rand.NewPCG(23, uint64(l)))
		const canary = -12345.5
		nr := kern.nr
		for _, kc := range []int{1, 2, 3, 7, 16} { // gemmRange never packs kc = 0
			for cols := 1; cols <= 3*nr; cols++ {
				for _, extra := range []int{0, 5} {
					ld := cols + extra
					n := (kc-1)*ld + cols
					b := room[len(room)-n:]
					fill(r, b, 1, 0)
					for i, v := range specials {
						b[(i*7907)%n] = v
					}
					ncp := (cols + nr - 1) / nr * nr
					got, want := make([]T, ncp*kc+1), make([]T, ncp*kc+1)
					for i := range got {
						got[i] = canary - 1 // stale values the zero columns must overwrite
					}
					got[ncp*kc], want[ncp*kc] = canary, canary
					packB(kern, got, b, ld, false, 0, kc, 0, cols)
					packB(&goKern, want, b, ld, false, 0, kc, 0, cols)
					comparePacked(t, fmt.Sprintf("packB kc=%d cols=%d ld=%d", kc, cols, ld), got, want)
				}
			}
		}
	})
}
