package peers

import (
	"bufio"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The C anchor: gccloops/gccloops.c holds the plain loops of the suite's ops,
// which GCC builds at first use with gcc -O3 -march=native -ffast-math
// (vectorized for this CPU, reductions reassociated) when a gcc is on PATH,
// and the read-bandwidth probe of Roofline. The loops are timed inside that
// program the way Measure times Go calls, one process per cell (GCCTime; or
// GCCServer, whose rounds the main job interleaves with the Go ones), so no
// cgo call overhead enters the figures and this module builds without a C
// compiler.

//go:embed gccloops/gccloops.c
var gccLoopsSrc []byte

// GCCFlags are the flags of the C anchor.
var GCCFlags = []string{"-O3", "-march=native", "-ffast-math"}

var gccBuild struct {
	once sync.Once
	dir  string
	bin  string
	ops  map[string]bool
	err  error
}

// ErrNoGCC is GCC's error when no gcc is on PATH.
var ErrNoGCC = errors.New("peers: no gcc on PATH: the C anchor is skipped")

// GCC builds the C anchor on its first call, in a temporary directory that
// GCCCleanup removes, and returns the names of the ops it has loops for, or
// ErrNoGCC, or the compiler's error.
func GCC() (map[string]bool, error) {
	b := &gccBuild
	b.once.Do(func() {
		cc, err := exec.LookPath("gcc")
		if err != nil {
			b.err = ErrNoGCC
			return
		}
		if b.dir, err = os.MkdirTemp("", "lanes-gccloops-"); err != nil {
			b.err = err
			return
		}
		src := filepath.Join(b.dir, "gccloops.c")
		if err := os.WriteFile(src, gccLoopsSrc, 0o644); err != nil {
			b.err = err
			return
		}
		bin := filepath.Join(b.dir, "gccloops")
		args := append(append([]string{}, GCCFlags...), "-o", bin, src, "-lm")
		if out, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
			b.err = fmt.Errorf("peers: gcc %s: %v\n%s", strings.Join(args, " "), err, out)
			return
		}
		out, err := exec.Command(bin, "-list").Output()
		if err != nil {
			b.err = fmt.Errorf("peers: %s -list: %v", bin, err)
			return
		}
		b.bin, b.ops = bin, map[string]bool{}
		for _, name := range strings.Fields(string(out)) {
			b.ops[name] = true
		}
	})
	return b.ops, b.err
}

// GCCCleanup removes the C anchor's binary and source; the process calls
// it when done with the anchor (GCCTime fails after it).
func GCCCleanup() {
	if gccBuild.dir != "" {
		os.RemoveAll(gccBuild.dir)
	}
}

// GCCTime returns the C anchor's nanoseconds per call of op at length n,
// timed as Measure times (rounds rounds of about round each, the median). Ops
// without a C loop (see GCC) are an error.
func GCCTime(op string, n int, round time.Duration, rounds int) (float64, error) {
	ops, err := GCC()
	if err != nil {
		return 0, err
	}
	if !ops[op] && op != "Read" {
		return 0, fmt.Errorf("peers: the C anchor has no loop for %s", op)
	}
	bin := gccBuild.bin
	out, err := exec.Command(bin, op, strconv.Itoa(n), strconv.FormatInt(round.Nanoseconds(), 10), strconv.Itoa(rounds)).Output()
	if err != nil {
		return 0, fmt.Errorf("peers: %s %s %d: %v", bin, op, n, err)
	}
	ns, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
	if err != nil || !(ns > 0) {
		return 0, fmt.Errorf("peers: %s %s %d: output %q", bin, op, n, out)
	}
	return ns, nil
}

// GCCServer is the C anchor's loop of one op at one length, in a child
// process (gccloops -serve) that has calibrated a call count for rounds of
// about round and times one round on each request: the main job interleaves
// these rounds with the Go implementations' (MeasureAllRemote), so that the
// C column sees the same load as the others rather than the machine's state
// after them. The child has its own arrays (malloc'd, initialized and warmed
// as GCCTime's).
type GCCServer struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
	err error
}

// StartGCC starts op's server at length n; Close ends it.
func StartGCC(op string, n int, round time.Duration) (*GCCServer, error) {
	ops, err := GCC()
	if err != nil {
		return nil, err
	}
	if !ops[op] {
		return nil, fmt.Errorf("peers: the C anchor has no loop for %s", op)
	}
	cmd := exec.Command(gccBuild.bin, "-serve", op, strconv.Itoa(n), strconv.FormatInt(round.Nanoseconds(), 10))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	g := &GCCServer{cmd: cmd, in: in, out: bufio.NewReader(out)}
	if line, err := g.out.ReadString('\n'); err != nil || line != "ready\n" {
		g.Close()
		return nil, fmt.Errorf("peers: gccloops -serve %s %d: %q, %v", op, n, line, err)
	}
	return g, nil
}

// Round runs one round in the child and returns its ns per call.
func (g *GCCServer) Round() (float64, error) {
	if g.err != nil {
		return 0, g.err
	}
	var line string
	if _, g.err = io.WriteString(g.in, "round\n"); g.err == nil {
		line, g.err = g.out.ReadString('\n')
	}
	if g.err != nil {
		return 0, fmt.Errorf("peers: gccloops -serve: %v", g.err)
	}
	ns, err := strconv.ParseFloat(strings.TrimSpace(line), 64)
	if err != nil || !(ns > 0) {
		g.err = fmt.Errorf("peers: gccloops -serve: output %q", line)
		return 0, g.err
	}
	return ns, nil
}

// Close ends the child (its stdin closes) and waits for it.
func (g *GCCServer) Close() error {
	g.in.Close()
	return g.cmd.Wait()
}

type roofKey struct {
	read  bool
	bytes int64
}

var roof struct {
	sync.Mutex
	cache map[roofKey]float64
}

// Roofline returns the memory bandwidth, in bytes per nanosecond (GB/s), that
// bounds op at length n, measured at the same working-set size (op.Bytes(n)):
// for ReadOnly ops the C anchor's read probe over that many bytes (rounded up
// to 512; an error without gcc), for the others Go's copy moving that many
// bytes, half read and half written. Figures are cached per size and kind.
func Roofline(op Op, n int, round time.Duration, rounds int) (float64, error) {
	k := roofKey{op.ReadOnly, op.Bytes(n)}
	roof.Lock()
	defer roof.Unlock()
	if bw, ok := roof.cache[k]; ok {
		return bw, nil
	}
	var bw float64
	if k.read {
		size := (k.bytes + 511) / 512 * 512
		ns, err := GCCTime("Read", int(size), round, rounds)
		if err != nil {
			return 0, err
		}
		bw = float64(size) / ns
	} else {
		half := int(k.bytes / 2)
		src, dst := make([]byte, half), make([]byte, half)
		bw = float64(2*half) / Measure(func() { copy(dst, src) }, round, rounds)
	}
	if roof.cache == nil {
		roof.cache = map[roofKey]float64{}
	}
	roof.cache[k] = bw
	return bw, nil
}
