package nn

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/lanesgo/lanes/tensor"
)

// panicMessage returns what f panics with, or "" when it returns.
func panicMessage(f func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprint(r)
		}
	}()
	f()
	return ""
}

// failAfter is a writer that takes n bytes and then fails.
type failAfter struct {
	w io.Writer
	n int
}

var errDiskFull = errors.New("disk full")

func (f *failAfter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		k, _ := f.w.Write(p[:f.n])
		f.n = 0
		return k, errDiskFull
	}
	f.n -= len(p)
	return f.w.Write(p)
}

// dirNames lists the names in dir.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// TestSaveAtomic checks that a Save that fails part way, whether at the
// start, in the header or half way through the data, leaves the previous
// file as it was and no temporary file; that a Save that succeeds replaces
// the file, keeping its permission bits; and that through a symbolic link
// it replaces the file linked to.
func TestSaveAtomic(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	a, b := cnnSmall(r), cnnSmall(r)
	dir := t.TempDir()
	path := filepath.Join(dir, "m.safetensors")
	if err := Save(path, a, nil); err != nil {
		t.Fatal(err)
	}
	old, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" {
		if err := os.Chmod(path, 0o640); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []int{0, 8, 100, len(old) / 2, len(old) - 1} {
		saveHook = func(w io.Writer) io.Writer { return &failAfter{w, n} }
		err := Save(path, b, map[string]string{"k": "v"})
		saveHook = nil
		if !errors.Is(err, errDiskFull) || !strings.Contains(err.Error(), path) {
			t.Fatalf("writes failing after %d bytes: error %v, want %v naming the path", n, err, errDiskFull)
		}
		if now, err := os.ReadFile(path); err != nil || !bytes.Equal(now, old) {
			t.Fatalf("writes failing after %d bytes: the previous file changed (%d bytes, was %d; %v)", n, len(now), len(old), err)
		}
		if names := dirNames(t, dir); len(names) != 1 {
			t.Fatalf("writes failing after %d bytes left %v", n, names)
		}
	}
	if err := Save(path, b, nil); err != nil {
		t.Fatal(err)
	}
	c := cnnSmall(r)
	if _, err := Load(path, c); err != nil {
		t.Fatal(err)
	}
	if err := stSameBits(StateDict(c)[0].T, StateDict(b)[0].T); err != nil {
		t.Errorf("after a successful Save: %v", err)
	}
	if names := dirNames(t, dir); len(names) != 1 {
		t.Errorf("a successful Save left %v", names)
	}
	if runtime.GOOS != "windows" {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o640 {
			t.Errorf("mode after Save: %v (%v), want 0640", fi.Mode(), err)
		}
		link := filepath.Join(t.TempDir(), "link.safetensors")
		if err := os.Symlink(path, link); err != nil {
			t.Fatal(err)
		}
		if err := Save(link, a, nil); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("the link was replaced: %v (%v)", fi.Mode(), err)
		}
		if now, err := os.ReadFile(path); err != nil || !bytes.Equal(now, old) {
			t.Errorf("Save through a link did not write the file linked to (%v)", err)
		}
	}
}

// TestStateNil checks the named panics and errors that nil modules, Vars,
// tensors and parameters get instead of nil-pointer dereferences.
func TestStateNil(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	path := filepath.Join(t.TempDir(), "m.safetensors")
	m := cnnSmall(r)
	if err := Save(path, m, nil); err != nil {
		t.Fatal(err)
	}
	broken := NewSequential(&Linear{W: NewParam(tensor.New(2, 2))}, &Linear{})
	p := NewParam(tensor.New(2))
	panics := []struct {
		name, want string
		f          func()
	}{
		{"Save nil", "nn: Save: nil module", func() { Save(path, nil, nil) }},
		{"Save nil Var", `nn: Save: the module's "1.weight" is a nil Var`, func() { Save(path, broken, nil) }},
		{"Load nil", "nn: Load: nil module", func() { Load(path, nil) }},
		{"LoadState nil", "nn: LoadState: nil module", func() { LoadState(nil, StateDict(m)) }},
		{"LoadState nil Var", `nn: LoadState: the module's "1.weight" is a nil Var`, func() { LoadState(broken, nil) }},
		{"NewSGD", "nn: NewSGD: parameter 1 of 2 is nil", func() { NewSGD([]*Var{p, nil}, 1) }},
		{"NewAdam", "nn: NewAdam: parameter 0 of 1 is nil", func() { NewAdam([]*Var{nil}, 1) }},
		{"NewAdamW", "nn: NewAdamW: parameter 0 of 1 is nil", func() { NewAdamW([]*Var{{}}, 1) }},
		{"NewRMSProp", "nn: NewRMSProp: parameter 0 of 1 is nil", func() { NewRMSProp([]*Var{nil}, 1) }},
	}
	for _, c := range panics {
		t.Run(c.name, func(t *testing.T) {
			if msg := panicMessage(c.f); !strings.HasPrefix(msg, c.want) {
				t.Errorf("panic %q, want %q", msg, c.want)
			}
		})
	}
	ts := StateDict(m)
	ts[2].T = nil
	before := fmt.Sprint(m.Layers[0].(*Conv2D).W.value.Data()[:3])
	if err := LoadState(m, ts); err == nil || !strings.Contains(err.Error(), `tensor "3.weight" is nil`) {
		t.Errorf("LoadState with a nil tensor: error %v", err)
	}
	if after := fmt.Sprint(m.Layers[0].(*Conv2D).W.value.Data()[:3]); after != before {
		t.Error("a failed LoadState changed the model")
	}
	for _, save := range []func() error{
		func() error { return WriteSafetensors(io.Discard, ts, nil) },
		func() error { return SaveSafetensors(path, ts, nil) },
	} {
		if err := save(); err == nil || !strings.Contains(err.Error(), `tensor "3.weight" is nil`) {
			t.Errorf("writing a nil tensor: error %v", err)
		}
	}
}
