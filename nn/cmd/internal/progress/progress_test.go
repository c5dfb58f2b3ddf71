package progress

import (
	"os"
	"path/filepath"
	"testing"
)

func TestBar(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := New(f, 4)
	for done := range 5 {
		if b.Due(done) {
			t.Errorf("a file that is not a terminal: Due(%d) is true", done)
		}
	}
	b.Done() // erases nothing off a terminal
	b.Update(1, "loss=1.5")
	b.SetTotal(2)
	b.Update(3, "x") // past the total: a full bar
	got, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	want := "\r[=======                       ]  25% 1/4 loss=1.5" + "\r[==============================] 150% 3/2 x"
	if string(got) != want {
		t.Errorf("drew %q, want %q", got, want)
	}
}
