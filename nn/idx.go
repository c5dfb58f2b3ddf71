package nn

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"sync"

	"github.com/lanesgo/lanes/tensor"
)

// Limits on the IDX files ReadIDX accepts.
const (
	// idxMaxDims is the most dimensions an IDX file may declare; real
	// files (MNIST, Fashion-MNIST) use 1 to 3.
	idxMaxDims = 8
	// idxMaxElems is the most elements an IDX file may declare (8 GiB of
	// float32 once read).
	idxMaxElems = 1 << 31
	// idxChunk is how many bytes of data are read at a time, so that
	// memory follows the data actually present rather than the count the
	// header claims.
	idxChunk = 1 << 20
)

// idxElemSize maps the IDX type byte to the size of one element in bytes.
var idxElemSize = map[byte]int{
	0x08: 1, // unsigned byte
	0x09: 1, // signed byte
	0x0B: 2, // int16
	0x0C: 4, // int32
	0x0D: 4, // float32
	0x0E: 8, // float64
}

// ReadIDX reads an IDX stream, the format of the MNIST and Fashion-MNIST
// files, and returns its values as a contiguous float32 tensor of the
// file's shape. The stream may be gzip-compressed; that is detected from
// the gzip magic bytes 0x1f 0x8b (concatenated gzip members are read as
// one stream, as gzip -d does).
//
// An IDX stream is two zero bytes, a type byte, a dimension count byte,
// one big-endian uint32 per dimension and then the elements, row-major and
// big-endian. The types are 0x08 (unsigned byte), 0x09 (signed byte),
// 0x0B (int16), 0x0C (int32), 0x0D (float32) and 0x0E (float64). Values
// are converted unchanged, not scaled: bytes 0..255 stay 0..255. int32
// values beyond ±2^24 and float64 values are rounded to the nearest
// float32 (float64 values out of float32's range become ±Inf).
//
// ReadIDX accepts 1 to 8 dimensions and at most 2^31 elements. A dimension
// of 0 is allowed and gives an empty tensor. The stream must end right
// after the last element. The data is read in chunks of 1 MiB and the
// result is allocated only once all of it has arrived, so memory follows
// the data present: a short stream claiming a huge shape fails having
// allocated about 1 MiB.
//
// Errors start with "nn: idx: " and report a bad magic number, an unknown
// type, a bad dimension count, too many elements, a truncated header or
// data, trailing bytes after the data, a corrupt gzip stream, or the
// reader's own error (wrapped, for errors.Is).
func ReadIDX(r io.Reader) (*tensor.Tensor, error) {
	t, err := readIDX(r)
	if err != nil {
		return nil, fmt.Errorf("nn: idx: %w", err)
	}
	return t, nil
}

// LoadIDX opens the file at path and reads it with ReadIDX. Its errors
// start with "nn: idx: " and name the path.
func LoadIDX(path string) (*tensor.Tensor, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("nn: idx: %w", err)
	}
	defer f.Close()
	t, err := readIDX(f)
	if err != nil {
		return nil, fmt.Errorf("nn: idx: %s: %w", path, err)
	}
	return t, nil
}

// gzipError marks an error from the gzip decompressor, so that it is
// reported as a corrupt stream rather than as truncated IDX data.
type gzipError struct{ err error }

func (e *gzipError) Error() string { return "corrupt gzip: " + e.err.Error() }
func (e *gzipError) Unwrap() error { return e.err }

// gzipReader passes reads through to a gzip.Reader, marking its errors
// other than io.EOF as gzipErrors.
type gzipReader struct{ z *gzip.Reader }

func (g gzipReader) Read(p []byte) (int, error) {
	n, err := g.z.Read(p)
	if err != nil && err != io.EOF {
		err = &gzipError{err}
	}
	return n, err
}

func readIDX(r io.Reader) (*tensor.Tensor, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var src io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		z, err := gzip.NewReader(br)
		if err != nil {
			return nil, &gzipError{err}
		}
		defer z.Close()
		src = gzipReader{z}
	}

	var hdr [4 + 4*idxMaxDims]byte
	if err := readFull(src, hdr[:4], "header"); err != nil {
		return nil, err
	}
	if hdr[0] != 0 || hdr[1] != 0 {
		return nil, fmt.Errorf("bad magic % x, want 00 00", hdr[:2])
	}
	typ, ndims := hdr[2], int(hdr[3])
	size, ok := idxElemSize[typ]
	if !ok {
		return nil, fmt.Errorf("unknown type 0x%02x", typ)
	}
	if ndims < 1 || ndims > idxMaxDims {
		return nil, fmt.Errorf("%d dimensions, want 1 to %d", ndims, idxMaxDims)
	}
	dimBytes := hdr[4 : 4+4*ndims]
	if err := readFull(src, dimBytes, "header"); err != nil {
		return nil, err
	}
	shape := make([]int, ndims)
	n := uint64(1)
	for i := range shape {
		d := uint64(binary.BigEndian.Uint32(dimBytes[4*i:]))
		if d > idxMaxElems || d > math.MaxInt {
			return nil, fmt.Errorf("dimension %d is %d, more than %d elements", i, d, uint64(idxMaxElems))
		}
		shape[i] = int(d)
		n *= d // no overflow: both factors are at most 2^31 before the check below
		if n > idxMaxElems || n*uint64(size) > math.MaxInt {
			return nil, fmt.Errorf("shape %v has more than %d elements", idxDims(dimBytes), uint64(idxMaxElems))
		}
	}

	data, err := readIDXData(src, typ, size, int(n))
	if err != nil {
		return nil, err
	}
	// The stream must end here; reading on also lets gzip verify its
	// checksum.
	var one [1]byte
	switch _, err := io.ReadFull(src, one[:]); {
	case err == nil:
		return nil, fmt.Errorf("trailing data after %d elements of shape %v", n, shape)
	case err != io.EOF:
		return nil, err
	}
	return tensor.FromSlice(data, shape...), nil
}

// idxDims decodes the dimensions of an IDX header, for messages.
func idxDims(b []byte) []uint32 {
	s := make([]uint32, len(b)/4)
	for i := range s {
		s[i] = binary.BigEndian.Uint32(b[4*i:])
	}
	return s
}

// readFull reads len(p) bytes, reporting a short read as truncated what.
func readFull(r io.Reader, p []byte, what string) error {
	_, err := io.ReadFull(r, p)
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return fmt.Errorf("truncated %s", what)
	}
	return err
}

// readIDXData reads n elements of the given type and size. The raw bytes
// are read in chunks of at most idxChunk bytes, so memory follows the data
// actually present; the float32 result is allocated once all of it has
// arrived, and decoded without further copying.
func readIDXData(r io.Reader, typ byte, size, n int) ([]float32, error) {
	var chunks [][]byte
	for left := n * size; left > 0; {
		c := make([]byte, min(left, idxChunk))
		got, err := io.ReadFull(r, c)
		chunks = append(chunks, c[:got])
		left -= got
		switch {
		case err == io.EOF || err == io.ErrUnexpectedEOF:
			return nil, fmt.Errorf("truncated data: %d of %d elements present", (n*size-left)/size, n)
		case err != nil:
			return nil, err
		}
	}
	out := make([]float32, n)
	// Decoding is mostly first touches of fresh memory (page faults),
	// which scale with cores: split the chunks among GOMAXPROCS goroutines.
	// Every chunk but the last is idxChunk bytes, a multiple of every
	// element size, so chunk i starts at element i*idxChunk/size.
	per := idxChunk / size
	workers := min(runtime.GOMAXPROCS(0), len(chunks))
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := w*len(chunks)/workers, (w+1)*len(chunks)/workers
		decode := func() {
			for i, c := range chunks[lo:hi] {
				at := (lo + i) * per
				decodeIDX(out[at:at+len(c)/size], c, typ)
			}
		}
		if w == workers-1 {
			decode()
		} else {
			wg.Go(decode)
		}
	}
	wg.Wait()
	return out, nil
}

// decodeIDX converts big-endian elements of type typ in src to dst.
func decodeIDX(dst []float32, src []byte, typ byte) {
	switch typ {
	case 0x08:
		src = src[:len(dst)]
		for i, v := range src {
			dst[i] = float32(v)
		}
	case 0x09:
		src = src[:len(dst)]
		for i, v := range src {
			dst[i] = float32(int8(v))
		}
	case 0x0B:
		src = src[:2*len(dst)]
		for i := range dst {
			dst[i] = float32(int16(binary.BigEndian.Uint16(src[2*i:])))
		}
	case 0x0C:
		src = src[:4*len(dst)]
		for i := range dst {
			dst[i] = float32(int32(binary.BigEndian.Uint32(src[4*i:])))
		}
	case 0x0D:
		src = src[:4*len(dst)]
		for i := range dst {
			dst[i] = math.Float32frombits(binary.BigEndian.Uint32(src[4*i:]))
		}
	case 0x0E:
		src = src[:8*len(dst)]
		for i := range dst {
			dst[i] = float32(math.Float64frombits(binary.BigEndian.Uint64(src[8*i:])))
		}
	default:
		panic("nn: idx: decodeIDX: unknown type")
	}
}
