package dispatch

import (
	"fmt"
	"log"
	"os"
	"strings"
	"sync/atomic"
)

// Level is an instruction-set level a kernel can run at.
type Level int32

// The levels, in the order amd64 ranks them. NEON is the only SIMD level on arm64.
const (
	Generic Level = iota // portable Go
	AVX2                 // amd64: AVX2 + FMA, 256-bit vectors
	AVX512               // amd64: AVX-512 F/BW/DQ/VL, 512-bit vectors and mask registers
	NEON                 // arm64: Advanced SIMD, 128-bit vectors

	// NumLevels is one more than the largest Level; kernel tables are indexed by Level.
	NumLevels = int(NEON) + 1
)

var levelNames = [NumLevels]string{"generic", "avx2", "avx512", "neon"}

// String returns the lower-case name used by LANES_SIMD and in benchmark names.
func (l Level) String() string {
	if l >= 0 && int(l) < NumLevels {
		return levelNames[l]
	}
	return fmt.Sprintf("Level(%d)", int32(l))
}

// ParseLevel parses a level name as String writes it (case-insensitive).
func ParseLevel(s string) (Level, error) {
	for i, n := range levelNames {
		if strings.EqualFold(strings.TrimSpace(s), n) {
			return Level(i), nil
		}
	}
	return Generic, fmt.Errorf("dispatch: unknown level %q (want generic, avx2, avx512 or neon)", s)
}

var (
	detected Level        // best level of this CPU in this build; set once in init
	active   atomic.Int32 // the level kernels run at now
	envNote  string       // what LANES_SIMD did, for Report
	envLevel Level        // the level LANES_SIMD led to
)

// Detected returns the best level this CPU supports in this build.
func Detected() Level { return detected }

// Active returns the level kernels run at now. It is one atomic load.
func Active() Level { return Level(active.Load()) }

// Supports reports whether kernels can run at l on this CPU in this build.
func Supports(l Level) bool {
	switch l {
	case Generic:
		return true
	case AVX2:
		return detected == AVX2 || detected == AVX512
	case AVX512:
		return detected == AVX512
	case NEON:
		return detected == NEON
	}
	return false
}

// Levels returns every level this CPU supports, lowest first; Generic is always first.
func Levels() []Level {
	var ls []Level
	for l := Generic; int(l) < NumLevels; l++ {
		if Supports(l) {
			ls = append(ls, l)
		}
	}
	return ls
}

// SetLevel makes l the active level and returns the previous one. It refuses a
// level the CPU lacks, leaving the active level unchanged. It is safe to call
// concurrently with running kernels: each kernel call reads the level once.
func SetLevel(l Level) (prev Level, err error) {
	if !Supports(l) {
		return Active(), fmt.Errorf("dispatch: level %v not supported on this CPU (detected %v)", l, detected)
	}
	return Level(active.Swap(int32(l))), nil
}

// clamp returns the best supported level at or below want: AVX512 falls back to
// AVX2, and a level of another architecture falls back to Generic.
func clamp(want Level) Level {
	switch {
	case Supports(want):
		return want
	case want == AVX512 && Supports(AVX2):
		return AVX2
	}
	return Generic
}

func init() {
	detected = detect()
	active.Store(int32(detected))
	applyEnv(os.Getenv("LANES_SIMD"), log.Printf)
}

// applyEnv honours a LANES_SIMD request and records what it did for Report.
// A value that is not a level name leaves the detected level in force and
// is reported through warn (log.Printf: once, at start-up) and by Report.
func applyEnv(v string, warn func(string, ...any)) {
	envNote = ""
	if v == "" {
		return
	}
	want, err := ParseLevel(v)
	if err != nil {
		got := detected
		envLevel = got
		active.Store(int32(got))
		envNote = fmt.Sprintf("LANES_SIMD=%s not understood; using %v, the best level detected", quoted(v, maxReportString), got)
		warn("lanes: LANES_SIMD=%s is not a level name (generic, avx2, avx512 or neon); using %v, the best level detected", quoted(v, maxReportString), got)
		return
	}
	shown := v
	if v != want.String() {
		shown = quoted(v, maxReportString) // " AVX2\n" is accepted, but printed as written it would break Report's line
	}
	got := clamp(want)
	envLevel = got
	active.Store(int32(got))
	if got == want {
		envNote = fmt.Sprintf("LANES_SIMD=%s", shown)
	} else {
		envNote = fmt.Sprintf("LANES_SIMD=%s clamped to %v: this CPU (in this build) has at most %v", shown, got, detected)
	}
}
