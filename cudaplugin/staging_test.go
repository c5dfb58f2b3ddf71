//go:build cuda || cudaemu

package cudaplugin

import (
	"slices"
	"testing"

	"github.com/lanesgo/lanes/tensor"
)

// stagingSetup returns a device buffer of n elements (zeros) and a
// staging buffer of n elements for it.
func stagingSetup(t *testing.T, g *GPU, n int) (*tensor.Tensor, *deviceMemory, tensor.Staging) {
	t.Helper()
	d, err := g.New(n)
	if err != nil {
		t.Fatal(err)
	}
	mem, _, _ := tensor.DeviceView(d)
	dm := mem.(*deviceMemory)
	s, err := dm.NewStaging(n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Release)
	return d, dm, s
}

func fillSeq(b []float32, base float32) []float32 {
	for i := range b {
		b[i] = base + float32(i)
	}
	return b
}

// TestStagingUpload checks the asynchronous uploads: the elements
// arrive, at an offset and of a prefix; the copy starts after the work
// queued before it (a kernel reading the buffer sees the old elements);
// a buffer is reused; Release twice is harmless.
func TestStagingUpload(t *testing.T) {
	g := requireGPU(t)
	const n = 1000
	d, dm, s := stagingSetup(t, g, n)
	for round := range 3 {
		want := fillSeq(s.Host(), float32(1000*round))
		old := tensor.Scale(d, 2) // queued before the upload: reads the old elements
		p, err := s.Upload(dm, 0, n)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Use(); err != nil {
			t.Fatal(err)
		}
		if got := d.Data(); !slices.Equal(got, want) {
			t.Fatalf("round %d: device %v..., want %v...", round, got[:4], want[:4])
		}
		wantOld := make([]float32, n)
		if round > 0 {
			for i := range wantOld {
				wantOld[i] = 2 * (float32(1000*(round-1)) + float32(i))
			}
		}
		if got := old.Data(); !slices.Equal(got, wantOld) {
			t.Fatalf("round %d: a kernel queued before the upload read %v..., want %v...", round, got[:4], wantOld[:4])
		}
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	// A prefix at an offset.
	fillSeq(s.Host(), -50)
	p, err := s.Upload(dm, 10, 5)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	got := d.Data()
	if !slices.Equal(got[10:15], []float32{-50, -49, -48, -47, -46}) || got[9] != 2000+9 || got[15] != 2000+15 {
		t.Errorf("5 elements at 10: %v", got[8:17])
	}
	other, err := tensor.NewOn(tensortestDev, 4)
	if err == nil {
		om, _, _ := tensor.DeviceView(other)
		if _, err := s.Upload(om, 0, 4); err == nil {
			t.Error("an upload to another device's memory: no error")
		}
	}
	s.Release()
	s.Release()
}

// tensortestDev is a device number no plugin serves here.
const tensortestDev tensor.Device = 99

// TestStagingOrdering shows that the emulated copy stream is
// asynchronous (it runs a copy LANES_CUDAEMU_COPY_DELAY late on a thread
// of its own), so that a missing Use or Wait gives wrong elements: the
// device stream reading the buffer before Use sees the old elements, and
// a staging buffer written before Wait sends the new ones. With Use and
// Wait in their place the elements are right. On a GPU the missing waits
// are races, not checked.
func TestStagingOrdering(t *testing.T) {
	g := requireGPU(t)
	t.Setenv("LANES_CUDAEMU_COPY_DELAY", "20000") // 20 ms
	const n = 256
	d, dm, s := stagingSetup(t, g, n)
	want := slices.Clone(fillSeq(s.Host(), 1))

	p, err := s.Upload(dm, 0, n)
	if err != nil {
		t.Fatal(err)
	}
	early := d.Data() // no Use: the device stream does not wait for the copy
	if err := p.Use(); err != nil {
		t.Fatal(err)
	}
	if got := d.Data(); !slices.Equal(got, want) {
		t.Fatalf("after Use: %v..., want %v...", got[:4], want[:4])
	}
	if emulated && slices.Equal(early, want) {
		t.Errorf("the emulated copy had finished before Use: a missing Use would go unseen")
	}

	// The staging buffer written again before Wait.
	fillSeq(s.Host(), 500)
	p, err = s.Upload(dm, 0, n)
	if err != nil {
		t.Fatal(err)
	}
	next := slices.Clone(s.Host())
	fillSeq(s.Host(), 9000) // too early
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if got := d.Data(); emulated && slices.Equal(got, next) {
		t.Errorf("the staging buffer written before Wait: the device still got the elements of the upload's time; a missing Wait would go unseen")
	}
	// In order: Wait, then write.
	fillSeq(s.Host(), 500)
	if p, err = s.Upload(dm, 0, n); err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	fillSeq(s.Host(), 9000)
	if got := d.Data(); !slices.Equal(got, next) {
		t.Errorf("written after Wait: device %v..., want %v...", got[:4], next[:4])
	}
}
