package nn

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"errors"
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
	// idxGroup is the most chunks read and decoded at a time once the
	// result is allocated.
	idxGroup = 8
	// idxHoldRatio bounds the raw data held from a seekable gzip stream
	// (see ReadIDX) to this many times the compressed bytes read, or
	// idxHoldMin when that is more.
	idxHoldRatio = 16
)

// idxHoldMin is the least raw data held from a seekable gzip stream before
// it is checked without being kept and read a second time (a variable for
// the tests).
var idxHoldMin = 64 << 20

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
// after the last element.
//
// Memory follows the data actually present, never the shape the header
// claims, and a short stream fails at its first short read:
//   - When r is also an io.Seeker (a *bytes.Reader, a regular *os.File as
//     LoadIDX opens), an uncompressed stream's length is checked before
//     any data is read, so a short one fails having allocated little more
//     than a 64 KiB buffer; the result is then allocated once, 4 bytes per
//     element, and filled through at most 8 buffers of 1 MiB.
//   - Otherwise the data is read in chunks of 1 MiB and the result is
//     allocated only once all of it has arrived, so a short stream fails
//     having allocated about the bytes it holds plus 1 MiB.
//   - From a seekable gzip stream, at most max(64 MiB, 16 × the compressed
//     bytes read) of decompressed data are held: past that, the rest is
//     checked to its end without being kept and the stream is read again,
//     straight into the result. A small file that decompresses to a huge
//     one (a gzip bomb claiming a huge shape) thus fails having allocated
//     at most about 64 MiB plus 16 times its size; a valid one costs a
//     second decompression. From a gzip stream that cannot seek, memory
//     follows the decompressed data present.
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

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// idxHeader is what an IDX header says.
type idxHeader struct {
	typ   byte
	size  int // bytes per element
	shape []int
	n     int // elements
	len   int // bytes of the header
}

// idxOpen returns the IDX stream in r, decompressed when it starts with
// the gzip magic bytes, with a function that releases it.
func idxOpen(r io.Reader) (src io.Reader, gz bool, done func(), err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		z, err := gzip.NewReader(br)
		if err != nil {
			return nil, false, nil, &gzipError{err}
		}
		return gzipReader{z}, true, func() { z.Close() }, nil
	}
	return br, false, func() {}, nil
}

func readIDX(r io.Reader) (*tensor.Tensor, error) {
	// A stream that can seek can be measured, or read twice; of files,
	// only regular ones have a size that says what they hold.
	rs, _ := r.(io.ReadSeeker)
	if f, ok := r.(*os.File); ok {
		if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
			rs = nil
		}
	}
	var start int64
	if rs != nil {
		var err error
		if start, err = rs.Seek(0, io.SeekCurrent); err != nil {
			rs = nil
		}
	}
	cr := &countingReader{r: r}
	src, gz, done, err := idxOpen(cr)
	if err != nil {
		return nil, err
	}
	defer func() { done() }()
	h, err := readIDXHeader(src)
	if err != nil {
		return nil, err
	}

	var data []float32
	switch {
	case rs != nil && !gz:
		// The bytes left say at once whether the data are all there.
		end, err := rs.Seek(0, io.SeekEnd)
		if err != nil {
			return nil, err
		}
		dataStart := start + int64(h.len)
		switch have, want := end-dataStart, int64(h.n)*int64(h.size); {
		case have < want:
			return nil, fmt.Errorf("truncated data: %d of %d elements present", max(have, 0)/int64(h.size), h.n)
		case have > want:
			return nil, fmt.Errorf("trailing data after %d elements of shape %v", h.n, h.shape)
		}
		if _, err := rs.Seek(dataStart, io.SeekStart); err != nil {
			return nil, err
		}
		data = make([]float32, h.n)
		if err := readIDXInto(rs, data, h.typ, h.size); err != nil {
			return nil, err
		}
		return tensor.FromSlice(data, h.shape...), nil
	case rs != nil:
		hold := func() int { return max(idxHoldMin, idxHoldRatio*int(min(cr.n, math.MaxInt/idxHoldRatio))) }
		data, err = readIDXData(src, h.typ, h.size, h.n, hold)
		if err == errIDXRewind {
			// The data are all there: read the stream again, into the
			// result.
			if err := idxEnd(src, h); err != nil {
				return nil, err
			}
			if _, err := rs.Seek(start, io.SeekStart); err != nil {
				return nil, err
			}
			done()
			done = func() {}
			var again func()
			if src, _, again, err = idxOpen(r); err != nil {
				return nil, err
			}
			done = again
			if _, err := io.CopyN(io.Discard, src, int64(h.len)); err != nil {
				return nil, fmt.Errorf("reading again: %w", err)
			}
			data = make([]float32, h.n)
			err = readIDXInto(src, data, h.typ, h.size)
		}
	default:
		data, err = readIDXData(src, h.typ, h.size, h.n, nil)
	}
	if err != nil {
		return nil, err
	}
	if err := idxEnd(src, h); err != nil {
		return nil, err
	}
	return tensor.FromSlice(data, h.shape...), nil
}

// idxEnd checks that src ends right after the data; reading on also lets
// gzip verify its checksum.
func idxEnd(src io.Reader, h idxHeader) error {
	var one [1]byte
	switch _, err := io.ReadFull(src, one[:]); {
	case err == nil:
		return fmt.Errorf("trailing data after %d elements of shape %v", h.n, h.shape)
	case err != io.EOF:
		return err
	}
	return nil
}

// readIDXHeader reads and checks the header.
func readIDXHeader(src io.Reader) (idxHeader, error) {
	var h idxHeader
	var hdr [4 + 4*idxMaxDims]byte
	if err := readFull(src, hdr[:4], "header"); err != nil {
		return h, err
	}
	if hdr[0] != 0 || hdr[1] != 0 {
		return h, fmt.Errorf("bad magic % x, want 00 00", hdr[:2])
	}
	typ, ndims := hdr[2], int(hdr[3])
	size, ok := idxElemSize[typ]
	if !ok {
		return h, fmt.Errorf("unknown type 0x%02x", typ)
	}
	if ndims < 1 || ndims > idxMaxDims {
		return h, fmt.Errorf("%d dimensions, want 1 to %d", ndims, idxMaxDims)
	}
	dimBytes := hdr[4 : 4+4*ndims]
	if err := readFull(src, dimBytes, "header"); err != nil {
		return h, err
	}
	shape := make([]int, ndims)
	n := uint64(1)
	for i := range shape {
		d := uint64(binary.BigEndian.Uint32(dimBytes[4*i:]))
		if d > idxMaxElems || d > math.MaxInt {
			return h, fmt.Errorf("dimension %d is %d, more than %d elements", i, d, uint64(idxMaxElems))
		}
		shape[i] = int(d)
		n *= d // no overflow: both factors are at most 2^31 before the check below
		if n > idxMaxElems || n*uint64(size) > math.MaxInt {
			return h, fmt.Errorf("shape %v has more than %d elements", idxDims(dimBytes), uint64(idxMaxElems))
		}
	}
	return idxHeader{typ: typ, size: size, shape: shape, n: int(n), len: 4 + 4*ndims}, nil
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

// errIDXRewind tells readIDX that readIDXData checked that the data are
// all there without keeping them, so that they must be read again.
var errIDXRewind = errors.New("nn: idx: read again")

// truncatedData reports that only got of the n elements' bytes arrived.
func truncatedData(got, size, n int) error {
	return fmt.Errorf("truncated data: %d of %d elements present", got/size, n)
}

// readIDXData reads n elements of the given type and size. The raw bytes
// are read in chunks of at most idxChunk bytes, so memory follows the data
// actually present; the float32 result is allocated once all of it has
// arrived, and decoded without further copying. When hold is not nil and
// the chunks would exceed hold() bytes, it drops them, reads the rest of
// the data without keeping it and returns errIDXRewind if it was all
// there.
func readIDXData(r io.Reader, typ byte, size, n int, hold func() int) ([]float32, error) {
	var chunks [][]byte
	held := 0
	for left := n * size; left > 0; {
		m := min(left, idxChunk)
		if hold != nil && held+m > hold() {
			clear(chunks)
			chunks = nil
			got, err := io.CopyN(io.Discard, r, int64(left))
			switch {
			case err == io.EOF:
				return nil, truncatedData(held+int(got), size, n)
			case err != nil:
				return nil, err
			}
			return nil, errIDXRewind
		}
		c := make([]byte, m)
		got, err := io.ReadFull(r, c)
		chunks = append(chunks, c[:got])
		left -= got
		held += got
		switch {
		case err == io.EOF || err == io.ErrUnexpectedEOF:
			return nil, truncatedData(held, size, n)
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

// readIDXInto reads len(out) elements of the given type and size into
// out, through at most idxGroup buffers of idxChunk bytes: it reads a
// group of chunks and decodes them in parallel (see readIDXData), then the
// next group.
func readIDXInto(r io.Reader, out []float32, typ byte, size int) error {
	per := idxChunk / size
	chunks := (len(out) + per - 1) / per
	bufs := make([][]byte, min(runtime.GOMAXPROCS(0), idxGroup, chunks))
	var wg sync.WaitGroup
	for first := 0; first < chunks; first += len(bufs) {
		k := min(len(bufs), chunks-first)
		for i := range k {
			lo := (first + i) * per
			m := (min(lo+per, len(out)) - lo) * size
			if bufs[i] == nil {
				bufs[i] = make([]byte, min(idxChunk, len(out)*size))
			}
			if got, err := io.ReadFull(r, bufs[i][:m]); err != nil {
				if err == io.EOF || err == io.ErrUnexpectedEOF {
					return truncatedData(lo*size+got, size, len(out))
				}
				return err
			}
		}
		for i := range k {
			lo := (first + i) * per
			hi := min(lo+per, len(out))
			decode := func() { decodeIDX(out[lo:hi], bufs[i], typ) }
			if i == k-1 {
				decode()
			} else {
				wg.Go(decode)
			}
		}
		wg.Wait()
	}
	return nil
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
