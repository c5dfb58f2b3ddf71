package dispatch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// A Rule decides, for one operation and one residency, whether work goes to
// the accelerator: it does when GPU is set and
//
//	w.FLOPs >= MinFLOPs + FLOPsPerByte*w.Bytes
//
// This is the shape of the crossover under a linear cost model: the CPU
// spends FLOPs/C, the accelerator a fixed cost per call plus Bytes/B for
// moving the operands plus FLOPs/G. MinFLOPs is the fixed cost and
// FLOPsPerByte the cost of moving one byte, both in CPU FLOP-equivalents.
type Rule struct {
	GPU          bool    // false: the work always stays on the CPU
	MinFLOPs     float64 // the fixed cost of an accelerator call, in FLOPs
	FLOPsPerByte float64 // what moving one byte costs, in FLOPs (0 for device-resident inputs)
}

// Admits reports whether r sends w to the accelerator.
func (r Rule) Admits(w Work) bool {
	return r.GPU && w.FLOPs >= r.MinFLOPs+r.FLOPsPerByte*w.Bytes
}

func (r Rule) String() string {
	switch {
	case !r.GPU:
		return "cpu"
	case r.FLOPsPerByte == 0:
		return fmt.Sprintf("gpu from %.3g FLOPs", r.MinFLOPs)
	}
	return fmt.Sprintf("gpu from %.3g FLOPs + %.3g/byte", r.MinFLOPs, r.FLOPsPerByte)
}

// OpRules are an operation's rules for inputs in host memory (every call
// copies them to the device and the result back) and for inputs already on
// the device. Package tensor follows Host for host tensors; it runs work
// on device tensors on the device whatever Device says (the CPU cannot read
// device memory), so Device answers a program's own question of whether
// work of that size is worth putting on the device.
type OpRules struct {
	Host, Device Rule
}

// Thresholds is the placement policy Place follows when no Placer is
// installed: one pair of rules for MatMul and one for Conv2D, and where
// they were measured. It implements Placer.
type Thresholds struct {
	MatMul, Conv2D OpRules

	// Calibrated is when `go -C bench run ./cmd/calibrate` measured them
	// (zero for the built-in defaults), CPU and Device what it measured
	// on (Device is "" when no accelerator was found) and Margin the
	// fraction added to the measured crossovers.
	Calibrated  time.Time
	CPU, Device string
	Margin      float64
}

// DefaultThresholds returns the built-in thresholds, used until a
// calibration file is found. They are conservative, the CPU unless the
// work is clearly large:
//
//   - inputs in host memory: 1e10 FLOPs (50 ms on a 200 GFLOP/s CPU, still
//     10 ms at 1 TFLOP/s: a hundred times any launch and synchronisation
//     cost) plus 64 FLOPs per byte moved (at 16 GB/s a byte takes as long
//     to copy as a 1 TFLOP/s CPU needs for 62 FLOPs, so the copies alone
//     cannot make the accelerator lose);
//   - inputs on the device: 1e9 FLOPs (5 ms here), no cost per byte.
//
// A measured file replaces them; on most machines with a GPU the measured
// crossovers are lower.
func DefaultThresholds() Thresholds {
	host := Rule{GPU: true, MinFLOPs: 1e10, FLOPsPerByte: 64}
	dev := Rule{GPU: true, MinFLOPs: 1e9}
	return Thresholds{MatMul: OpRules{host, dev}, Conv2D: OpRules{host, dev}}
}

// CPUOnlyThresholds returns thresholds that keep all work on the CPU: what
// calibration writes on a machine without an accelerator.
func CPUOnlyThresholds() Thresholds { return Thresholds{} }

// Rule returns the rule for op and residency; an unknown op gets a rule
// that keeps it on the CPU.
func (t *Thresholds) Rule(op Op, resident bool) Rule {
	var r *OpRules
	switch op {
	case OpMatMul:
		r = &t.MatMul
	case OpConv2D:
		r = &t.Conv2D
	default:
		return Rule{}
	}
	if resident {
		return r.Device
	}
	return r.Host
}

// Place implements Placer: OnGPU when w's rule admits it.
func (t *Thresholds) Place(w Work) Target {
	if t.Rule(w.Op, w.Resident).Admits(w) {
		return OnGPU
	}
	return OnCPU
}

// Describe implements Placer: the four rules on one line.
func (t *Thresholds) Describe() string {
	return fmt.Sprintf("MatMul host %v, device %v; Conv2D host %v, device %v",
		t.MatMul.Host, t.MatMul.Device, t.Conv2D.Host, t.Conv2D.Device)
}

// The thresholds file. Version 1 is a JSON object:
//
//	{
//	  "version": 1,
//	  "calibrated": "2025-06-01T12:00:00Z",        // optional, RFC 3339
//	  "cpu": "AMD EPYC 9B45, 2 threads, avx512",   // optional
//	  "device": "NVIDIA H100 80GB HBM3",           // optional, "" or absent: none
//	  "margin": 0.1,                               // optional
//	  "matmul": {"host":   {"gpu": true, "min_flops": 2.9e9, "flops_per_byte": 31},
//	             "device": {"gpu": true, "min_flops": 6.2e7, "flops_per_byte": 0}},
//	  "conv2d": {"host":   {"gpu": false},
//	             "device": {"gpu": true, "min_flops": 1.1e8, "flops_per_byte": 0}}
//	}
//
// Loading is strict: an unknown version, a missing or unknown field, a key
// spelled in another case ("Version") or given twice, a value of the wrong
// type, a negative or non-finite number, or min_flops and flops_per_byte
// on a rule with "gpu": false reject the whole file.
const thresholdsVersion = 1

type thresholdsFile struct {
	Version    *int      `json:"version"`
	Calibrated string    `json:"calibrated,omitempty"`
	CPU        string    `json:"cpu,omitempty"`
	Device     string    `json:"device,omitempty"`
	Margin     *float64  `json:"margin,omitempty"`
	MatMul     *opRulesF `json:"matmul"`
	Conv2D     *opRulesF `json:"conv2d"`
}

type opRulesF struct {
	Host   *ruleF `json:"host"`
	Device *ruleF `json:"device"`
}

type ruleF struct {
	GPU          *bool    `json:"gpu"`
	MinFLOPs     *float64 `json:"min_flops,omitempty"`
	FLOPsPerByte *float64 `json:"flops_per_byte,omitempty"`
}

// maxThresholdsFile bounds what LoadThresholds reads: a calibrated file
// is under 1 KiB, so a larger one is not a thresholds file.
const maxThresholdsFile = 1 << 20

// ParseThresholds decodes a thresholds file (see the format above).
func ParseThresholds(data []byte) (Thresholds, error) {
	var f thresholdsFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return Thresholds{}, fmt.Errorf("dispatch: thresholds: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Thresholds{}, errors.New("dispatch: thresholds: data after the object")
	}
	// encoding/json matches keys without regard to case and lets a
	// repeated key overwrite the first: look at the keys as written.
	if err := checkKeys(json.NewDecoder(bytes.NewReader(data)), "", fileKeys); err != nil {
		return Thresholds{}, err
	}
	switch {
	case f.Version == nil:
		return Thresholds{}, errors.New("dispatch: thresholds: no version")
	case *f.Version != thresholdsVersion:
		return Thresholds{}, fmt.Errorf("dispatch: thresholds: version %d, want %d", *f.Version, thresholdsVersion)
	}
	var t Thresholds
	if f.Calibrated != "" {
		c, err := time.Parse(time.RFC3339, f.Calibrated)
		if err != nil {
			return Thresholds{}, fmt.Errorf("dispatch: thresholds: calibrated: %w", err)
		}
		t.Calibrated = c
	}
	t.CPU, t.Device = f.CPU, f.Device
	if f.Margin != nil {
		if err := checkNumber("margin", *f.Margin); err != nil {
			return Thresholds{}, err
		}
		t.Margin = *f.Margin
	}
	for _, o := range []struct {
		name string
		in   *opRulesF
		out  *OpRules
	}{{"matmul", f.MatMul, &t.MatMul}, {"conv2d", f.Conv2D, &t.Conv2D}} {
		if o.in == nil {
			return Thresholds{}, fmt.Errorf("dispatch: thresholds: no %s", o.name)
		}
		var err error
		if o.out.Host, err = o.in.Host.rule(o.name + ".host"); err != nil {
			return Thresholds{}, err
		}
		if o.out.Device, err = o.in.Device.rule(o.name + ".device"); err != nil {
			return Thresholds{}, err
		}
	}
	return t, nil
}

// keySet is the keys an object of the file may have, each with the keys of
// its value when that is an object (nil for a number, string or bool).
type keySet map[string]keySet

var (
	ruleKeys = keySet{"gpu": nil, "min_flops": nil, "flops_per_byte": nil}
	opKeys   = keySet{"host": ruleKeys, "device": ruleKeys}
	fileKeys = keySet{"version": nil, "calibrated": nil, "cpu": nil, "device": nil, "margin": nil,
		"matmul": opKeys, "conv2d": opKeys}
)

// checkKeys reads the next value from dec, a file that json.Decoder has
// already decoded into thresholdsFile without error, and rejects a key
// given twice in one object or not spelled exactly as in keys (the
// decoder rejected keys that match none in any case). at is the path of
// the value ("" for the file, "matmul.host" for a rule).
func checkKeys(dec *json.Decoder, at string, keys keySet) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("dispatch: thresholds: %w", err)
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return nil // a number, string, bool or null
	}
	if d == '[' { // not in a file that decoded, but skip it whole
		for dec.More() {
			if err := checkKeys(dec, at, nil); err != nil {
				return err
			}
		}
		_, err := dec.Token()
		return err
	}
	seen := make(map[string]bool, len(keys))
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("dispatch: thresholds: %w", err)
		}
		k := tok.(string)
		name := k
		if at != "" {
			name = at + "." + k
		}
		sub, known := keys[k]
		if !known {
			for want := range keys {
				if strings.EqualFold(want, k) {
					return fmt.Errorf("dispatch: thresholds: key %q: keys are case-sensitive, want %q", name, want)
				}
			}
			return fmt.Errorf("dispatch: thresholds: unknown key %q", name)
		}
		if seen[k] {
			return fmt.Errorf("dispatch: thresholds: duplicate key %q", name)
		}
		seen[k] = true
		if err := checkKeys(dec, name, sub); err != nil {
			return err
		}
	}
	_, err = dec.Token() // '}'
	return err
}

func (r *ruleF) rule(name string) (Rule, error) {
	switch {
	case r == nil:
		return Rule{}, fmt.Errorf("dispatch: thresholds: no %s", name)
	case r.GPU == nil:
		return Rule{}, fmt.Errorf("dispatch: thresholds: %s: no gpu", name)
	case !*r.GPU:
		if r.MinFLOPs != nil || r.FLOPsPerByte != nil {
			return Rule{}, fmt.Errorf("dispatch: thresholds: %s: min_flops or flops_per_byte with \"gpu\": false", name)
		}
		return Rule{}, nil
	case r.MinFLOPs == nil || r.FLOPsPerByte == nil:
		return Rule{}, fmt.Errorf("dispatch: thresholds: %s: \"gpu\": true needs min_flops and flops_per_byte", name)
	}
	if err := checkNumber(name+".min_flops", *r.MinFLOPs); err != nil {
		return Rule{}, err
	}
	if err := checkNumber(name+".flops_per_byte", *r.FLOPsPerByte); err != nil {
		return Rule{}, err
	}
	return Rule{GPU: true, MinFLOPs: *r.MinFLOPs, FLOPsPerByte: *r.FLOPsPerByte}, nil
}

func checkNumber(name string, v float64) error {
	if !(v >= 0) || math.IsInf(v, 1) {
		return fmt.Errorf("dispatch: thresholds: %s = %v, want a finite number >= 0", name, v)
	}
	return nil
}

// MarshalThresholds encodes t in the file format ParseThresholds reads.
func MarshalThresholds(t Thresholds) ([]byte, error) {
	v := thresholdsVersion
	f := thresholdsFile{Version: &v, CPU: t.CPU, Device: t.Device}
	if !t.Calibrated.IsZero() {
		f.Calibrated = t.Calibrated.UTC().Format(time.RFC3339Nano) // whole seconds as RFC3339; a fraction kept
	}
	if t.Margin != 0 {
		f.Margin = &t.Margin
	}
	rule := func(name string, r Rule) (*ruleF, error) {
		g := r.GPU
		if !g {
			return &ruleF{GPU: &g}, nil
		}
		if err := checkNumber(name+".min_flops", r.MinFLOPs); err != nil {
			return nil, err
		}
		if err := checkNumber(name+".flops_per_byte", r.FLOPsPerByte); err != nil {
			return nil, err
		}
		m, b := r.MinFLOPs, r.FLOPsPerByte
		return &ruleF{GPU: &g, MinFLOPs: &m, FLOPsPerByte: &b}, nil
	}
	for _, o := range []struct {
		name string
		in   OpRules
		out  **opRulesF
	}{{"matmul", t.MatMul, &f.MatMul}, {"conv2d", t.Conv2D, &f.Conv2D}} {
		h, err := rule(o.name+".host", o.in.Host)
		if err != nil {
			return nil, err
		}
		d, err := rule(o.name+".device", o.in.Device)
		if err != nil {
			return nil, err
		}
		*o.out = &opRulesF{Host: h, Device: d}
	}
	out, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// LoadThresholds reads and parses the thresholds file at path. The file
// must be a regular file (or a symbolic link to one) of at most
// maxThresholdsFile (1 MiB) bytes. A directory, a named pipe (FIFO), a
// socket or a device is an error, found before the file is opened (and
// again after: where the system has non-blocking opens, one swapped in
// between is opened without waiting and refused), so that a
// LANES_THRESHOLDS naming one never leaves Place waiting for a writer or
// reading without end.
func LoadThresholds(path string) (Thresholds, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return Thresholds{}, err
	}
	if !fi.Mode().IsRegular() {
		return Thresholds{}, notRegular(path, fi.Mode())
	}
	// The file may have been replaced since the Stat: open it without
	// blocking (where the system can) and look again at what was opened.
	fh, err := os.OpenFile(path, os.O_RDONLY|openNonblock, 0)
	if err != nil {
		return Thresholds{}, err
	}
	defer fh.Close()
	if fi, err = fh.Stat(); err != nil {
		return Thresholds{}, err
	}
	if !fi.Mode().IsRegular() {
		return Thresholds{}, notRegular(path, fi.Mode())
	}
	data, err := io.ReadAll(io.LimitReader(fh, maxThresholdsFile+1))
	if err != nil {
		return Thresholds{}, err
	}
	if len(data) > maxThresholdsFile {
		return Thresholds{}, fmt.Errorf("dispatch: thresholds: %s is over %d bytes", path, maxThresholdsFile)
	}
	return ParseThresholds(data)
}

// notRegular is LoadThresholds' error for a file that is not a regular one.
func notRegular(path string, m fs.FileMode) error {
	what := "not a regular file"
	switch {
	case m.IsDir():
		what = "a directory"
	case m&fs.ModeNamedPipe != 0:
		what = "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		what = "a socket"
	case m&fs.ModeDevice != 0:
		what = "a device"
	}
	return fmt.Errorf("dispatch: thresholds: %s is %s, not a regular file", path, what)
}

// WriteThresholds writes t to path (creating its directory), replacing the
// file in one rename so that a reader never sees half of it.
func WriteThresholds(path string, t Thresholds) error {
	data, err := MarshalThresholds(t)
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".thresholds-*.json")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

// ThresholdsEnv names the environment variable that points at a thresholds
// file in place of the default path; its value "default" means the
// built-in thresholds, no file.
const ThresholdsEnv = "LANES_THRESHOLDS"

// ThresholdsPath returns the file Place reads its thresholds from:
// $LANES_THRESHOLDS if set, else lanes/thresholds.json in
// os.UserConfigDir (~/.config on Linux). It returns "" when neither
// applies (LANES_THRESHOLDS=default, or no config directory).
func ThresholdsPath() string {
	p, _ := thresholdsPath(os.Getenv, os.UserConfigDir)
	return p
}

// thresholdsPath also says whether the path was asked for explicitly.
func thresholdsPath(getenv func(string) string, configDir func() (string, error)) (path string, explicit bool) {
	if v := getenv(ThresholdsEnv); v != "" {
		if v == "default" {
			return "", true
		}
		return v, true
	}
	dir, err := configDir()
	if err != nil || dir == "" {
		return "", false
	}
	return filepath.Join(dir, "lanes", "thresholds.json"), false
}

// installed is a Thresholds with where it came from.
type installed struct {
	t      Thresholds
	source string
}

var (
	current     atomic.Pointer[installed]
	loadCurrent sync.Once
)

// currentThresholds returns the thresholds in force, reading the file the
// first time it is asked.
func currentThresholds() *installed {
	if c := current.Load(); c != nil {
		return c
	}
	loadCurrent.Do(func() {
		c := loadInstalled(os.Getenv, os.UserConfigDir, log.Printf)
		current.CompareAndSwap(nil, &c)
	})
	return current.Load()
}

// loadInstalled finds and loads the thresholds file. A missing file at the
// default path is normal (no calibration yet) and says nothing; a file that
// cannot be read or parsed, or a missing file that LANES_THRESHOLDS named,
// gets one warning through warn and the defaults.
func loadInstalled(getenv func(string) string, configDir func() (string, error), warn func(string, ...any)) installed {
	path, explicit := thresholdsPath(getenv, configDir)
	if path == "" {
		why := "no config directory"
		if explicit {
			why = ThresholdsEnv + "=default"
		}
		return installed{DefaultThresholds(), "built-in defaults (" + why + ")"}
	}
	t, err := LoadThresholds(path)
	shown := printable(path, maxReportPath) // a source, printed by Report
	switch {
	case err == nil:
		return installed{t, shown}
	case errors.Is(err, os.ErrNotExist) && !explicit:
		return installed{DefaultThresholds(), "built-in defaults (no " + shown + "; run `go -C bench run ./cmd/calibrate`)"}
	}
	warn("lanes: thresholds file %s not used (%s); placing with the built-in defaults", shown, printable(err.Error(), maxReportPath))
	return installed{DefaultThresholds(), "built-in defaults (" + shown + " rejected: see the log)"}
}

// SetThresholds makes t the thresholds Place follows when no Placer is
// installed, describing where they came from as source, and returns the
// previous ones. Calibration and tests use it; programs normally rely on
// the file.
func SetThresholds(t Thresholds, source string) (prev Thresholds, prevSource string) {
	c := currentThresholds()
	current.Store(&installed{t, source})
	return c.t, c.source
}

// ActiveThresholds returns the thresholds in force and where they came
// from: a file's path (quoted as a Go string if it has characters that
// are not printable), or the reason for the built-in defaults.
func ActiveThresholds() (Thresholds, string) {
	c := currentThresholds()
	return c.t, c.source
}

// thresholdsNote is Report's description of the thresholds in force.
func thresholdsNote() string {
	c := currentThresholds()
	var b strings.Builder
	fmt.Fprintf(&b, "thresholds from %s", printable(c.source, maxReportPath))
	if !c.t.Calibrated.IsZero() {
		dev := printable(c.t.Device, maxReportString)
		if c.t.Device == "" {
			dev = "no GPU"
		}
		fmt.Fprintf(&b, " (calibrated %s on %s, %s)", c.t.Calibrated.Format(time.DateOnly), printable(c.t.CPU, maxReportString), dev)
	}
	fmt.Fprintf(&b, ": %s", c.t.Describe())
	return b.String()
}
