package nn

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lanesgo/lanes/tensor"
)

// stFile builds a safetensors file from a header and a data buffer, with no
// padding.
func stFile(hdr string, data []byte) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(hdr)))
	b = append(b, hdr...)
	return append(b, data...)
}

// stBytes returns the little-endian bytes of vs (each of which must be a
// fixed-size value).
func stBytes(vs ...any) []byte {
	var b []byte
	for _, v := range vs {
		var err error
		if b, err = binary.Append(b, binary.LittleEndian, v); err != nil {
			panic(err)
		}
	}
	return b
}

func stWriteBytes(t *testing.T, ts []Named, meta map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteSafetensors(&buf, ts, meta); err != nil {
		t.Fatalf("WriteSafetensors: %v", err)
	}
	return buf.Bytes()
}

func stReadBytes(t *testing.T, b []byte) ([]Named, map[string]string) {
	t.Helper()
	ts, meta, err := ReadSafetensors(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatalf("ReadSafetensors: %v", err)
	}
	return ts, meta
}

// stSameBits reports whether a and b have the same shape and bit-identical
// elements.
func stSameBits(a, b *tensor.Tensor) error {
	if !slices.Equal(a.Shape(), b.Shape()) {
		return fmt.Errorf("shape %v, want %v", a.Shape(), b.Shape())
	}
	da, db := a.Data(), b.Data()
	for i := range da {
		if math.Float32bits(da[i]) != math.Float32bits(db[i]) {
			return fmt.Errorf("element %d is %v (%#08x), want %v (%#08x)", i, da[i], math.Float32bits(da[i]), db[i], math.Float32bits(db[i]))
		}
	}
	return nil
}

func stSpecial() *tensor.Tensor {
	bits := []uint32{
		0x7fc00000, // quiet NaN
		0x7fc00001, // NaN with payload
		0xffc00000, // negative NaN
		0x7f800000, // +Inf
		0xff800000, // -Inf
		0x80000000, // -0
		0x00000001, // smallest subnormal
		0x7f7fffff, // largest finite
	}
	t := tensor.New(len(bits))
	for i, b := range bits {
		t.Set(math.Float32frombits(b), i)
	}
	return t
}

func TestSafetensorsRoundTrip(t *testing.T) {
	base := tensor.Arange(0, 6, 1).Reshape(2, 3)
	view := base.T() // 3×2, not contiguous
	if view.IsContiguous() {
		t.Fatal("test setup: view is contiguous")
	}
	ts := []Named{
		{Name: "w", T: base},
		{Name: "scalar", T: tensor.Scalar(-2.5)},
		{Name: "empty", T: tensor.New(3, 0, 2)},
		{Name: "view", T: view},
		{Name: "special", T: stSpecial()},
		{Name: "b.0", T: tensor.Full(7, 4)},
	}
	meta := map[string]string{"format": "pt", "note": "quote \" backslash \\ newline \n tab \t nul \x00 é\u2028"}

	out := stWriteBytes(t, ts, meta)
	n := binary.LittleEndian.Uint64(out)
	if (8+n)%8 != 0 {
		t.Errorf("data starts at %d, not a multiple of 8", 8+n)
	}
	rev := slices.Clone(ts)
	slices.Reverse(rev)
	if out2 := stWriteBytes(t, rev, meta); !bytes.Equal(out, out2) {
		t.Errorf("output depends on the order of ts")
	}

	got, gotMeta := stReadBytes(t, out)
	if !maps.Equal(gotMeta, meta) {
		t.Errorf("metadata = %q, want %q", gotMeta, meta)
	}
	// All F32, so data order is name order.
	want := slices.Clone(ts)
	slices.SortFunc(want, func(a, b Named) int { return strings.Compare(a.Name, b.Name) })
	if len(got) != len(want) {
		t.Fatalf("read %d tensors, want %d", len(got), len(want))
	}
	for i, g := range got {
		w := want[i]
		if g.Name != w.Name || g.DType != "F32" {
			t.Errorf("tensor %d = %q (%s), want %q (F32)", i, g.Name, g.DType, w.Name)
			continue
		}
		if g.T.Len() > 0 && !g.T.IsContiguous() {
			t.Errorf("%s: not contiguous", g.Name)
		}
		if err := stSameBits(g.T, w.T); err != nil {
			t.Errorf("%s: %v", g.Name, err)
		}
	}

	// The file wrappers write the same bytes and read them back.
	path := filepath.Join(t.TempDir(), "x.safetensors")
	if err := SaveSafetensors(path, ts, meta); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || !bytes.Equal(b, out) {
		t.Errorf("SaveSafetensors wrote other bytes than WriteSafetensors (err %v)", err)
	}
	got2, meta2, err := LoadSafetensors(path)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(meta2, meta) || len(got2) != len(got) {
		t.Errorf("LoadSafetensors differs from ReadSafetensors")
	}
	for i := range got2 {
		if err := stSameBits(got2[i].T, got[i].T); err != nil || got2[i].Name != got[i].Name {
			t.Errorf("LoadSafetensors tensor %d: %q %v", i, got2[i].Name, err)
		}
	}
}

func TestSafetensorsFileErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.safetensors")
	if _, _, err := LoadSafetensors(missing); err == nil || !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Errorf("LoadSafetensors(missing) = %v", err)
	}
	bad := filepath.Join(dir, "bad.safetensors")
	if err := os.WriteFile(bad, []byte("short"), 0o666); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadSafetensors(bad); err == nil || !strings.Contains(err.Error(), bad) || !strings.HasPrefix(err.Error(), "nn: safetensors: ") {
		t.Errorf("LoadSafetensors(bad) = %v", err)
	}
	dup := []Named{{Name: "a", T: tensor.New(1)}, {Name: "a", T: tensor.New(1)}}
	out := filepath.Join(dir, "dup.safetensors")
	if err := SaveSafetensors(out, dup, nil); err == nil || !strings.Contains(err.Error(), out) {
		t.Errorf("SaveSafetensors(duplicate names) = %v", err)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("SaveSafetensors created a file despite invalid tensors")
	}
	if err := SaveSafetensors(filepath.Join(dir, "no/such/dir/x"), nil, nil); err == nil {
		t.Errorf("SaveSafetensors into a missing directory succeeded")
	}
}

// The expected bytes below are the reference serializer's own: unit tests
// test_serialization, test_serialization_forced_alignement and test_empty in
// safetensors/src/tensor.rs of https://github.com/huggingface/safetensors
// (Rust core of the Python package).
func TestSafetensorsGolden(t *testing.T) {
	f32s := func(vs ...float32) []float32 { return vs }
	tests := []struct {
		name string
		ts   []Named
		meta map[string]string
		want []byte
	}{{
		name: "test_serialization",
		ts:   []Named{{Name: "attn.0", T: tensor.FromSlice(f32s(0, 1, 2, 3, 4, 5), 1, 2, 3)}},
		want: []byte{
			64, 0, 0, 0, 0, 0, 0, 0, 123, 34, 97, 116, 116, 110, 46, 48, 34, 58, 123, 34, 100,
			116, 121, 112, 101, 34, 58, 34, 70, 51, 50, 34, 44, 34, 115, 104, 97, 112, 101, 34,
			58, 91, 49, 44, 50, 44, 51, 93, 44, 34, 100, 97, 116, 97, 95, 111, 102, 102, 115,
			101, 116, 115, 34, 58, 91, 48, 44, 50, 52, 93, 125, 125, 0, 0, 0, 0, 0, 0, 128, 63,
			0, 0, 0, 64, 0, 0, 64, 64, 0, 0, 128, 64, 0, 0, 160, 64,
		},
	}, {
		name: "test_serialization_forced_alignement",
		ts:   []Named{{Name: "attn0", T: tensor.FromSlice(f32s(0, 1, 2, 3, 4, 5), 1, 1, 2, 3)}},
		want: []byte{
			72, 0, 0, 0, 0, 0, 0, 0, 123, 34, 97, 116, 116, 110, 48, 34, 58, 123, 34, 100, 116,
			121, 112, 101, 34, 58, 34, 70, 51, 50, 34, 44, 34, 115, 104, 97, 112, 101, 34, 58,
			91, 49, 44, 49, 44, 50, 44, 51, 93, 44, 34, 100, 97, 116, 97, 95, 111, 102, 102,
			115, 101, 116, 115, 34, 58, 91, 48, 44, 50, 52, 93, 125, 125, 32, 32, 32, 32, 32,
			32, 32, 0, 0, 0, 0, 0, 0, 128, 63, 0, 0, 0, 64, 0, 0, 64, 64, 0, 0, 128, 64, 0, 0,
			160, 64,
		},
	}, {
		name: "test_empty",
		want: []byte{8, 0, 0, 0, 0, 0, 0, 0, 123, 125, 32, 32, 32, 32, 32, 32},
	}, {
		name: "test_empty/metadata",
		meta: map[string]string{"framework": "pt"},
		want: []byte{
			40, 0, 0, 0, 0, 0, 0, 0, 123, 34, 95, 95, 109, 101, 116, 97, 100, 97, 116, 97, 95,
			95, 34, 58, 123, 34, 102, 114, 97, 109, 101, 119, 111, 114, 107, 34, 58, 34, 112,
			116, 34, 125, 125, 32, 32, 32, 32, 32,
		},
	}, {
		// Not from the reference's tests but from its rules: __metadata__
		// first, tensors sorted by name bytewise (all F32), data in that
		// order, serde_json escaping, space padding.
		name: "order_and_escaping",
		ts: []Named{
			{Name: "b", T: tensor.Scalar(2)},
			{Name: "a.b", T: tensor.New(0)},
			{Name: "a", T: tensor.Scalar(1)},
			{Name: "B", T: tensor.Scalar(-1)},
			{Name: "q\"\\\x01\b\t\n\f\r\x1f\x7f<>&é\u2028", T: tensor.New(1, 1)},
		},
		meta: map[string]string{"z": "1", "a": "2"},
		want: stFile(`{"__metadata__":{"a":"2","z":"1"},`+
			`"B":{"dtype":"F32","shape":[],"data_offsets":[0,4]},`+
			`"a":{"dtype":"F32","shape":[],"data_offsets":[4,8]},`+
			`"a.b":{"dtype":"F32","shape":[0],"data_offsets":[8,8]},`+
			`"b":{"dtype":"F32","shape":[],"data_offsets":[8,12]},`+
			`"q\"\\\u0001\b\t\n\f\r\u001f`+"\x7f<>&é\u2028"+`":{"dtype":"F32","shape":[1,1],"data_offsets":[12,16]}}`+
			"      ",
			stBytes(float32(-1), float32(1), float32(2), float32(0))),
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := stWriteBytes(t, tt.ts, tt.meta)
			if !bytes.Equal(got, tt.want) {
				t.Fatalf("WriteSafetensors wrote\n%q\nwant\n%q", got, tt.want)
			}
			back, meta := stReadBytes(t, got)
			if !maps.Equal(meta, tt.meta) || len(back) != len(tt.ts) {
				t.Fatalf("read back %d tensors, metadata %q", len(back), meta)
			}
			for _, b := range back {
				i := slices.IndexFunc(tt.ts, func(n Named) bool { return n.Name == b.Name })
				if i < 0 {
					t.Fatalf("read back unknown tensor %q", b.Name)
				}
				if err := stSameBits(b.T, tt.ts[i].T); err != nil {
					t.Errorf("%q: %v", b.Name, err)
				}
			}
		})
	}
}

func f32bits(vs ...uint32) []float32 {
	f := make([]float32, len(vs))
	for i, v := range vs {
		f[i] = math.Float32frombits(v)
	}
	return f
}

// Files whose header and data are spelled out by hand; the first few are
// the reference's own test inputs (bindings/python/tests/test_simple.py
// test_serialization and test_deserialization, and test_empty_shapes_allowed,
// test_zero_sized_tensor and test_whitespace_padded_header in
// safetensors/src/tensor.rs).
func TestReadSafetensorsDtypes(t *testing.T) {
	type want struct {
		name  string
		dtype string
		shape []int
		vals  []float32
	}
	zeros16 := "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
	tests := []struct {
		name string
		file []byte
		want []want
		meta map[string]string
	}{{
		name: "python_test_deserialization",
		file: []byte("<\x00\x00\x00\x00\x00\x00\x00{\"test\":{\"dtype\":\"I32\",\"shape\":[2,2],\"data_offsets\":[0,16]}}" + zeros16),
		want: []want{{"test", "I32", []int{2, 2}, []float32{0, 0, 0, 0}}},
	}, {
		name: "python_test_serialization",
		file: []byte("<\x00\x00\x00\x00\x00\x00\x00{\"test\":{\"dtype\":\"I32\",\"shape\":[2,2],\"data_offsets\":[0,16]}}\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00"),
		want: []want{{"test", "I32", []int{2, 2}, []float32{0, 0, 0, 1}}},
	}, {
		name: "test_empty_shapes_allowed",
		file: []byte("8\x00\x00\x00\x00\x00\x00\x00{\"test\":{\"dtype\":\"I32\",\"shape\":[],\"data_offsets\":[0,4]}}\x00\x00\x00\x00"),
		want: []want{{"test", "I32", []int{}, []float32{0}}},
	}, {
		name: "test_zero_sized_tensor",
		file: []byte("<\x00\x00\x00\x00\x00\x00\x00{\"test\":{\"dtype\":\"I32\",\"shape\":[2,0],\"data_offsets\":[0, 0]}}"),
		want: []want{{"test", "I32", []int{2, 0}, []float32{}}},
	}, {
		name: "test_whitespace_padded_header",
		file: []byte("\x06\x00\x00\x00\x00\x00\x00\x00{}\x0D\x20\x09\x0A"),
	}, {
		name: "F16",
		file: stFile(`{"h":{"dtype":"F16","shape":[12],"data_offsets":[0,24]}}`,
			stBytes([]uint16{0x3c00, 0xc000, 0x7bff, 0x0001, 0x03ff, 0x0400, 0x8000, 0x7c00, 0xfc00, 0x3555, 0x7e00, 0xfe01})),
		want: []want{{"h", "F16", []int{12}, append([]float32{1, -2, 65504, 1.0 / (1 << 24), 1023.0 / (1 << 24), 1.0 / (1 << 14),
			float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), 0.333251953125},
			f32bits(0x7fc00000, 0xffc02000)...)}},
	}, {
		name: "BF16",
		file: stFile(`{"b":{"dtype":"BF16","shape":[2,3],"data_offsets":[0,12]}}`,
			stBytes([]uint16{0x3f80, 0xc0a0, 0x7f80, 0x0001, 0x7fc1, 0x8000})),
		want: []want{{"b", "BF16", []int{2, 3}, f32bits(0x3f800000, 0xc0a00000, 0x7f800000, 0x00010000, 0x7fc10000, 0x80000000)}},
	}, {
		name: "F64",
		file: stFile(`{"d":{"dtype":"F64","shape":[5],"data_offsets":[0,40]}}`,
			stBytes([]float64{1.5, -0.1, 1e300, -1e-300, math.Copysign(0, -1)})),
		want: []want{{"d", "F64", []int{5}, []float32{1.5, -0.1, float32(math.Inf(1)), float32(math.Copysign(0, -1)), float32(math.Copysign(0, -1))}}},
	}, {
		name: "integers",
		file: stFile(`{"i64":{"dtype":"I64","shape":[4],"data_offsets":[0,32]},`+
			`"u64":{"dtype":"U64","shape":[1],"data_offsets":[32,40]},`+
			`"i32":{"dtype":"I32","shape":[3],"data_offsets":[40,52]},`+
			`"u32":{"dtype":"U32","shape":[1],"data_offsets":[52,56]},`+
			`"i16":{"dtype":"I16","shape":[2],"data_offsets":[56,60]},`+
			`"u16":{"dtype":"U16","shape":[1],"data_offsets":[60,62]},`+
			`"i8":{"dtype":"I8","shape":[2],"data_offsets":[62,64]},`+
			`"u8":{"dtype":"U8","shape":[2],"data_offsets":[64,66]},`+
			`"bool":{"dtype":"BOOL","shape":[3],"data_offsets":[66,69]}}`,
			stBytes([]int64{-3, 1<<53 + 1, math.MaxInt64, 1<<24 + 1}, uint64(math.MaxUint64),
				[]int32{-7, math.MaxInt32, math.MinInt32}, uint32(math.MaxUint32),
				[]int16{-32768, 32767}, uint16(65535), []int8{-128, 127}, []uint8{0, 255}, []uint8{0, 1, 2})),
		want: []want{
			{"i64", "I64", []int{4}, []float32{-3, 1 << 53, 1 << 63, 1 << 24}},
			{"u64", "U64", []int{1}, []float32{1 << 64}},
			{"i32", "I32", []int{3}, []float32{-7, 1 << 31, -(1 << 31)}},
			{"u32", "U32", []int{1}, []float32{1 << 32}},
			{"i16", "I16", []int{2}, []float32{-32768, 32767}},
			{"u16", "U16", []int{1}, []float32{65535}},
			{"i8", "I8", []int{2}, []float32{-128, 127}},
			{"u8", "U8", []int{2}, []float32{0, 255}},
			{"bool", "BOOL", []int{3}, []float32{0, 1, 1}},
		},
	}, {
		// Entries out of data order, zero-size tensors sharing an offset,
		// unknown fields, and null metadata are all accepted.
		name: "order_and_extras",
		file: stFile(`{"__metadata__":null,"z":{"data_offsets":[4,8],"shape":[1],"dtype":"F32","extra":{"x":[1,{}]}},`+
			`"e2":{"dtype":"F32","shape":[0,5],"data_offsets":[4,4]},"e1":{"dtype":"I8","shape":[3,0],"data_offsets":[4,4]},`+
			`"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`,
			stBytes(float32(1), float32(2))),
		want: []want{
			{"a", "F32", []int{1}, []float32{1}},
			{"e1", "I8", []int{3, 0}, []float32{}},
			{"e2", "F32", []int{0, 5}, []float32{}},
			{"z", "F32", []int{1}, []float32{2}},
		},
	}, {
		name: "metadata_escapes",
		file: stFile(`{"__metadata__":{"k\u00e9\n":"v\"\\\/\ud83d\ude00","":""}}`, nil),
		meta: map[string]string{"ké\n": "v\"\\/😀", "": ""},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, meta := stReadBytes(t, tt.file)
			if !maps.Equal(meta, tt.meta) || (meta == nil) != (tt.meta == nil) {
				t.Errorf("metadata = %#v, want %#v", meta, tt.meta)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("read %d tensors, want %d", len(got), len(tt.want))
			}
			for i, w := range tt.want {
				g := got[i]
				if g.Name != w.name || g.DType != w.dtype {
					t.Errorf("tensor %d = %q %s, want %q %s", i, g.Name, g.DType, w.name, w.dtype)
					continue
				}
				if err := stSameBits(g.T, tensor.FromSlice(w.vals, w.shape...)); err != nil {
					t.Errorf("%s: %v", w.name, err)
				}
			}
		})
	}
}

// stValid is a valid file with several dtypes and metadata.
func stValid() []byte {
	return stFile(`{"__metadata__":{"m":"v"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},`+
		`"b":{"dtype":"F16","shape":[],"data_offsets":[8,10]},"c":{"dtype":"U8","shape":[2,1],"data_offsets":[10,12]}}`,
		stBytes(float32(1), float32(-1), uint16(0x3c00), []uint8{3, 4}))
}

func TestReadSafetensorsErrors(t *testing.T) {
	ent := func(name, dtype, shape, offs string) string {
		return fmt.Sprintf(`%q:{"dtype":%q,"shape":%s,"data_offsets":%s}`, name, dtype, shape, offs)
	}
	obj := func(entries ...string) string { return "{" + strings.Join(entries, ",") + "}" }
	hdrLen := func(n uint64, rest string) []byte {
		return append(binary.LittleEndian.AppendUint64(nil, n), rest...)
	}
	zeros := make([]byte, 64)
	dims33 := "[" + strings.Repeat("1,", 32) + "1]"
	tests := []struct {
		name string
		file []byte
		want string
	}{
		{"empty file", nil, "shorter than the 8-byte header length"},
		{"7 bytes", []byte("\x00\x00\x00\x00\x00\x00\x00"), "shorter than the 8-byte header length"},
		{"header length 1<<62", hdrLen(1<<62, "{}"), "header length 4611686018427387904 exceeds the limit"},
		{"header length max", hdrLen(math.MaxUint64, "{}"), "exceeds the limit"},
		{"header length over 100MB", hdrLen(100_000_001, "{}"), "exceeds the limit of 100000000 bytes"},
		// Reference test_invalid_header_length.
		{"header length beyond file", hdrLen(60, ""), "header length 60 exceeds the 0 bytes after the length prefix"},
		{"header length one too many", hdrLen(3, "{}"), "exceeds the 2 bytes"},
		// Reference test_invalid_header_non_utf8 and test_invalid_header_not_json.
		{"non-UTF-8", hdrLen(1, "\xff"), "header is not valid UTF-8"},
		{"unterminated", hdrLen(1, "{"), "invalid JSON"},
		{"empty header", hdrLen(0, ""), "does not start with '{'"},
		{"array", stFile("[]", nil), "does not start with '{'"},
		{"leading space", stFile(" {}", nil), "does not start with '{'"},
		{"two objects", stFile("{} {}", nil), "data after the JSON object"},
		{"garbage after", stFile("{}x", nil), "invalid JSON"},
		{"NUL padding", stFile("{}\x00\x00", nil), "invalid JSON"},
		{"missing comma", stFile(`{"__metadata__":{"k":"v" "l":"w"}}`, nil), "invalid JSON"},
		{"missing colon", stFile(`{"__metadata__" {}}`, nil), "invalid JSON"},
		{"trailing comma", stFile(`{"__metadata__":{},}`, nil), "invalid JSON"},
		{"bad value", stFile(`{"a":{"dtype":"F32","x":tru,"shape":[],"data_offsets":[0,4]}}`, zeros[:4]), "invalid JSON"},
		{"bad string", stFile(`{"a\q":{}}`, nil), "invalid JSON"},
		{"nesting too deep", stFile(`{"a":{"dtype":"U8","shape":[0],"data_offsets":[0,0],"x":`+strings.Repeat("[", 10001)+strings.Repeat("]", 10001)+`}}`, nil), "invalid JSON"},
		{"bad escape in name", stFile(`{"\ud8":{}}`, nil), "invalid JSON"},
		{"control character", stFile("{\"a\x01\":{}}", nil), "invalid JSON"},
		{"leading zero", stFile(obj(ent("a", "U8", "[01]", "[0,1]")), zeros[:1]), "invalid JSON"},
		{"empty name", stFile(obj(ent("", "F32", "[]", "[0,4]")), zeros[:4]), "tensor with an empty name"},
		{"duplicate name", stFile(obj(ent("a", "F32", "[1]", "[0,4]"), ent("a", "F32", "[1]", "[0,4]")), zeros[:4]), `duplicate key "a"`},
		{"duplicate metadata", stFile(`{"__metadata__":{},"__metadata__":{}}`, nil), `duplicate key "__metadata__"`},
		{"metadata duplicate key", stFile(`{"__metadata__":{"k":"1","k":"2"}}`, nil), `__metadata__: duplicate key "k"`},
		{"metadata number", stFile(`{"__metadata__":{"k":1}}`, nil), `value of "k" is a number, not a string`},
		{"metadata nested", stFile(`{"__metadata__":{"k":{}}}`, nil), `value of "k" is an object, not a string`},
		{"metadata array", stFile(`{"__metadata__":["k"]}`, nil), "__metadata__ is an array, not an object of strings"},
		{"metadata string", stFile(`{"__metadata__":"k"}`, nil), "__metadata__ is a string, not an object of strings"},
		{"entry array", stFile(`{"a":[1]}`, nil), `tensor "a": entry is an array, not an object`},
		{"entry null", stFile(`{"a":null}`, nil), `tensor "a": entry is null, not an object`},
		{"missing dtype", stFile(`{"a":{"shape":[],"data_offsets":[0,4]}}`, zeros[:4]), `tensor "a": missing dtype`},
		{"missing shape", stFile(`{"a":{"dtype":"F32","data_offsets":[0,4]}}`, zeros[:4]), `tensor "a": missing shape`},
		{"missing offsets", stFile(`{"a":{"dtype":"F32","shape":[]}}`, zeros[:4]), `tensor "a": missing data_offsets`},
		{"duplicate field", stFile(`{"a":{"dtype":"F32","dtype":"F32","shape":[],"data_offsets":[0,4]}}`, zeros[:4]), `tensor "a": duplicate field "dtype"`},
		{"dtype number", stFile(`{"a":{"dtype":5,"shape":[],"data_offsets":[0,4]}}`, zeros[:4]), "dtype is a number, not a string"},
		{"unknown dtype", stFile(obj(ent("a", "Q4", "[1]", "[0,4]")), zeros[:4]), `tensor "a": unsupported dtype "Q4"`},
		{"unsupported dtype", stFile(obj(ent("a", "F8_E4M3", "[4]", "[0,4]")), zeros[:4]), `unsupported dtype "F8_E4M3"`},
		{"lowercase dtype", stFile(obj(ent("a", "f32", "[1]", "[0,4]")), zeros[:4]), `unsupported dtype "f32"`},
		{"shape not array", stFile(obj(ent("a", "F32", "4", "[0,4]")), zeros[:4]), "shape is a number, not an array"},
		{"negative dim", stFile(obj(ent("a", "F32", "[-1]", "[0,4]")), zeros[:4]), "shape holds negative number -1"},
		{"fractional dim", stFile(obj(ent("a", "F32", "[1.5]", "[0,4]")), zeros[:4]), "shape holds 1.5, not an integer"},
		{"exponent dim", stFile(obj(ent("a", "F32", "[1e0]", "[0,4]")), zeros[:4]), "not an integer"},
		{"string dim", stFile(obj(ent("a", "F32", `["1"]`, "[0,4]")), zeros[:4]), "shape holds a string, not a number"},
		{"dim beyond uint64", stFile(obj(ent("a", "F32", "[18446744073709551616]", "[0,4]")), zeros[:4]), "overflows uint64"},
		{"too many dims", stFile(obj(ent("a", "F32", dims33, "[0,4]")), zeros[:4]), "shape has more than 32 numbers"},
		// Reference test_validation_overflow.
		{"overflow u64", stFile(obj(ent("test", "I32", "[2,18446744073709551614]", "[0,16]")), zeros[:16]), "overflows the element count"},
		{"overflow int64", stFile(obj(ent("test", "I32", "[2,9223372036854775807]", "[0,16]")), zeros[:16]), "overflows the element count"},
		{"overflow 1<<40 squared", stFile(obj(ent("a", "F32", "[1099511627776,1099511627776]", "[0,4]")), zeros[:4]), "overflows the element count"},
		{"overflow after zero", stFile(obj(ent("a", "F32", "[0,1099511627776,1099511627776]", "[0,0]")), nil), "overflows the element count"},
		{"overflow bytes", stFile(obj(ent("a", "F64", "[1048576,1048576,1048576,4]", "[0,8]")), zeros[:8]), "overflows the byte count"},
		{"offsets not array", stFile(obj(ent("a", "F32", "[1]", `"0-4"`)), zeros[:4]), "data_offsets is a string, not an array"},
		{"one offset", stFile(obj(ent("a", "F32", "[1]", "[4]")), zeros[:4]), "data_offsets has 1 numbers, not [begin, end]"},
		{"three offsets", stFile(obj(ent("a", "F32", "[1]", "[0,4,4]")), zeros[:4]), "data_offsets has more than 2 numbers"},
		{"negative offset", stFile(obj(ent("a", "F32", "[1]", "[-4,0]")), zeros[:4]), "data_offsets holds negative number -4"},
		{"reversed offsets", stFile(obj(ent("a", "F32", "[1]", "[4,0]")), zeros[:4]), "data_offsets [4, 0] end before they begin"},
		// Reference test_invalid_info, with the bytes present.
		{"size mismatch", stFile(obj(ent("test", "I32", "[2,2]", "[0,4]")), zeros[:4]), "data_offsets [0, 4] span 4 bytes, but I32 shape [2 2] needs 16"},
		{"size mismatch zero", stFile(obj(ent("a", "F32", "[0]", "[0,4]")), zeros[:4]), "needs 0"},
		{"offsets beyond end", stFile(obj(ent("a", "F32", "[1]", "[0,4]")), zeros[:2]), "data_offsets [0, 4] end beyond the 2-byte data buffer"},
		{"offsets far beyond end", stFile(obj(ent("a", "F32", "[1152921504606846976]", "[0,4611686018427387904]")), zeros[:4]), "end beyond the 4-byte data buffer"},
		{"offsets max", stFile(obj(ent("a", "U8", "[1]", "[0,18446744073709551615]")), zeros[:1]), "end beyond"},
		// Reference test_metadata_incomplete_buffer: missing 2 bytes, and trailing bytes.
		{"missing bytes", stFile(obj(ent("test", "I32", "[2,2]", "[0,16]")), zeros[:14]), "end beyond the 14-byte data buffer"},
		{"trailing bytes", stFile(obj(ent("test", "I32", "[2,2]", "[0,16]")), append(make([]byte, 16), "extra_bogus_data_for_polyglot_file"...)), "tensors cover 16 bytes of the 50-byte data buffer, leaving 34 trailing bytes"},
		{"no tensors, data", stFile("{}", zeros[:1]), "leaving 1 trailing bytes"},
		{"gap at start", stFile(obj(ent("a", "F32", "[1]", "[4,8]")), zeros[:8]), `tensor "a": data_offsets [4, 8] leave a gap of 4 bytes after offset 0`},
		{"gap between", stFile(obj(ent("a", "F32", "[1]", "[0,4]"), ent("b", "F32", "[1]", "[8,12]")), zeros[:12]), `tensor "b": data_offsets [8, 12] leave a gap of 4 bytes after offset 4`},
		{"overlap", stFile(obj(ent("a", "F32", "[2]", "[0,8]"), ent("b", "F32", "[1]", "[4,8]")), zeros[:8]), `tensor "b": data_offsets [4, 8] overlap the previous tensor, which ends at 8`},
		{"same range", stFile(obj(ent("a", "F32", "[1]", "[0,4]"), ent("b", "F32", "[1]", "[0,4]")), zeros[:4]), `tensor "b": data_offsets [0, 4] overlap`},
		{"zero-size inside", stFile(obj(ent("a", "F32", "[2]", "[0,8]"), ent("b", "F32", "[0]", "[4,4]")), zeros[:8]), "overlap"},
	}
	// Reference test_json_attack: ten tensors all at [0, 16].
	var attack []string
	for i := range 10 {
		attack = append(attack, ent(fmt.Sprintf("weight_%d", i), "F32", "[2,2]", "[0,16]"))
	}
	tests = append(tests, struct {
		name string
		file []byte
		want string
	}{"json attack", stFile(obj(attack...), zeros[:16]), "overlap the previous tensor"})

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts, meta, err := ReadSafetensors(bytes.NewReader(tt.file), int64(len(tt.file)))
			if err == nil {
				t.Fatalf("no error; read %d tensors, metadata %v", len(ts), meta)
			}
			if ts != nil || meta != nil {
				t.Errorf("results returned with the error")
			}
			if msg := err.Error(); !strings.HasPrefix(msg, "nn: safetensors: ") || !strings.Contains(msg, tt.want) {
				t.Errorf("error %q, want one containing %q", msg, tt.want)
			}
		})
	}
}

// stAllocBound is the most ReadSafetensors may allocate reading file, as
// documented: 4·D + 12·H + 80 KiB, H the header's length and D the data
// buffer's (H is 0 when the length prefix is absent or claims too much,
// which is refused before anything is allocated).
func stAllocBound(file []byte) uint64 {
	var h uint64
	if len(file) >= 8 {
		if n := binary.LittleEndian.Uint64(file); n <= uint64(len(file)-8) {
			h = n
		}
	}
	d := uint64(len(file)) - min(uint64(len(file)), 8+h)
	return 4*d + 12*h + 80<<10
}

// stAllocated returns the bytes allocated while f runs.
func stAllocated(f func()) uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before := ms.TotalAlloc
	f()
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc - before
}

// stManyEntries returns a header of n tensor entries produced by entry(i).
func stManyEntries(n int, entry func(i int) string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(entry(i))
	}
	b.WriteByte('}')
	return b.String()
}

// stZeroDims returns the shape of d dimensions, all 0 but those set in
// bits, which are 1.
func stZeroDims(d int, bits int) string {
	s := make([]string, d)
	for j := range s {
		s[j] = strconv.Itoa(bits >> j & 1)
	}
	s[d-1] = "0"
	return "[" + strings.Join(s, ",") + "]"
}

// TestReadSafetensorsAllocBound checks the allocation bound that
// ReadSafetensors documents on headers built to cost the most memory per
// byte: many zero-size tensors of 32 dimensions (the 117 KB file
// allocated 57 times its size), tiny tensors, metadata of many short
// keys, deep nesting in an ignored field; and on a file that is mostly
// one-byte data, the case the 4 bytes per data byte are for.
func TestReadSafetensorsAllocBound(t *testing.T) {
	zeros32 := strings.Repeat("0,", 31) + "0"
	tests := []struct {
		name    string
		file    []byte
		wantErr string
	}{
		{"1000 zero-size 32-dim", stFile(stManyEntries(1000, func(i int) string {
			return fmt.Sprintf(`"%d":{"dtype":"F32","shape":[%s],"data_offsets":[0,0]}`, i, zeros32)
		}), nil), ""},
		{"10000 distinct zero-size 32-dim", stFile(stManyEntries(10000, func(i int) string {
			return fmt.Sprintf(`"%x":{"dtype":"U8","shape":%s,"data_offsets":[0,0]}`, i, stZeroDims(32, i))
		}), nil), ""},
		{"zero-size, then an error", stFile(stManyEntries(2000, func(i int) string {
			return fmt.Sprintf(`"%d":{"dtype":"F32","shape":[%s],"data_offsets":[0,0]}`, i, zeros32)
		})[:1999*96]+`x`, nil), "invalid JSON"},
		{"20000 one-byte scalars", stFile(stManyEntries(20000, func(i int) string {
			return fmt.Sprintf(`"%x":{"dtype":"U8","shape":[],"data_offsets":[%d,%d]}`, i, i, i+1)
		}), make([]byte, 20000)), ""},
		{"metadata of 15000 keys", stFile(`{"__metadata__":`+stManyEntries(15000, func(i int) string {
			return fmt.Sprintf(`"%x":""`, i)
		})+"}", nil), ""},
		{"deep ignored field", stFile(`{"a":{"dtype":"U8","shape":[0],"data_offsets":[0,0],"x":`+
			strings.Repeat("[", 9999)+strings.Repeat("]", 9999)+"}}", nil), ""},
		{"1 MB of U8", stFile(`{"a":{"dtype":"U8","shape":[1024,1024],"data_offsets":[0,1048576]}}`, make([]byte, 1<<20)), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			alloc := stAllocated(func() { _, _, err = ReadSafetensors(bytes.NewReader(tt.file), int64(len(tt.file))) })
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			}
			if bound := stAllocBound(tt.file); alloc > bound {
				t.Errorf("reading %d bytes allocated %d bytes (%.1f times the size), more than %d", len(tt.file), alloc, float64(alloc)/float64(len(tt.file)), bound)
			}
		})
	}
}

// stErrReader is an io.ReaderAt over b that returns err when asked for
// bytes beyond b.
type stErrReader struct {
	b   []byte
	err error
}

func (r stErrReader) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(r.b)) {
		return 0, r.err
	}
	n := copy(p, r.b[off:])
	if n < len(p) {
		return n, r.err
	}
	return n, nil
}

func TestReadSafetensorsTruncated(t *testing.T) {
	for _, file := range [][]byte{stValid(), stWriteBytes(t, []Named{{Name: "x", T: stSpecial()}, {Name: "s", T: tensor.Scalar(1)}}, map[string]string{"a": "b"})} {
		if _, _, err := ReadSafetensors(bytes.NewReader(file), int64(len(file))); err != nil {
			t.Fatalf("whole file: %v", err)
		}
		for i := range len(file) {
			// The file cut at i bytes.
			if _, _, err := ReadSafetensors(bytes.NewReader(file[:i]), int64(i)); err == nil || !strings.HasPrefix(err.Error(), "nn: safetensors: ") {
				t.Errorf("file cut to %d of %d bytes: error %v", i, len(file), err)
			}
			// A size that promises more than the reader holds.
			if _, _, err := ReadSafetensors(bytes.NewReader(file[:i]), int64(len(file))); !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("reader holding %d of %d bytes: error %v, want io.ErrUnexpectedEOF", i, len(file), err)
			}
		}
	}
	// Errors from the reader are wrapped.
	boom := errors.New("boom")
	file := stValid()
	if _, _, err := ReadSafetensors(stErrReader{file[:len(file)-1], boom}, int64(len(file))); !errors.Is(err, boom) {
		t.Errorf("error %v, want one wrapping %v", err, boom)
	}
	if _, _, err := ReadSafetensors(bytes.NewReader(file), -1); err == nil || !strings.Contains(err.Error(), "shorter than") {
		t.Errorf("negative size: error %v", err)
	}
}

type stFailWriter struct{ n int }

func (w *stFailWriter) Write(p []byte) (int, error) {
	if w.n < len(p) {
		return 0, errors.New("disk full")
	}
	w.n -= len(p)
	return len(p), nil
}

func TestWriteSafetensorsErrors(t *testing.T) {
	one := tensor.New(1)
	tests := []struct {
		name string
		ts   []Named
		meta map[string]string
		want string
	}{
		{"empty name", []Named{{Name: "", T: one}}, nil, "tensor 0 has an empty name"},
		{"duplicate", []Named{{Name: "a", T: one}, {Name: "b", T: one}, {Name: "a", T: tensor.Scalar(1)}}, nil, `duplicate tensor name "a"`},
		{"reserved", []Named{{Name: "__metadata__", T: one}}, nil, `name "__metadata__" is reserved`},
		{"nil", []Named{{Name: "a"}}, nil, `tensor "a" is nil`},
		{"bad UTF-8 name", []Named{{Name: "a\xff", T: one}}, nil, "not valid UTF-8"},
		{"bad UTF-8 metadata", nil, map[string]string{"k": "\xc0"}, `metadata "k"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			err := WriteSafetensors(&buf, tt.ts, tt.meta)
			if err == nil || !strings.HasPrefix(err.Error(), "nn: safetensors: ") || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
			if buf.Len() != 0 {
				t.Errorf("wrote %d bytes before failing", buf.Len())
			}
		})
	}
	ts := []Named{{Name: "a", T: tensor.New(100000)}}
	for _, n := range []int{0, 8, 100, 200000} {
		if err := WriteSafetensors(&stFailWriter{n: n}, ts, nil); err == nil || !strings.Contains(err.Error(), "disk full") {
			t.Errorf("writer failing after %d bytes: error %v", n, err)
		}
	}
	if testing.Short() {
		return
	}
	// Reference test_invalid_header_size_serialization.
	big := map[string]string{"very_large_metadata": strings.Repeat("a", stMaxHeader)}
	if err := WriteSafetensors(io.Discard, nil, big); err == nil || !strings.Contains(err.Error(), "more than the limit") {
		t.Errorf("huge header: error %v", err)
	}
}

func FuzzReadSafetensors(f *testing.F) {
	f.Add(stValid())
	f.Add(stFile("{}", nil))
	f.Add([]byte("<\x00\x00\x00\x00\x00\x00\x00{\"test\":{\"dtype\":\"I32\",\"shape\":[2,2],\"data_offsets\":[0,16]}}\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00"))
	f.Add(stFile(`{"__metadata__":null,"e":{"dtype":"BF16","shape":[0,3],"data_offsets":[0,0]},"h":{"dtype":"F16","shape":[2],"data_offsets":[0,4]},"d":{"dtype":"F64","shape":[],"data_offsets":[4,12]}}`,
		stBytes([]uint16{0x7e01, 0x8000}, 1e300)))
	f.Add(stFile(`{"i":{"dtype":"I64","shape":[1],"data_offsets":[0,8]},"b":{"dtype":"BOOL","shape":[2],"data_offsets":[8,10]},"u":{"dtype":"U16","shape":[1],"data_offsets":[10,12]}}`,
		stBytes(int64(-5), []uint8{0, 7}, uint16(9))))
	var buf bytes.Buffer
	if err := WriteSafetensors(&buf, []Named{{Name: "x", T: stSpecial()}, {Name: "v", T: tensor.Arange(0, 6, 1).Reshape(2, 3).T()}}, map[string]string{"k": "v\n"}); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	// Malformed seeds.
	f.Add([]byte("\x00\x00\x00\x00\x00\x00\x00@{}"))
	f.Add(stFile(`{"a":{"dtype":"F32","shape":[1099511627776,1099511627776],"data_offsets":[0,4]}}`, make([]byte, 4)))
	f.Add(stFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, make([]byte, 4)))
	f.Add(stFile(`{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}}`, make([]byte, 5)))
	// Headers that cost the most memory per byte: zero-size tensors of 32
	// dimensions, one-byte scalars, metadata of short keys, nesting.
	zeros32 := strings.Repeat("0,", 31) + "0"
	f.Add(stFile(stManyEntries(100, func(i int) string {
		return fmt.Sprintf(`"%d":{"dtype":"F32","shape":[%s],"data_offsets":[0,0]}`, i, zeros32)
	}), nil))
	f.Add(stFile(stManyEntries(100, func(i int) string {
		return fmt.Sprintf(`"%x":{"dtype":"U8","shape":%s,"data_offsets":[0,0]}`, i, stZeroDims(32, i))
	}), nil))
	f.Add(stFile(stManyEntries(100, func(i int) string {
		return fmt.Sprintf(`"%x":{"dtype":"U8","shape":[],"data_offsets":[%d,%d]}`, i, i, i+1)
	}), make([]byte, 100)))
	f.Add(stFile(`{"__metadata__":`+stManyEntries(100, func(i int) string { return fmt.Sprintf(`"%x":""`, i) })+"}", nil))
	f.Add(stFile(`{"a":{"dtype":"U8","shape":[0],"data_offsets":[0,0],"x":[[[{"y":[[{}]]}]]]}}`, nil))
	f.Add(stFile(`{"\u0061":{"dtype":"F\u0033\u0032","shape":[0],"data_offsets":[0,0],"\ud800":1},"\ud83d\ude00":{"dtype":"U8","shape":[],"data_offsets":[0,1]}}`, []byte{7}))

	f.Fuzz(func(t *testing.T, data []byte) {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		before := ms.TotalAlloc
		ts, meta, err := ReadSafetensors(bytes.NewReader(data), int64(len(data)))
		runtime.ReadMemStats(&ms)
		if alloc, limit := ms.TotalAlloc-before, stAllocBound(data); alloc > limit {
			t.Fatalf("reading %d bytes allocated %d bytes, more than %d", len(data), alloc, limit)
		}
		if err != nil {
			if !strings.HasPrefix(err.Error(), "nn: safetensors: ") {
				t.Fatalf("error without prefix: %v", err)
			}
			return
		}
		for _, n := range ts {
			if n.T.Len() > 0 && !n.T.IsContiguous() || stDtypeSize(n.DType) == 0 {
				t.Fatalf("%q: contiguous %v, dtype %q", n.Name, n.T.IsContiguous(), n.DType)
			}
		}
		// Writing what was read and reading it again gives the same
		// tensors (as F32) and metadata, and writing is then idempotent.
		out := stWriteBytes(t, ts, meta)
		ts2, meta2 := stReadBytes(t, out)
		if !maps.Equal(meta, meta2) {
			t.Fatalf("metadata %q became %q", meta, meta2)
		}
		if len(ts2) != len(ts) {
			t.Fatalf("%d tensors became %d", len(ts), len(ts2))
		}
		byName := make(map[string]*tensor.Tensor, len(ts))
		for _, n := range ts {
			byName[n.Name] = n.T
		}
		for _, n := range ts2 {
			orig, ok := byName[n.Name]
			if !ok || n.DType != "F32" {
				t.Fatalf("tensor %q (%s) appeared", n.Name, n.DType)
			}
			if err := stSameBits(n.T, orig); err != nil {
				t.Fatalf("%q: %v", n.Name, err)
			}
		}
		if out2 := stWriteBytes(t, ts2, meta2); !bytes.Equal(out, out2) {
			t.Fatalf("rewriting is not idempotent")
		}
	})
}
