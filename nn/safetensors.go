package nn

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/lanesgo/lanes/tensor"
)

// The safetensors format (https://github.com/huggingface/safetensors) is an
// 8-byte little-endian unsigned header length N, N bytes of UTF-8 JSON header
// and the data buffer. The header is an object mapping each tensor name to
// {"dtype": "F32", "shape": [...], "data_offsets": [begin, end]}, the
// offsets counting bytes from the start of the data buffer, plus an optional
// "__metadata__" object of strings. Data is little-endian and row-major.

const (
	// stMaxHeader is the reference implementation's MAX_HEADER_SIZE.
	stMaxHeader = 100_000_000
	// stMetadataKey is the header key holding the free-form metadata.
	stMetadataKey = "__metadata__"
	// stChunk is the size of the scratch buffer used to convert data.
	stChunk = 1 << 16
)

// Named is one tensor of a safetensors file: its name, its values (float32,
// contiguous) and the dtype it had in the file ("F32" when written by lanes).
type Named struct {
	Name  string
	T     *tensor.Tensor
	DType string
}

// WriteSafetensors writes ts to w in the safetensors format, every tensor as
// F32, with metadata (if not empty) as the header's "__metadata__" object.
// The tensors may come in any order and may be non-contiguous views; Named.DType
// is ignored.
//
// The output is byte for byte what the reference serializer (the Rust core
// of Python's safetensors) writes for the same float32 tensors: compact JSON
// with "__metadata__" first and then the tensors sorted by name (bytewise),
// each entry's fields in the order dtype, shape, data_offsets; strings
// escaped as serde_json does; the header padded with spaces to a multiple
// of 8 bytes; the data laid out in header order. The reference orders
// metadata keys by a randomly seeded hash, so with more than one metadata
// key it has no single output; WriteSafetensors sorts them. Python's
// metadata={} writes an empty "__metadata__" object where an empty map
// here writes none.
//
// It returns an error, having written nothing, if a name is empty, repeated,
// "__metadata__" or not valid UTF-8, a tensor is nil, a metadata string is
// not valid UTF-8 or the header would exceed 100,000,000 bytes (the
// reference's limit); otherwise it returns the first write error.
func WriteSafetensors(w io.Writer, ts []Named, metadata map[string]string) error {
	hdr, order, err := stPrepare(ts, metadata)
	if err != nil {
		return fmt.Errorf("nn: safetensors: %w", err)
	}
	if err := stWrite(w, hdr, ts, order); err != nil {
		return fmt.Errorf("nn: safetensors: %w", err)
	}
	return nil
}

// SaveSafetensors writes ts and metadata to the file at path as
// WriteSafetensors, replacing the file atomically: it writes a temporary
// file in the same directory (named after path's base name, starting with
// '.' and ending in ".tmp"), syncs it to disk, renames it over path (over
// the file a symbolic link at path points to) and syncs the directory
// where the system allows. A crash, a full disk or any error thus leaves
// either the previous file or the new one, never a partial file, and the
// temporary file is removed on error. A file replaced keeps its
// permission bits; a new one gets 0666 less the umask, as os.Create gives.
// Invalid tensors or metadata are reported before any file is created.
// Errors name the path.
func SaveSafetensors(path string, ts []Named, metadata map[string]string) error {
	hdr, order, err := stPrepare(ts, metadata)
	if err != nil {
		return fmt.Errorf("nn: safetensors: %s: %w", path, err)
	}
	err = writeFileAtomic(path, func(w io.Writer) error { return stWrite(w, hdr, ts, order) })
	if err != nil {
		return fmt.Errorf("nn: safetensors: %s: %w", path, err)
	}
	return nil
}

// saveHook, when not nil, wraps the writer of writeFileAtomic's temporary
// file (the tests make writes fail half way).
var saveHook func(io.Writer) io.Writer

// writeFileAtomic writes the file at path with write, through a temporary
// file renamed over it (see SaveSafetensors).
func writeFileAtomic(path string, write func(io.Writer) error) (err error) {
	target := path
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		if real, err := filepath.EvalSymlinks(path); err == nil {
			target = real
		}
	}
	dir, base := filepath.Split(target)
	var f *os.File
	var tmp string
	for range 100 {
		tmp = filepath.Join(dir, fmt.Sprintf(".%s.%016x.tmp", base, rand.Uint64()))
		f, err = os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return err
	}
	closed := false
	defer func() {
		if err != nil {
			if !closed {
				f.Close()
			}
			os.Remove(tmp)
		}
	}()
	if fi, err := os.Stat(target); err == nil && fi.Mode().IsRegular() {
		if err := f.Chmod(fi.Mode().Perm()); err != nil {
			return err
		}
	}
	var w io.Writer = f
	if saveHook != nil {
		w = saveHook(w)
	}
	if err := write(w); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	closed = true
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, target); err != nil {
		return err
	}
	// The rename is durable once the directory is synced; not every system
	// can open or sync a directory, and the file is in place either way.
	if d, err := os.Open(filepath.Clean(dir + ".")); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// stPrepare validates ts and metadata and returns the padded header and the
// order in which the tensors' data follow it.
func stPrepare(ts []Named, metadata map[string]string) (hdr []byte, order []int, err error) {
	order = make([]int, len(ts))
	for i, t := range ts {
		switch {
		case t.Name == "":
			return nil, nil, fmt.Errorf("tensor %d has an empty name", i)
		case t.Name == stMetadataKey:
			return nil, nil, fmt.Errorf("tensor %d: name %q is reserved for metadata", i, t.Name)
		case !utf8.ValidString(t.Name):
			return nil, nil, fmt.Errorf("tensor %d: name %q is not valid UTF-8", i, t.Name)
		case t.T == nil:
			return nil, nil, fmt.Errorf("tensor %q is nil", t.Name)
		}
		order[i] = i
	}
	// The reference sorts by dtype alignment, descending, then by name;
	// every tensor here is F32, so by name alone (Rust's str order is
	// bytewise, as Go's).
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(ts[a].Name, ts[b].Name) })
	for i := 1; i < len(order); i++ {
		if ts[order[i]].Name == ts[order[i-1]].Name {
			return nil, nil, fmt.Errorf("duplicate tensor name %q", ts[order[i]].Name)
		}
	}

	hdr = append(hdr, '{')
	if len(metadata) > 0 {
		keys := make([]string, 0, len(metadata))
		size := 0 // a lower bound on the header's length
		for k, v := range metadata {
			if !utf8.ValidString(k) || !utf8.ValidString(v) {
				return nil, nil, fmt.Errorf("metadata %q: %q is not valid UTF-8", k, v)
			}
			if size += len(k) + len(v) + 6; size > stMaxHeader {
				return nil, nil, fmt.Errorf("header would be more than the limit of %d bytes", stMaxHeader)
			}
			keys = append(keys, k)
		}
		slices.Sort(keys)
		hdr = stAppendString(hdr, stMetadataKey)
		hdr = append(hdr, ":{"...)
		for i, k := range keys {
			if i > 0 {
				hdr = append(hdr, ',')
			}
			hdr = stAppendString(hdr, k)
			hdr = append(hdr, ':')
			hdr = stAppendString(hdr, metadata[k])
		}
		hdr = append(hdr, '}')
	}
	var off uint64
	for i, j := range order {
		if i > 0 || len(metadata) > 0 {
			hdr = append(hdr, ',')
		}
		t := ts[j].T
		hdr = stAppendString(hdr, ts[j].Name)
		hdr = append(hdr, `:{"dtype":"F32","shape":[`...)
		for k, d := range t.Shape() {
			if k > 0 {
				hdr = append(hdr, ',')
			}
			hdr = strconv.AppendInt(hdr, int64(d), 10)
		}
		hdr = append(hdr, `],"data_offsets":[`...)
		hdr = strconv.AppendUint(hdr, off, 10)
		off += 4 * uint64(t.Len())
		hdr = append(hdr, ',')
		hdr = strconv.AppendUint(hdr, off, 10)
		hdr = append(hdr, "]}"...)
		if len(hdr) > stMaxHeader {
			return nil, nil, fmt.Errorf("header would be more than the limit of %d bytes", stMaxHeader)
		}
	}
	hdr = append(hdr, '}')
	for len(hdr)%8 != 0 {
		hdr = append(hdr, ' ')
	}
	if len(hdr) > stMaxHeader {
		return nil, nil, fmt.Errorf("header would be %d bytes, more than the limit of %d bytes", len(hdr), stMaxHeader)
	}
	return hdr, order, nil
}

// stAppendString appends s as a JSON string escaped as serde_json does:
// '"' and '\\' backslashed, \b \t \n \f \r by name, other bytes below 0x20
// as \u00xx (lowercase hex), everything else (including non-ASCII) as is.
func stAppendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\b':
			b = append(b, `\b`...)
		case c == '\t':
			b = append(b, `\t`...)
		case c == '\n':
			b = append(b, `\n`...)
		case c == '\f':
			b = append(b, `\f`...)
		case c == '\r':
			b = append(b, `\r`...)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// stWrite writes the length prefix, hdr and the tensors' data in order.
func stWrite(w io.Writer, hdr []byte, ts []Named, order []int) error {
	var n [8]byte
	binary.LittleEndian.PutUint64(n[:], uint64(len(hdr)))
	if _, err := w.Write(n[:]); err != nil {
		return err
	}
	if _, err := w.Write(hdr); err != nil {
		return err
	}
	var buf []byte
	for _, j := range order {
		d := ts[j].T.Data()
		if buf == nil && len(d) > 0 {
			buf = make([]byte, stChunk)
		}
		for len(d) > 0 {
			m := min(len(d), stChunk/4)
			for i, v := range d[:m] {
				binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(v))
			}
			if _, err := w.Write(buf[:4*m]); err != nil {
				return err
			}
			d = d[m:]
		}
	}
	return nil
}

// ReadSafetensors parses the safetensors file of the given size read
// through r and returns its tensors, in the order of their data in the
// file (ties, which only zero-size tensors can have, by name), and its
// metadata (nil when the header has none).
//
// Every tensor is converted to a contiguous float32 tensor; Named.DType
// records the dtype it had. Supported dtypes: F32, F64, F16, BF16, I64, I32,
// I16, I8, U64, U32, U16, U8 and BOOL (false 0, true 1). F64 values are
// rounded to the nearest float32, overflowing to ±Inf; integers of
// magnitude above 2^24 are rounded to the nearest float32 and so may lose
// precision. NaN, infinity and signed zero bit patterns of F32 data are
// kept.
//
// ReadSafetensors never panics. It validates the whole header against size
// before allocating any tensor storage, and whatever the header holds it
// allocates at most 4·D + 12·H + 80 KiB bytes in all, where H is the
// header's length and D the data buffer's. The float32 storage takes up to
// 4 bytes per data byte (for one-byte dtypes), and reading it a 64 KiB
// buffer. The header's JSON is scanned in place; the entries, tensors and
// metadata map it describes take at most 12 bytes per header byte (a
// tensor keeps its shape and strides as two []int, 16 bytes per dimension
// written in 2 header bytes; a metadata object of many short keys, the
// worst case measured, takes about 10.5), and zero-size tensors allocate
// no storage. For a file whose header is small beside its data that is
// about four times size.
//
// It returns an error prefixed "nn: safetensors: " when size is below 8;
// the header length exceeds 100,000,000 bytes or what follows the length
// prefix; the header is not valid UTF-8, does not start with '{' or is not
// a single JSON object (its syntax checked as by encoding/json, which also
// refuses nesting about 10,000 levels deep); a key (tensor name, metadata
// key or entry field) is repeated; a tensor name is empty; "__metadata__"
// is neither null nor an object of strings; an entry lacks dtype, shape or
// data_offsets, has an unsupported dtype, a dimension that is not a
// non-negative integer, more than tensor.MaxDims dimensions or an element
// count that overflows, or data_offsets that are not [begin, end] with
// begin <= end; a tensor's byte length end-begin is not its element count
// times its dtype's size; the tensors' ranges, sorted by begin, overlap or
// leave a gap; or they do not end exactly at the end of the file (trailing
// bytes are rejected, as by the reference). Errors from r are wrapped.
// Fields of an entry other than these three are ignored, as by the
// reference; unlike the reference, which keeps the last of repeated tensor
// names, repeated keys are errors.
func ReadSafetensors(r io.ReaderAt, size int64) ([]Named, map[string]string, error) {
	ts, meta, err := stRead(r, size)
	if err != nil {
		return nil, nil, fmt.Errorf("nn: safetensors: %w", err)
	}
	return ts, meta, nil
}

// LoadSafetensors reads the safetensors file at path, as ReadSafetensors.
// Errors name the path.
func LoadSafetensors(path string) ([]Named, map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("nn: safetensors: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("nn: safetensors: %w", err)
	}
	ts, meta, err := stRead(f, fi.Size())
	if err != nil {
		return nil, nil, fmt.Errorf("nn: safetensors: %s: %w", path, err)
	}
	return ts, meta, nil
}

// stEntry is one tensor entry of a header. Its shape is not stored: it is
// parsed again from the header, at shapeAt, when needed, so that the
// entries take the same memory whatever their number of dimensions.
type stEntry struct {
	name       string
	begin, end uint64
	shapeAt    int32 // offset in the header of the shape's '['
	dtype      uint8 // index in stDtypes
	misfit     bool  // end-begin is not the element count times the size
}

// stDtypes are the supported dtypes.
var stDtypes = [...]string{"F64", "I64", "U64", "F32", "I32", "U32", "F16", "BF16", "I16", "U16", "I8", "U8", "BOOL"}

// stDtypeCode returns the index of dtype in stDtypes, or -1.
func stDtypeCode(dtype []byte) int {
	for i, d := range stDtypes {
		if string(dtype) == d {
			return i
		}
	}
	return -1
}

// stDtypeSize returns the bytes per element of a supported dtype, else 0.
func stDtypeSize(dtype string) int {
	switch dtype {
	case "F64", "I64", "U64":
		return 8
	case "F32", "I32", "U32":
		return 4
	case "F16", "BF16", "I16", "U16":
		return 2
	case "I8", "U8", "BOOL":
		return 1
	}
	return 0
}

func stRead(r io.ReaderAt, size int64) ([]Named, map[string]string, error) {
	if size < 8 {
		return nil, nil, fmt.Errorf("file is %d bytes, shorter than the 8-byte header length", size)
	}
	var nb [8]byte
	if err := stReadAt(r, nb[:], 0); err != nil {
		return nil, nil, fmt.Errorf("reading header length: %w", err)
	}
	n := binary.LittleEndian.Uint64(nb[:])
	if n > stMaxHeader {
		return nil, nil, fmt.Errorf("header length %d exceeds the limit of %d bytes", n, stMaxHeader)
	}
	if n > uint64(size-8) {
		return nil, nil, fmt.Errorf("header length %d exceeds the %d bytes after the length prefix", n, size-8)
	}
	hdr := make([]byte, n)
	if err := stReadAt(r, hdr, 8); err != nil {
		return nil, nil, fmt.Errorf("reading header: %w", err)
	}
	es, meta, err := stParseHeader(hdr)
	if err != nil {
		return nil, nil, err
	}
	dataStart := 8 + int64(n)
	if err := stCheckLayout(hdr, es, uint64(size-dataStart)); err != nil {
		return nil, nil, err
	}

	ts := make([]Named, len(es))
	var buf []byte
	var shape [tensor.MaxDims]int
	for i, e := range es {
		dtype := stDtypes[e.dtype]
		esize := uint64(stDtypeSize(dtype))
		nbytes := e.end - e.begin
		data := make([]float32, nbytes/esize) // no allocation for zero-size tensors
		if buf == nil && nbytes > 0 {
			buf = make([]byte, min(stChunk, size-dataStart))
		}
		for off := uint64(0); off < nbytes; {
			m := min(uint64(len(buf)), nbytes-off)
			if err := stReadAt(r, buf[:m], dataStart+int64(e.begin+off)); err != nil {
				return nil, nil, fmt.Errorf("reading tensor %q: %w", e.name, err)
			}
			stDecode(dtype, data[off/esize:], buf[:m])
			off += m
		}
		ts[i] = Named{Name: e.name, T: tensor.FromSlice(data, stShape(hdr, e, shape[:0])...), DType: dtype}
	}
	return ts, meta, nil
}

// stReadAt fills p from r at off.
func stReadAt(r io.ReaderAt, p []byte, off int64) error {
	n, err := r.ReadAt(p, off)
	if n == len(p) {
		return nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// stShape appends the shape of e, parsed again from hdr, to dst.
func stShape(hdr []byte, e stEntry, dst []int) []int {
	var dims [tensor.MaxDims]uint64
	p := stParser{b: hdr, i: int(e.shapeAt)}
	k, _ := p.uints("shape", dims[:]) // checked by stParseEntry
	for _, d := range dims[:k] {
		dst = append(dst, int(d))
	}
	return dst
}

// stParser scans a header's JSON in place, allocating nothing but the
// strings it returns. It accepts exactly what encoding/json accepts
// (RFC 8259 on valid UTF-8) and decodes strings as encoding/json does.
type stParser struct {
	b     []byte
	i     int
	name  string // the tensor whose entry is being parsed, for messages
	where int    // what is being parsed: inHeader, inMetadata or inEntry
	stack []byte // the containers open in skip
}

const (
	inHeader = iota
	inMetadata
	inEntry
)

// stMinEntry is the length of the shortest tensor entry, in a header's
// JSON, with its separating comma:
// "a":{"dtype":"U8","shape":[],"data_offsets":[0,0]},
const stMinEntry = 51

// stMaxDepth is encoding/json's limit on nesting.
const stMaxDepth = 10000

func (p *stParser) context() string {
	switch p.where {
	case inMetadata:
		return stMetadataKey
	case inEntry:
		return fmt.Sprintf("tensor %q", p.name)
	}
	return "header"
}

// errorf returns an error about the current context.
func (p *stParser) errorf(format string, args ...any) error {
	return fmt.Errorf("%s: %s", p.context(), fmt.Sprintf(format, args...))
}

// unexpected reports a syntax error at p.i, where want was expected.
func (p *stParser) unexpected(want string) error {
	if p.i >= len(p.b) {
		return fmt.Errorf("%s: invalid JSON: %w where %s was expected", p.context(), io.ErrUnexpectedEOF, want)
	}
	r, _ := utf8.DecodeRune(p.b[p.i:])
	return p.errorf("invalid JSON: %q at byte %d where %s was expected", r, p.i, want)
}

// peek skips white space and returns the next byte, or 0 at the end.
func (p *stParser) peek() byte {
	for ; p.i < len(p.b); p.i++ {
		switch c := p.b[p.i]; c {
		case ' ', '\t', '\n', '\r':
		default:
			return c
		}
	}
	return 0
}

// expect consumes c, after white space.
func (p *stParser) expect(c byte) error {
	if p.peek() != c {
		return p.unexpected(strconv.QuoteRune(rune(c)))
	}
	p.i++
	return nil
}

// more consumes the ',' or the closing delim after an element of an
// object or array and reports whether another element follows.
func (p *stParser) more(delim byte) (bool, error) {
	switch p.peek() {
	case ',':
		p.i++
		return true, nil
	case delim:
		p.i++
		return false, nil
	}
	return false, p.unexpected(fmt.Sprintf("',' or %q", delim))
}

// open consumes the '{' or '[' at p.i (already peeked) and reports whether
// the object or array has elements, consuming its end if not.
func (p *stParser) open(delim byte) bool {
	p.i++
	if p.peek() == delim {
		p.i++
		return false
	}
	return true
}

// str scans the string at p.i and returns its contents as they are in the
// header, escapes undecoded, and whether it has escapes.
func (p *stParser) str() (raw []byte, esc bool, err error) {
	if p.peek() != '"' {
		return nil, false, p.unexpected("a string")
	}
	start := p.i + 1
	for i := start; i < len(p.b); i++ {
		switch c := p.b[i]; {
		case c == '"':
			p.i = i + 1
			return p.b[start:i], esc, nil
		case c == '\\':
			esc = true
			if i++; i == len(p.b) {
				break
			}
			switch p.b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+5 > len(p.b) || stHex4(p.b[i+1:i+5]) < 0 {
					p.i = i
					return nil, false, p.errorf("invalid JSON: bad \\u escape at byte %d", i-1)
				}
				i += 4
			default:
				p.i = i
				return nil, false, p.errorf("invalid JSON: bad escape \\%c at byte %d", p.b[i], i-1)
			}
		case c < 0x20:
			p.i = i
			return nil, false, p.errorf("invalid JSON: control character %#02x in a string at byte %d", c, i)
		}
	}
	p.i = len(p.b)
	return nil, false, p.unexpected("the end of a string")
}

// text scans a string and returns it decoded.
func (p *stParser) text() (string, error) {
	raw, esc, err := p.str()
	if err != nil {
		return "", err
	}
	if !esc {
		return string(raw), nil
	}
	return stUnquote(raw), nil
}

// stHex4 decodes 4 hex digits, or returns -1.
func stHex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}

// stUnquote decodes the escapes of raw, a string checked by str, as
// encoding/json does: a \u escape of a surrogate not paired with the one
// that follows becomes U+FFFD.
func stUnquote(raw []byte) string {
	var sb strings.Builder
	sb.Grow(len(raw))
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			sb.WriteByte(c)
			i++
			continue
		}
		c = raw[i+1]
		i += 2
		switch c {
		case 'b':
			sb.WriteByte('\b')
		case 'f':
			sb.WriteByte('\f')
		case 'n':
			sb.WriteByte('\n')
		case 'r':
			sb.WriteByte('\r')
		case 't':
			sb.WriteByte('\t')
		case 'u':
			r := stHex4(raw[i:])
			i += 4
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if i+6 <= len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
					r2 = stHex4(raw[i+2:])
				}
				if dec := utf16.DecodeRune(r, r2); dec != unicode.ReplacementChar {
					i += 6
					r = dec
				} else {
					r = unicode.ReplacementChar
				}
			}
			sb.WriteRune(r)
		default: // '"', '\\', '/'
			sb.WriteByte(c)
		}
	}
	return sb.String()
}

// number scans the number at p.i and returns it as written.
func (p *stParser) number() ([]byte, error) {
	b, i, start := p.b, p.i, p.i
	digits := func() bool {
		j := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		return i > j
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case !digits():
		p.i = i
		return nil, p.unexpected("a value")
	}
	if i < len(b) && b[i] == '.' {
		if i++; !digits() {
			p.i = i
			return nil, p.unexpected("a digit")
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		if i++; i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			p.i = i
			return nil, p.unexpected("a digit")
		}
	}
	p.i = i
	return b[start:i], nil
}

// literal scans true, false or null.
func (p *stParser) literal() error {
	for _, lit := range [...]string{"true", "false", "null"} {
		if p.b[p.i] == lit[0] {
			if !bytes.HasPrefix(p.b[p.i:], []byte(lit)) {
				return p.unexpected(strconv.Quote(lit))
			}
			p.i += len(lit)
			return nil
		}
	}
	return p.unexpected("a value")
}

// scalar scans a value that is not an object or array.
func (p *stParser) scalar() error {
	switch p.peek() {
	case '"':
		_, _, err := p.str()
		return err
	case 't', 'f', 'n':
		return p.literal()
	}
	_, err := p.number()
	return err
}

// skip scans any value, checking its syntax, and returns the description
// of its kind (as stDescribe).
func (p *stParser) skip() (string, error) {
	kind := stDescribe(p.peek())
	p.stack = p.stack[:0]
	for {
		// A value.
		switch c := p.peek(); c {
		case '{', '[':
			end := byte('}')
			if c == '[' {
				end = ']'
			}
			if len(p.stack) == stMaxDepth {
				return "", p.errorf("invalid JSON: nesting deeper than %d at byte %d", stMaxDepth, p.i)
			}
			if !p.open(end) {
				break
			}
			p.stack = append(p.stack, end)
			if c == '{' {
				if err := p.key(); err != nil {
					return "", err
				}
			}
			continue
		default:
			if err := p.scalar(); err != nil {
				return "", err
			}
		}
		// After a value: close what ends here, then go on to the next one.
		for {
			if len(p.stack) == 0 {
				return kind, nil
			}
			end := p.stack[len(p.stack)-1]
			more, err := p.more(end)
			if err != nil {
				return "", err
			}
			if more {
				if end == '}' {
					if err := p.key(); err != nil {
						return "", err
					}
				}
				break
			}
			p.stack = p.stack[:len(p.stack)-1]
		}
	}
}

// key scans an object key and its colon.
func (p *stParser) key() error {
	if _, _, err := p.str(); err != nil {
		return err
	}
	return p.expect(':')
}

// stDescribe names the kind of JSON value starting with c.
func stDescribe(c byte) string {
	switch c {
	case 'n':
		return "null"
	case '[':
		return "an array"
	case '{':
		return "an object"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	}
	return "a number"
}

// stParseHeader parses and checks the header's JSON on its own, without
// regard to the size of the data buffer.
func stParseHeader(hdr []byte) ([]stEntry, map[string]string, error) {
	if !utf8.Valid(hdr) {
		return nil, nil, errors.New("header is not valid UTF-8")
	}
	if len(hdr) == 0 || hdr[0] != '{' {
		return nil, nil, errors.New("header does not start with '{'")
	}
	if len(hdr) > math.MaxInt32 {
		// Not reached: stMaxHeader is smaller; shapeAt is an int32.
		return nil, nil, errors.New("header too long")
	}
	p := &stParser{b: hdr}
	var (
		// Allocated once for as many entries as the header can hold:
		// growing it would allocate up to five times its final size.
		es      = make([]stEntry, 0, len(hdr)/stMinEntry)
		meta    map[string]string
		hasMeta bool
	)
	for more := p.open('}'); more; {
		raw, esc, err := p.str()
		if err != nil {
			return nil, nil, err
		}
		if err := p.expect(':'); err != nil {
			return nil, nil, err
		}
		var key string
		if esc {
			key = stUnquote(raw)
		}
		switch {
		case !esc && string(raw) == stMetadataKey || esc && key == stMetadataKey:
			if hasMeta {
				return nil, nil, fmt.Errorf("header: duplicate key %q", stMetadataKey)
			}
			hasMeta = true
			p.where = inMetadata
			if meta, err = p.metadata(); err != nil {
				return nil, nil, err
			}
		case len(raw) == 0:
			return nil, nil, errors.New("header: tensor with an empty name")
		default:
			if !esc {
				key = string(raw)
			}
			p.where, p.name = inEntry, key
			e, err := p.entry()
			if err != nil {
				return nil, nil, err
			}
			es = append(es, e)
		}
		p.where = inHeader
		if more, err = p.more('}'); err != nil {
			return nil, nil, err
		}
	}
	if c := p.peek(); p.i < len(p.b) {
		if strings.IndexByte(`{["-0123456789tfn`, c) >= 0 {
			return nil, nil, fmt.Errorf("header: data after the JSON object at byte %d", p.i)
		}
		return nil, nil, p.unexpected("the end of the header")
	}
	// Repeated names, found by sorting (a set would cost more memory than
	// the header).
	slices.SortFunc(es, func(a, b stEntry) int { return strings.Compare(a.name, b.name) })
	for i := 1; i < len(es); i++ {
		if es[i].name == es[i-1].name {
			return nil, nil, fmt.Errorf("header: duplicate key %q", es[i].name)
		}
	}
	return es, meta, nil
}

// metadata parses the value of "__metadata__": null (no metadata) or an
// object of strings.
func (p *stParser) metadata() (map[string]string, error) {
	switch c := p.peek(); c {
	case 'n':
		kind, err := p.skip()
		if err != nil {
			return nil, err
		}
		if kind != "null" {
			return nil, fmt.Errorf("%s is %s, not an object of strings", stMetadataKey, kind)
		}
		return nil, nil
	case '{':
	default:
		kind, err := p.skip()
		if err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%s is %s, not an object of strings", stMetadataKey, kind)
	}
	// A first pass checks the syntax and counts the pairs, so that the map
	// is allocated once, at its final size (growing it would allocate about
	// twice as much, more than the header's own size).
	start, count := p.i, 0
	for more := p.open('}'); more; count++ {
		if err := p.key(); err != nil {
			return nil, err
		}
		if _, err := p.skip(); err != nil {
			return nil, err
		}
		var err error
		if more, err = p.more('}'); err != nil {
			return nil, err
		}
	}
	p.i = start
	m := make(map[string]string, count)
	for more := p.open('}'); more; {
		k, err := p.text()
		if err != nil {
			return nil, err
		}
		if err := p.expect(':'); err != nil {
			return nil, err
		}
		if _, dup := m[k]; dup {
			return nil, p.errorf("duplicate key %q", k)
		}
		if p.peek() != '"' {
			kind, err := p.skip()
			if err != nil {
				return nil, err
			}
			return nil, p.errorf("value of %q is %s, not a string", k, kind)
		}
		v, err := p.text()
		if err != nil {
			return nil, err
		}
		m[k] = v
		if more, err = p.more('}'); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// entry parses the entry of tensor p.name and checks it on its own: its
// fields, dtype and shape.
func (p *stParser) entry() (stEntry, error) {
	e := stEntry{name: p.name}
	if p.peek() != '{' {
		kind, err := p.skip()
		if err != nil {
			return e, err
		}
		return e, p.errorf("entry is %s, not an object", kind)
	}
	var (
		dims                          [tensor.MaxDims]uint64
		offs                          [2]uint64
		ndims                         int
		dtype                         []byte
		hasDtype, hasShape, hasOffset bool
	)
	for more := p.open('}'); more; {
		k, esc, err := p.str()
		if err != nil {
			return e, err
		}
		if esc {
			k = []byte(stUnquote(k))
		}
		if err := p.expect(':'); err != nil {
			return e, err
		}
		switch string(k) {
		case "dtype":
			if hasDtype {
				return e, p.errorf("duplicate field %q", k)
			}
			hasDtype = true
			if p.peek() != '"' {
				kind, err := p.skip()
				if err != nil {
					return e, err
				}
				return e, p.errorf("dtype is %s, not a string", kind)
			}
			raw, esc, err := p.str()
			if err != nil {
				return e, err
			}
			if esc {
				raw = []byte(stUnquote(raw))
			}
			dtype = raw
		case "shape":
			if hasShape {
				return e, p.errorf("duplicate field %q", k)
			}
			hasShape = true
			p.peek()
			e.shapeAt = int32(p.i)
			if ndims, err = p.uints("shape", dims[:]); err != nil {
				return e, err
			}
		case "data_offsets":
			if hasOffset {
				return e, p.errorf("duplicate field %q", k)
			}
			hasOffset = true
			n, err := p.uints("data_offsets", offs[:])
			if err != nil {
				return e, err
			}
			if n != 2 {
				return e, p.errorf("data_offsets has %d numbers, not [begin, end]", n)
			}
		default:
			// Unknown fields are ignored, as by the reference.
			if _, err := p.skip(); err != nil {
				return e, err
			}
		}
		if more, err = p.more('}'); err != nil {
			return e, err
		}
	}
	switch {
	case !hasDtype:
		return e, p.errorf("missing dtype")
	case !hasShape:
		return e, p.errorf("missing shape")
	case !hasOffset:
		return e, p.errorf("missing data_offsets")
	}
	code := stDtypeCode(dtype)
	if code < 0 {
		return e, p.errorf("unsupported dtype %q", dtype)
	}
	e.dtype = uint8(code)
	size := stDtypeSize(stDtypes[code])
	e.begin, e.end = offs[0], offs[1]
	if e.begin > e.end {
		return e, p.errorf("data_offsets [%d, %d] end before they begin", e.begin, e.end)
	}
	// The product of the non-zero dimensions must fit in an int (so that
	// strides do too), and so must the byte count.
	p1, zero := 1, false
	for _, dim := range dims[:ndims] {
		if dim > math.MaxInt || dim != 0 && p1 > math.MaxInt/int(dim) {
			return e, p.errorf("shape %v overflows the element count", slices.Clone(dims[:ndims]))
		}
		if dim == 0 {
			zero = true
		} else {
			p1 *= int(dim)
		}
	}
	if p1 > math.MaxInt/size {
		return e, p.errorf("shape %v overflows the byte count", slices.Clone(dims[:ndims]))
	}
	if zero {
		p1 = 0
	}
	// Reported by stCheckLayout, after the checks that come first there.
	e.misfit = e.end-e.begin != uint64(p1*size)
	return e, nil
}

// uints parses an array of at most len(dst) non-negative integers into dst
// and returns how many there were.
func (p *stParser) uints(field string, dst []uint64) (int, error) {
	if p.peek() != '[' {
		kind, err := p.skip()
		if err != nil {
			return 0, err
		}
		return 0, p.errorf("%s is %s, not an array", field, kind)
	}
	n := 0
	for more := p.open(']'); more; {
		if n == len(dst) {
			return 0, p.errorf("%s has more than %d numbers", field, len(dst))
		}
		if c := p.peek(); c != '-' && (c < '0' || c > '9') {
			kind, err := p.skip()
			if err != nil {
				return 0, err
			}
			return 0, p.errorf("%s holds %s, not a number", field, kind)
		}
		num, err := p.number()
		if err != nil {
			return 0, err
		}
		u, err := strconv.ParseUint(string(num), 10, 64)
		switch {
		case num[0] == '-':
			return 0, p.errorf("%s holds negative number %s", field, num)
		case errors.Is(err, strconv.ErrRange):
			return 0, p.errorf("%s holds %s, which overflows uint64", field, num)
		case err != nil:
			return 0, p.errorf("%s holds %s, not an integer", field, num)
		}
		dst[n] = u
		n++
		if more, err = p.more(']'); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// stCheckLayout sorts es by data offsets (then name) and checks that each
// tensor's range holds exactly its data and that the ranges tile the data
// buffer of dataLen bytes, as the reference's Metadata::validate and its
// MetadataIncompleteBuffer check do.
func stCheckLayout(hdr []byte, es []stEntry, dataLen uint64) error {
	slices.SortFunc(es, func(a, b stEntry) int {
		if a.begin != b.begin {
			return cmpUint64(a.begin, b.begin)
		}
		if a.end != b.end {
			return cmpUint64(a.end, b.end)
		}
		return strings.Compare(a.name, b.name)
	})
	var pos uint64
	for _, e := range es {
		switch {
		case e.begin < pos:
			return fmt.Errorf("tensor %q: data_offsets [%d, %d] overlap the previous tensor, which ends at %d", e.name, e.begin, e.end, pos)
		case e.begin > pos:
			return fmt.Errorf("tensor %q: data_offsets [%d, %d] leave a gap of %d bytes after offset %d", e.name, e.begin, e.end, e.begin-pos, pos)
		case e.end > dataLen:
			return fmt.Errorf("tensor %q: data_offsets [%d, %d] end beyond the %d-byte data buffer", e.name, e.begin, e.end, dataLen)
		case e.misfit:
			sh := stShape(hdr, e, nil)
			n := 1
			for _, d := range sh {
				n *= d
			}
			size := stDtypeSize(stDtypes[e.dtype])
			return fmt.Errorf("tensor %q: data_offsets [%d, %d] span %d bytes, but %s shape %v needs %d", e.name, e.begin, e.end, e.end-e.begin, stDtypes[e.dtype], sh, n*size)
		}
		pos = e.end
	}
	if pos != dataLen {
		return fmt.Errorf("tensors cover %d bytes of the %d-byte data buffer, leaving %d trailing bytes", pos, dataLen, dataLen-pos)
	}
	return nil
}

func cmpUint64(a, b uint64) int {
	if a < b {
		return -1
	}
	return 1
}

// stDecode converts src, whole little-endian elements of dtype, into the
// first len(src)/size elements of dst.
func stDecode(dtype string, dst []float32, src []byte) {
	le := binary.LittleEndian
	switch dtype {
	case "F32":
		for i := range len(src) / 4 {
			dst[i] = math.Float32frombits(le.Uint32(src[4*i:]))
		}
	case "F64":
		for i := range len(src) / 8 {
			dst[i] = float32(math.Float64frombits(le.Uint64(src[8*i:])))
		}
	case "F16":
		for i := range len(src) / 2 {
			dst[i] = f16to32(le.Uint16(src[2*i:]))
		}
	case "BF16":
		for i := range len(src) / 2 {
			dst[i] = math.Float32frombits(uint32(le.Uint16(src[2*i:])) << 16)
		}
	case "I64":
		for i := range len(src) / 8 {
			dst[i] = float32(int64(le.Uint64(src[8*i:])))
		}
	case "U64":
		for i := range len(src) / 8 {
			dst[i] = float32(le.Uint64(src[8*i:]))
		}
	case "I32":
		for i := range len(src) / 4 {
			dst[i] = float32(int32(le.Uint32(src[4*i:])))
		}
	case "U32":
		for i := range len(src) / 4 {
			dst[i] = float32(le.Uint32(src[4*i:]))
		}
	case "I16":
		for i := range len(src) / 2 {
			dst[i] = float32(int16(le.Uint16(src[2*i:])))
		}
	case "U16":
		for i := range len(src) / 2 {
			dst[i] = float32(le.Uint16(src[2*i:]))
		}
	case "I8":
		for i, b := range src {
			dst[i] = float32(int8(b))
		}
	case "U8":
		for i, b := range src {
			dst[i] = float32(b)
		}
	case "BOOL":
		for i, b := range src {
			dst[i] = 0
			if b != 0 {
				dst[i] = 1
			}
		}
	}
}

// f16to32 converts IEEE 754 binary16 bits to float32 exactly, keeping the
// sign of zero and NaN payloads.
func f16to32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	man := uint32(h) & 0x3ff
	switch exp {
	case 0x1f: // Inf or NaN
		return math.Float32frombits(sign | 0x7f800000 | man<<13)
	case 0: // zero or subnormal: man·2^-24, exact in float32
		f := float32(man) * (1.0 / (1 << 24))
		if sign != 0 {
			f = -f
		}
		return f
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | man<<13)
}
