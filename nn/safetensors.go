package nn

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
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

// SaveSafetensors writes ts and metadata to the file at path, creating or
// truncating it, as WriteSafetensors. Invalid tensors or metadata are
// reported before the file is touched; after a write error the file may be
// left incomplete. Errors name the path.
func SaveSafetensors(path string, ts []Named, metadata map[string]string) error {
	hdr, order, err := stPrepare(ts, metadata)
	if err != nil {
		return fmt.Errorf("nn: safetensors: %s: %w", path, err)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("nn: safetensors: %w", err)
	}
	err = stWrite(f, hdr, ts, order)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("nn: safetensors: %s: %w", path, err)
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
// before allocating any tensor storage, so it allocates at most about four
// times size (float32 storage for one-byte dtypes) whatever the header
// claims. It returns an error prefixed "nn: safetensors: " when size is
// below 8; the header length exceeds 100,000,000 bytes or what follows the
// length prefix; the header is not valid UTF-8, does not start with '{' or
// is not a single JSON object; a key (tensor name, metadata key or entry
// field) is repeated; a tensor name is empty; "__metadata__" is neither
// null nor an object of strings; an entry lacks dtype, shape or
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

// stEntry is one tensor entry of a header.
type stEntry struct {
	name       string
	dtype      string
	size       int // bytes per element
	shape      []int
	n          int // elements
	begin, end uint64
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
	if err := stCheckLayout(es, uint64(size-dataStart)); err != nil {
		return nil, nil, err
	}

	ts := make([]Named, len(es))
	var buf []byte
	for i, e := range es {
		data := make([]float32, e.n)
		nbytes := e.end - e.begin
		if buf == nil && nbytes > 0 {
			buf = make([]byte, min(stChunk, size-dataStart))
		}
		for off := uint64(0); off < nbytes; {
			m := min(uint64(len(buf)), nbytes-off)
			if err := stReadAt(r, buf[:m], dataStart+int64(e.begin+off)); err != nil {
				return nil, nil, fmt.Errorf("reading tensor %q: %w", e.name, err)
			}
			stDecode(e.dtype, data[off/uint64(e.size):], buf[:m])
			off += m
		}
		ts[i] = Named{Name: e.name, T: tensor.FromSlice(data, e.shape...), DType: e.dtype}
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

// stParseHeader parses and checks the header's JSON on its own, without
// regard to the size of the data buffer.
func stParseHeader(hdr []byte) ([]stEntry, map[string]string, error) {
	if !utf8.Valid(hdr) {
		return nil, nil, errors.New("header is not valid UTF-8")
	}
	if len(hdr) == 0 || hdr[0] != '{' {
		return nil, nil, errors.New("header does not start with '{'")
	}
	d := json.NewDecoder(bytes.NewReader(hdr))
	d.UseNumber()
	if _, err := stToken(d, "header"); err != nil { // the '{' checked above
		return nil, nil, err
	}
	var (
		es   []stEntry
		meta map[string]string
		seen = make(map[string]bool)
	)
	for d.More() {
		key, err := stKey(d, "header")
		if err != nil {
			return nil, nil, err
		}
		if seen[key] {
			return nil, nil, fmt.Errorf("header: duplicate key %q", key)
		}
		seen[key] = true
		if key == stMetadataKey {
			if meta, err = stParseMetadata(d); err != nil {
				return nil, nil, err
			}
			continue
		}
		if key == "" {
			return nil, nil, errors.New("header: tensor with an empty name")
		}
		e, err := stParseEntry(d, key)
		if err != nil {
			return nil, nil, err
		}
		es = append(es, e)
	}
	if err := stEnd(d, '}', "header"); err != nil {
		return nil, nil, err
	}
	if tok, err := d.Token(); err != io.EOF {
		if err != nil {
			return nil, nil, fmt.Errorf("header: invalid JSON: %w", err)
		}
		return nil, nil, fmt.Errorf("header: data after the JSON object: %v", tok)
	}
	return es, meta, nil
}

// stToken returns the next JSON token, describing syntax errors by where.
func stToken(d *json.Decoder, where string) (json.Token, error) {
	tok, err := d.Token()
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return nil, fmt.Errorf("%s: invalid JSON: %w", where, err)
	}
	return tok, nil
}

// stKey returns the next object key.
func stKey(d *json.Decoder, where string) (string, error) {
	tok, err := stToken(d, where)
	if err != nil {
		return "", err
	}
	k, ok := tok.(string)
	if !ok {
		return "", fmt.Errorf("%s: invalid JSON: object key is %v", where, tok)
	}
	return k, nil
}

// stEnd consumes the closing delimiter of the current object or array.
func stEnd(d *json.Decoder, delim json.Delim, where string) error {
	tok, err := stToken(d, where)
	if err != nil {
		return err
	}
	if tok != delim {
		return fmt.Errorf("%s: invalid JSON: %v where %v was expected", where, tok, delim)
	}
	return nil
}

// stParseMetadata parses the value of "__metadata__": null (no metadata) or
// an object of strings.
func stParseMetadata(d *json.Decoder) (map[string]string, error) {
	const where = "__metadata__"
	tok, err := stToken(d, where)
	if err != nil {
		return nil, err
	}
	if tok == nil {
		return nil, nil
	}
	if tok != json.Delim('{') {
		return nil, fmt.Errorf("%s is %s, not an object of strings", where, stDescribe(tok))
	}
	m := make(map[string]string)
	for d.More() {
		k, err := stKey(d, where)
		if err != nil {
			return nil, err
		}
		if _, dup := m[k]; dup {
			return nil, fmt.Errorf("%s: duplicate key %q", where, k)
		}
		tok, err := stToken(d, where)
		if err != nil {
			return nil, err
		}
		v, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("%s: value of %q is %s, not a string", where, k, stDescribe(tok))
		}
		m[k] = v
	}
	return m, stEnd(d, '}', where)
}

// stDescribe names the JSON value starting with tok.
func stDescribe(tok json.Token) string {
	switch tok := tok.(type) {
	case nil:
		return "null"
	case json.Delim:
		if tok == '[' {
			return "an array"
		}
		return "an object"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	}
	return "a number"
}

// stParseEntry parses the entry of the tensor called name and checks it on
// its own: its fields, dtype and shape.
func stParseEntry(d *json.Decoder, name string) (stEntry, error) {
	where := fmt.Sprintf("tensor %q", name)
	e := stEntry{name: name}
	tok, err := stToken(d, where)
	if err != nil {
		return e, err
	}
	if tok != json.Delim('{') {
		return e, fmt.Errorf("%s: entry is %s, not an object", where, stDescribe(tok))
	}
	var dims, offs []uint64
	var hasDtype, hasShape, hasOffsets bool
	for d.More() {
		k, err := stKey(d, where)
		if err != nil {
			return e, err
		}
		switch k {
		case "dtype":
			if hasDtype {
				return e, fmt.Errorf("%s: duplicate field %q", where, k)
			}
			hasDtype = true
			tok, err := stToken(d, where)
			if err != nil {
				return e, err
			}
			s, ok := tok.(string)
			if !ok {
				return e, fmt.Errorf("%s: dtype is %s, not a string", where, stDescribe(tok))
			}
			e.dtype = s
		case "shape":
			if hasShape {
				return e, fmt.Errorf("%s: duplicate field %q", where, k)
			}
			hasShape = true
			if dims, err = stParseUints(d, where, "shape", tensor.MaxDims); err != nil {
				return e, err
			}
		case "data_offsets":
			if hasOffsets {
				return e, fmt.Errorf("%s: duplicate field %q", where, k)
			}
			hasOffsets = true
			if offs, err = stParseUints(d, where, "data_offsets", 2); err != nil {
				return e, err
			}
			if len(offs) != 2 {
				return e, fmt.Errorf("%s: data_offsets has %d numbers, not [begin, end]", where, len(offs))
			}
		default:
			// Unknown fields are ignored, as by the reference.
			var skip json.RawMessage
			if err := d.Decode(&skip); err != nil {
				return e, fmt.Errorf("%s: invalid JSON: %w", where, err)
			}
		}
	}
	if err := stEnd(d, '}', where); err != nil {
		return e, err
	}
	switch {
	case !hasDtype:
		return e, fmt.Errorf("%s: missing dtype", where)
	case !hasShape:
		return e, fmt.Errorf("%s: missing shape", where)
	case !hasOffsets:
		return e, fmt.Errorf("%s: missing data_offsets", where)
	}
	if e.size = stDtypeSize(e.dtype); e.size == 0 {
		return e, fmt.Errorf("%s: unsupported dtype %q", where, e.dtype)
	}
	e.begin, e.end = offs[0], offs[1]
	if e.begin > e.end {
		return e, fmt.Errorf("%s: data_offsets [%d, %d] end before they begin", where, e.begin, e.end)
	}
	// The product of the non-zero dimensions must fit in an int (so that
	// strides do too), and so must the byte count.
	e.shape = make([]int, len(dims))
	p, zero := 1, false
	for i, dim := range dims {
		if dim > math.MaxInt || dim != 0 && p > math.MaxInt/int(dim) {
			return e, fmt.Errorf("%s: shape %v overflows the element count", where, dims)
		}
		e.shape[i] = int(dim)
		if dim == 0 {
			zero = true
		} else {
			p *= int(dim)
		}
	}
	if p > math.MaxInt/e.size {
		return e, fmt.Errorf("%s: shape %v overflows the byte count", where, dims)
	}
	if !zero {
		e.n = p
	}
	return e, nil
}

// stParseUints parses an array of at most maxLen non-negative integers.
func stParseUints(d *json.Decoder, where, field string, maxLen int) ([]uint64, error) {
	tok, err := stToken(d, where)
	if err != nil {
		return nil, err
	}
	if tok != json.Delim('[') {
		return nil, fmt.Errorf("%s: %s is %s, not an array", where, field, stDescribe(tok))
	}
	var us []uint64
	for d.More() {
		if len(us) == maxLen {
			return nil, fmt.Errorf("%s: %s has more than %d numbers", where, field, maxLen)
		}
		tok, err := stToken(d, where)
		if err != nil {
			return nil, err
		}
		num, ok := tok.(json.Number)
		if !ok {
			return nil, fmt.Errorf("%s: %s holds %s, not a number", where, field, stDescribe(tok))
		}
		u, err := strconv.ParseUint(string(num), 10, 64)
		switch {
		case strings.HasPrefix(string(num), "-"):
			return nil, fmt.Errorf("%s: %s holds negative number %s", where, field, num)
		case errors.Is(err, strconv.ErrRange):
			return nil, fmt.Errorf("%s: %s holds %s, which overflows uint64", where, field, num)
		case err != nil:
			return nil, fmt.Errorf("%s: %s holds %s, not an integer", where, field, num)
		}
		us = append(us, u)
	}
	return us, stEnd(d, ']', where)
}

// stCheckLayout sorts es by data offsets (then name) and checks that each
// tensor's range holds exactly its data and that the ranges tile the data
// buffer of dataLen bytes, as the reference's Metadata::validate and its
// MetadataIncompleteBuffer check do.
func stCheckLayout(es []stEntry, dataLen uint64) error {
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
		case e.end-e.begin != uint64(e.n*e.size):
			return fmt.Errorf("tensor %q: data_offsets [%d, %d] span %d bytes, but %s shape %v needs %d", e.name, e.begin, e.end, e.end-e.begin, e.dtype, e.shape, e.n*e.size)
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
