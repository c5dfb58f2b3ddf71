package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/lanesgo/lanes/tensor"
)

// The corpus, its split and the batches are defined here and, line for
// line, in bench/torchref/chargpt.py, so that both train on the same
// bytes in the same order (TestPythonCrossCheck runs the script and
// compares):
//
//   - files: every regular file whose name ends in ".go" under the root
//     (symbolic links are not followed and not read), ordered by their
//     slash-separated paths relative to the root, compared as bytes;
//   - split: the file at index i of that order goes to validation when
//     i%10 == 9, to training otherwise (every tenth file: 90/10 by file);
//   - text: each part is its files' bytes concatenated in that order, with
//     nothing between them;
//   - vocabulary: the 256 byte values, token = byte (no file is decoded,
//     so any text round-trips, and the vocabulary does not depend on the
//     corpus);
//   - batches: see sampler.

// vocab is the size of the byte vocabulary.
const vocab = 256

// corpus is the training and validation text of a tree of Go files.
type corpus struct {
	files      []string // every file, relative slash paths, in order
	train, val []byte
	valFiles   int
}

// goSource returns $(go env GOROOT)/src: the go command's answer when there
// is a go command, runtime.GOROOT's otherwise.
func goSource() (string, error) {
	root := ""
	if out, err := exec.Command("go", "env", "GOROOT").Output(); err == nil {
		root = strings.TrimSpace(string(out))
	}
	if root == "" {
		root = runtime.GOROOT() // deprecated, but the fallback when no go command runs
	}
	if root == "" {
		return "", fmt.Errorf("no GOROOT: neither `go env GOROOT` nor the binary knows it; pass -data DIR")
	}
	return filepath.Join(root, "src"), nil
}

// loadCorpus reads the .go files under root and splits them (see above).
// A root with fewer than 10 files has an empty validation part.
func loadCorpus(root string) (*corpus, error) {
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() && strings.HasSuffix(d.Name(), ".go") {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the corpus: %w", err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no .go file under %s", root)
	}
	slices.Sort(files) // bytewise, as Python's sorted over bytes
	c := &corpus{files: files}
	for i, f := range files {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f)))
		if err != nil {
			return nil, err
		}
		if isVal(i) {
			c.val = append(c.val, b...)
			c.valFiles++
		} else {
			c.train = append(c.train, b...)
		}
	}
	return c, nil
}

// isVal reports whether the file at index i of the sorted list is a
// validation file.
func isVal(i int) bool { return i%10 == 9 }

// encode returns the tokens of s: its bytes.
func encode(s string) []int { return encodeBytes([]byte(s)) }

func encodeBytes(b []byte) []int {
	ids := make([]int, len(b))
	for i, c := range b {
		ids[i] = int(c)
	}
	return ids
}

// decode returns the text of tokens (each in [0, 256)).
func decode(ids []int) string {
	var b bytes.Buffer
	for _, id := range ids {
		if id < 0 || id >= vocab {
			panic(fmt.Sprintf("chargpt: decode: token %d outside [0, %d)", id, vocab))
		}
		b.WriteByte(byte(id))
	}
	return b.String()
}

// The sampler's streams: training batches draw from the seed's stream,
// the validation batches from the seed xor valStream.
const (
	golden    = 0x9e3779b97f4a7c15
	valStream = 0x5851f42d4c957f2d
)

// mix64 is SplitMix64's output function (Steele, Lea and Flood, 2014).
func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// offset returns the start of the window drawn k-th (from 0) from the
// stream of seed, in a text of n bytes for windows of w bytes: the k+1-th
// output of SplitMix64 seeded with seed, modulo n-w+1. The modulo's bias
// (at most (n-w+1)/2⁶⁴) is left in; it is the rule both sides apply.
// Being a function of k, a batch is found again from its step alone (a
// resumed run needs no sampler state).
func offset(seed uint64, k, n, w int) int {
	return int(mix64(seed+uint64(k+1)*golden) % uint64(n-w+1))
}

// batch writes the batch of step into x [b, t] and y (b·t elements, flat
// as CrossEntropy takes its labels), float32 token ids: row j is the window of t+1 bytes of text starting at offset(seed,
// step·b+j, len(text), t+1), x its first t bytes and y its last t (the
// next byte of each). It panics when the text is shorter than t+1 bytes.
func batch(x, y *tensor.Tensor, text []byte, seed uint64, step int) {
	b, t := x.Dim(0), x.Dim(1)
	if len(text) < t+1 {
		panic(fmt.Sprintf("chargpt: batch: a text of %d bytes is shorter than a window of %d", len(text), t+1))
	}
	xd, yd := x.Data(), y.Data()
	for j := range b {
		o := offset(seed, step*b+j, len(text), t+1)
		for i := range t {
			xd[j*t+i] = float32(text[o+i])
			yd[j*t+i] = float32(text[o+i+1])
		}
	}
}
