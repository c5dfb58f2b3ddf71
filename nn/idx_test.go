package nn

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/lanesgo/lanes/tensor"
)

// idxFile builds an IDX stream: the header for typ and dims, then payload.
func idxFile(typ byte, dims []uint32, payload []byte) []byte {
	b := []byte{0, 0, typ, byte(len(dims))}
	for _, d := range dims {
		b = binary.BigEndian.AppendUint32(b, d)
	}
	return append(b, payload...)
}

// gzipped returns b compressed with gzip.
func gzipped(b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

// be encodes values big-endian: each of vs is a uint8, int8, int16, int32,
// float32 or float64.
func be(vs ...any) []byte {
	var buf bytes.Buffer
	for _, v := range vs {
		binary.Write(&buf, binary.BigEndian, v)
	}
	return buf.Bytes()
}

// nan32 compares float32s with NaN equal to NaN.
var nan32 = cmp.Comparer(func(a, b float32) bool {
	return a == b || a != a && b != b
})

func TestReadIDX(t *testing.T) {
	inf := float32(math.Inf(1))
	tests := []struct {
		name      string
		file      []byte
		wantShape []int
		want      []float32
	}{
		{"ubyte", idxFile(0x08, []uint32{2, 3}, []byte{0, 1, 2, 127, 128, 255}),
			[]int{2, 3}, []float32{0, 1, 2, 127, 128, 255}},
		{"sbyte", idxFile(0x09, []uint32{4}, be(int8(-128), int8(-1), int8(0), int8(127))),
			[]int{4}, []float32{-128, -1, 0, 127}},
		{"int16", idxFile(0x0B, []uint32{2, 2}, be(int16(-32768), int16(-2), int16(300), int16(32767))),
			[]int{2, 2}, []float32{-32768, -2, 300, 32767}},
		{"int32", idxFile(0x0C, []uint32{3}, be(int32(math.MinInt32), int32(-70000), int32(1<<24))),
			[]int{3}, []float32{math.MinInt32, -70000, 1 << 24}},
		{"float32", idxFile(0x0D, []uint32{1, 2, 2}, be(float32(1.5), float32(-0.25), float32(math.NaN()), float32(math.Inf(-1)))),
			[]int{1, 2, 2}, []float32{1.5, -0.25, float32(math.NaN()), -inf}},
		{"float64", idxFile(0x0E, []uint32{3}, be(0.1, -2.0, 1e300)),
			[]int{3}, []float32{0.1, -2, inf}},
		{"8 dims", idxFile(0x08, []uint32{1, 1, 1, 1, 1, 1, 1, 2}, []byte{7, 9}),
			[]int{1, 1, 1, 1, 1, 1, 1, 2}, []float32{7, 9}},
		{"zero dim", idxFile(0x0D, []uint32{0, 28, 28}, nil),
			[]int{0, 28, 28}, []float32{}},
		{"gzip ubyte", gzipped(idxFile(0x08, []uint32{3, 1}, []byte{255, 0, 42})),
			[]int{3, 1}, []float32{255, 0, 42}},
		{"gzip float64", gzipped(idxFile(0x0E, []uint32{2}, be(-1.25, 3.0))),
			[]int{2}, []float32{-1.25, 3}},
		{"gzip multistream", append(gzipped(idxFile(0x08, []uint32{2}, []byte{1})), gzipped([]byte{2})...),
			[]int{2}, []float32{1, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadIDX(bytes.NewReader(tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantShape, got.Shape()); diff != "" {
				t.Errorf("shape (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, got.Data(), nan32); diff != "" {
				t.Errorf("data (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReadIDXLarge crosses several read chunks, for every element size.
func TestReadIDXLarge(t *testing.T) {
	const n = idxChunk + 3
	for _, typ := range []byte{0x08, 0x0B, 0x0C, 0x0E} {
		var payload []byte
		for i := range n {
			switch typ {
			case 0x08:
				payload = append(payload, byte(i))
			case 0x0B:
				payload = binary.BigEndian.AppendUint16(payload, uint16(i))
			case 0x0C:
				payload = binary.BigEndian.AppendUint32(payload, uint32(i))
			case 0x0E:
				payload = binary.BigEndian.AppendUint64(payload, math.Float64bits(float64(i)))
			}
		}
		files := [][]byte{idxFile(typ, []uint32{n}, payload)}
		if typ == 0x08 {
			files = append(files, gzipped(files[0]))
		}
		for _, file := range files {
			got, err := ReadIDX(bytes.NewReader(file))
			if err != nil {
				t.Fatalf("type 0x%02x: %v", typ, err)
			}
			data := got.Data()
			if len(data) != n || cap(data) != n {
				t.Fatalf("type 0x%02x: len %d cap %d, want %d", typ, len(data), cap(data), n)
			}
			for i, v := range data {
				want := float32(i)
				switch typ {
				case 0x08:
					want = float32(byte(i))
				case 0x0B:
					want = float32(int16(i))
				}
				if v != want {
					t.Fatalf("type 0x%02x: element %d = %v, want %v", typ, i, v, want)
				}
			}
		}
	}
}

func TestReadIDXErrors(t *testing.T) {
	valid := idxFile(0x08, []uint32{2, 2}, []byte{1, 2, 3, 4})
	badGzip := gzipped(valid)
	badGzip[len(badGzip)-6] ^= 0xff // CRC-32 of the content
	tests := []struct {
		name string
		file []byte
		want string
	}{
		{"empty", nil, "truncated header"},
		{"short magic", []byte{0, 0, 8}, "truncated header"},
		{"bad magic", append([]byte{1, 0}, valid[2:]...), "bad magic"},
		{"bad magic 2", append([]byte{0, 7}, valid[2:]...), "bad magic"},
		{"unknown type", idxFile(0x0A, []uint32{1}, []byte{0}), "unknown type 0x0a"},
		{"unknown type 2", idxFile(0xFF, []uint32{1}, []byte{0}), "unknown type 0xff"},
		{"no dims", idxFile(0x08, nil, nil), "0 dimensions"},
		{"9 dims", idxFile(0x08, []uint32{1, 1, 1, 1, 1, 1, 1, 1, 1}, []byte{0}), "9 dimensions"},
		{"255 dims", []byte{0, 0, 8, 255}, "255 dimensions"},
		{"short dims", valid[:9], "truncated header"},
		{"dim too large", idxFile(0x08, []uint32{1<<31 + 1}, nil), "dimension 0 is 2147483649"},
		{"too many elements", idxFile(0x08, []uint32{1 << 16, 1<<15 + 1}, nil), "more than 2147483648 elements"},
		{"overflow", idxFile(0x08, []uint32{1 << 31, 1 << 31, 1 << 31, 1 << 31}, nil), "more than 2147483648 elements"},
		{"truncated data", valid[:len(valid)-1], "truncated data: 3 of 4 elements"},
		{"partial element", idxFile(0x0C, []uint32{2}, []byte{0, 0, 0, 1, 0, 0}), "truncated data: 1 of 2 elements"},
		{"huge claim", idxFile(0x08, []uint32{1 << 31}, []byte{1, 2, 3, 4}), "truncated data: 4 of 2147483648 elements"},
		{"trailing byte", append(valid, 0), "trailing data after 4 elements"},
		{"trailing zero dim", idxFile(0x08, []uint32{0}, []byte{9}), "trailing data after 0 elements"},
		{"gzip trailing", gzipped(append(valid, 5)), "trailing data"},
		{"gzip header", []byte{0x1f, 0x8b, 0}, "corrupt gzip"},
		{"gzip checksum", badGzip, "corrupt gzip"},
		{"gzip truncated", gzipped(valid)[:20], "corrupt gzip"},
		{"gzip garbage after", append(gzipped(valid), 1, 2, 3), "corrupt gzip"},
		{"gzip bad idx", gzipped(valid[1:]), "bad magic"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadIDX(bytes.NewReader(tt.file))
			if err == nil {
				t.Fatalf("ReadIDX = shape %v, want error containing %q", got.Shape(), tt.want)
			}
			if msg := err.Error(); !strings.HasPrefix(msg, "nn: idx: ") || !strings.Contains(msg, tt.want) {
				t.Errorf("error %q, want it to start with %q and contain %q", msg, "nn: idx: ", tt.want)
			}
		})
	}
}

// TestReadIDXTruncatedEverywhere cuts a valid file, plain and gzipped, at
// every byte.
func TestReadIDXTruncatedEverywhere(t *testing.T) {
	plain := idxFile(0x0B, []uint32{2, 3}, be(int16(1), int16(-2), int16(3), int16(4), int16(5), int16(-6)))
	for i := range len(plain) {
		_, err := ReadIDX(bytes.NewReader(plain[:i]))
		if err == nil || !strings.Contains(err.Error(), "nn: idx: truncated") {
			t.Errorf("plain cut at %d of %d: error %v, want truncated", i, len(plain), err)
		}
	}
	gz := gzipped(plain)
	for i := range len(gz) {
		_, err := ReadIDX(bytes.NewReader(gz[:i]))
		if err == nil || !strings.HasPrefix(err.Error(), "nn: idx: ") {
			t.Errorf("gzip cut at %d of %d: error %v, want an nn: idx error", i, len(gz), err)
		}
	}
}

// idxNoSeek hides every method of a reader but Read, as a pipe or a
// network stream would.
type idxNoSeek struct{ r io.Reader }

func (n idxNoSeek) Read(p []byte) (int, error) { return n.r.Read(p) }

// gzippedBest returns b compressed with gzip at its best compression.
func gzippedBest(b []byte) []byte {
	var buf bytes.Buffer
	w, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

// withHoldMin sets idxHoldMin for the rest of the test.
func withHoldMin(t *testing.T, n int) {
	old := idxHoldMin
	idxHoldMin = n
	t.Cleanup(func() { idxHoldMin = old })
}

// TestReadIDXBoundedAlloc checks the memory ReadIDX documents, with
// streams claiming 2^31 float64 elements (16 GiB) and holding far fewer:
// a short uncompressed stream that can seek fails before reading its data;
// a seekable gzip bomb (16 MiB of zeros in 16 KB) fails having held at
// most idxHoldMin (lowered to 1 MiB here, to keep the test fast) plus 16
// times its size, where it held all 16 MiB; from a stream that cannot
// seek, memory follows the bytes present. Valid streams allocate the
// result, 4 bytes per element, and buffers, not the raw data besides.
func TestReadIDXBoundedAlloc(t *testing.T) {
	withHoldMin(t, 1<<20)
	huge := []uint32{1 << 15, 1 << 16}
	plain := idxFile(0x0E, huge, make([]byte, 4<<20))
	bomb := gzippedBest(idxFile(0x0E, huge, make([]byte, 16<<20)))
	const n = 16 << 20
	valid := idxFile(0x08, []uint32{n}, make([]byte, n))
	validGz := gzippedBest(valid)
	tests := []struct {
		name  string
		r     io.Reader
		bound int
		want  string // the error, or "" for none
	}{
		{"12 bytes of 16 GiB", bytes.NewReader(idxFile(0x0E, huge, make([]byte, 12))), 256 << 10, "truncated data: 1 of 2147483648 elements present"},
		{"4 MiB of 16 GiB", bytes.NewReader(plain), 256 << 10, "truncated data: 524288 of 2147483648 elements present"},
		{"4 MiB of 16 GiB, no seek", idxNoSeek{bytes.NewReader(plain)}, 4<<20 + 2<<20, "truncated data: 524288 of 2147483648 elements present"},
		{"gzip bomb", bytes.NewReader(bomb), idxHoldMin + idxHoldRatio*len(bomb) + 512<<10, "truncated data: 2097152 of 2147483648 elements present"},
		{"gzip bomb, no seek", idxNoSeek{bytes.NewReader(bomb)}, 16<<20 + 2<<20, "truncated data: 2097152 of 2147483648 elements present"},
		{"valid", bytes.NewReader(valid), 4*n + idxGroup<<20 + 256<<10, ""},
		{"valid gzip, read twice", bytes.NewReader(validGz), 4*n + idxHoldMin + idxHoldRatio*len(validGz) + idxGroup<<20 + 512<<10, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			var got *tensor.Tensor
			alloc := stAllocated(func() { got, err = ReadIDX(tt.r) })
			switch {
			case tt.want == "" && err != nil:
				t.Fatal(err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("error %v, want %q", err, tt.want)
			case tt.want == "" && got.Len() != n:
				t.Fatalf("read %d elements, want %d", got.Len(), n)
			}
			if alloc > uint64(tt.bound) {
				t.Errorf("allocated %d bytes, more than %d", alloc, tt.bound)
			}
		})
	}
}

// TestReadIDXReadTwice checks the path where a seekable gzip stream is
// checked to its end without being kept and then read again: the same
// values and the same errors as a single pass.
func TestReadIDXReadTwice(t *testing.T) {
	withHoldMin(t, 64<<10)
	const n = 3<<20 + 5
	data := make([]byte, 2*n)
	for i := 0; i < n; i += 4099 {
		binary.BigEndian.PutUint16(data[2*i:], uint16(i))
	}
	valid := idxFile(0x0B, []uint32{n}, data)
	corrupt := gzippedBest(valid)
	corrupt[len(corrupt)-6] ^= 0xff // CRC-32 of the content
	tests := []struct {
		name string
		file []byte
		want string
	}{
		{"valid", gzippedBest(valid), ""},
		{"two members", append(gzippedBest(valid[:1<<20]), gzippedBest(valid[1<<20:])...), ""},
		{"truncated", gzippedBest(valid[:len(valid)-3]), "truncated data: 3145731 of 3145733 elements present"},
		{"trailing", gzippedBest(append(valid, 0)), "trailing data after 3145733 elements"},
		{"checksum", corrupt, "corrupt gzip"},
		{"garbage after", append(gzippedBest(valid), 1, 2, 3), "corrupt gzip"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if max(idxHoldMin, idxHoldRatio*len(tt.file)) >= len(valid)-idxChunk {
				t.Fatalf("%d-byte file: would not be read twice", len(tt.file))
			}
			once, errOnce := ReadIDX(idxNoSeek{bytes.NewReader(tt.file)})
			twice, err := ReadIDX(bytes.NewReader(tt.file))
			if tt.want != "" {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("error %v, want %q", err, tt.want)
				}
				if errOnce == nil || errOnce.Error() != err.Error() {
					t.Errorf("error %v; in one pass %v", err, errOnce)
				}
				return
			}
			if err != nil || errOnce != nil {
				t.Fatalf("errors %v, %v", err, errOnce)
			}
			a, b := once.Data(), twice.Data()
			if len(a) != n || len(b) != n {
				t.Fatalf("read %d and %d elements, want %d", len(a), len(b), n)
			}
			for i := range b {
				want := float32(0)
				if i%4099 == 0 {
					want = float32(int16(uint16(i)))
				}
				if a[i] != want || b[i] != want {
					t.Fatalf("element %d: %v in one pass, %v read twice, want %v", i, a[i], b[i], want)
				}
			}
		})
	}
}

type failingReader struct{ err error }

func (r failingReader) Read([]byte) (int, error) { return 0, r.err }

func TestReadIDXReaderError(t *testing.T) {
	errDisk := errors.New("disk on fire")
	_, err := ReadIDX(failingReader{errDisk})
	if !errors.Is(err, errDisk) || !strings.HasPrefix(err.Error(), "nn: idx: ") {
		t.Errorf("error %v, want nn: idx: wrapping %v", err, errDisk)
	}
	r := io.MultiReader(bytes.NewReader(idxFile(0x08, []uint32{3}, []byte{1})), failingReader{errDisk})
	_, err = ReadIDX(r)
	if !errors.Is(err, errDisk) {
		t.Errorf("error %v mid-data, want it to wrap %v", err, errDisk)
	}
}

func TestLoadIDX(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.idx.gz")
	if err := os.WriteFile(good, gzipped(idxFile(0x08, []uint32{2}, []byte{3, 4})), 0o666); err != nil {
		t.Fatal(err)
	}
	got, err := LoadIDX(good)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]float32{3, 4}, got.Data()); diff != "" {
		t.Errorf("data (-want +got):\n%s", diff)
	}

	bad := filepath.Join(dir, "bad.idx")
	if err := os.WriteFile(bad, []byte{1, 2, 3, 4}, 0o666); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{bad, filepath.Join(dir, "missing.idx")} {
		_, err := LoadIDX(path)
		if err == nil || !strings.HasPrefix(err.Error(), "nn: idx: ") || !strings.Contains(err.Error(), path) {
			t.Errorf("LoadIDX(%q) error %v, want nn: idx: naming the path", path, err)
		}
	}
}

func FuzzReadIDX(f *testing.F) {
	f.Add(idxFile(0x08, []uint32{2, 3}, []byte{0, 1, 2, 3, 4, 255}))
	f.Add(idxFile(0x09, []uint32{1}, []byte{0x80}))
	f.Add(idxFile(0x0B, []uint32{1, 1}, be(int16(-5))))
	f.Add(idxFile(0x0C, []uint32{1}, be(int32(7))))
	f.Add(idxFile(0x0D, []uint32{2}, be(float32(1), float32(2))))
	f.Add(idxFile(0x0E, []uint32{0, 5}, nil))
	f.Add(gzipped(idxFile(0x08, []uint32{2}, []byte{9, 8})))
	f.Add([]byte{0, 0, 8, 1, 0x80, 0, 0, 0})
	// Short streams claiming 2^31 float64 elements, plain and gzipped.
	f.Add(idxFile(0x0E, []uint32{1 << 15, 1 << 16}, make([]byte, 100)))
	f.Add(gzippedBest(idxFile(0x0E, []uint32{1 << 15, 1 << 16}, make([]byte, 256<<10))))
	f.Add(gzippedBest(idxFile(0x08, []uint32{3, 100000}, make([]byte, 300000))))
	f.Fuzz(func(t *testing.T, b []byte) {
		// The same stream read from a reader that cannot seek, and read
		// twice with a small hold: the same tensor or the same error.
		once, errOnce := ReadIDX(idxNoSeek{bytes.NewReader(b)})
		old := idxHoldMin
		idxHoldMin = 4 << 10
		got, err := ReadIDX(bytes.NewReader(b))
		idxHoldMin = old
		if (err == nil) != (errOnce == nil) || err != nil && err.Error() != errOnce.Error() {
			t.Fatalf("error %v; from a reader that cannot seek %v", err, errOnce)
		}
		if err == nil && !slices.Equal(once.Shape(), got.Shape()) || err == nil && !slices.EqualFunc(once.Data(), got.Data(), func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }) {
			t.Fatalf("shape %v; from a reader that cannot seek %v, or their data differ", got.Shape(), once.Shape())
		}
		if err != nil {
			if !strings.HasPrefix(err.Error(), "nn: idx: ") {
				t.Fatalf("error %q lacks the nn: idx: prefix", err)
			}
			return
		}
		n := 1
		for _, d := range got.Shape() {
			n *= d
		}
		if got.Dims() < 1 || got.Dims() > idxMaxDims || got.Len() != n || len(got.Data()) != n {
			t.Fatalf("shape %v, Len %d, %d data elements", got.Shape(), got.Len(), len(got.Data()))
		}
	})
}

// fashionMNISTDir holds the Fashion-MNIST files, when installed.
const fashionMNISTDir = "/usr/share/datasets/fashion-mnist"

func TestFashionMNIST(t *testing.T) {
	if _, err := os.Stat(fashionMNISTDir); err != nil {
		t.Skipf("Fashion-MNIST not installed at %s: %v", fashionMNISTDir, err)
	}
	for _, set := range []struct {
		prefix string
		n      int
	}{{"train", 60000}, {"t10k", 10000}} {
		images := filepath.Join(fashionMNISTDir, set.prefix+"-images-idx3-ubyte.gz")
		labels := filepath.Join(fashionMNISTDir, set.prefix+"-labels-idx1-ubyte.gz")
		start := time.Now()
		x, err := LoadIDX(images)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %v in %v", filepath.Base(images), x.Shape(), time.Since(start))
		y, err := LoadIDX(labels)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]int{set.n, 28, 28}, x.Shape()); diff != "" {
			t.Errorf("%s shape (-want +got):\n%s", images, diff)
		}
		if diff := cmp.Diff([]int{set.n}, y.Shape()); diff != "" {
			t.Errorf("%s shape (-want +got):\n%s", labels, diff)
		}
		checkRange(t, images, x, 255)
		checkRange(t, labels, y, 9)
	}
}

// checkRange checks that every element of x is an integer in 0..hi and that
// both ends of the range occur.
func checkRange(t *testing.T, name string, x *tensor.Tensor, hi float32) {
	t.Helper()
	lo, top := float32(math.Inf(1)), float32(math.Inf(-1))
	for i, v := range x.Data() {
		if v < 0 || v > hi || v != float32(int(v)) {
			t.Fatalf("%s: element %d = %v, want an integer in 0..%v", name, i, v, hi)
		}
		lo, top = min(lo, v), max(top, v)
	}
	if lo != 0 || top != hi {
		t.Errorf("%s: values span %v..%v, want 0..%v", name, lo, top, hi)
	}
}

func BenchmarkLoadIDXFashionMNIST(b *testing.B) {
	path := filepath.Join(fashionMNISTDir, "train-images-idx3-ubyte.gz")
	if _, err := os.Stat(path); err != nil {
		b.Skipf("Fashion-MNIST not installed: %v", err)
	}
	for b.Loop() {
		if _, err := LoadIDX(path); err != nil {
			b.Fatal(err)
		}
	}
}
