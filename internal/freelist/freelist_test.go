package freelist

import (
	"sync"
	"testing"
)

func TestStack(t *testing.T) {
	var s Stack[[]int]
	a := s.Get()
	if a == nil || *a != nil {
		t.Fatal("Get on an empty stack did not return a new zero value")
	}
	*a = make([]int, 10)
	b := s.Get()
	s.Put(b)
	s.Put(a)
	if got := s.Get(); got != a {
		t.Fatal("Get did not return the last object put")
	}
	if got := s.Get(); got != b {
		t.Fatal("Get did not return the earlier object next")
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				x := s.Get()
				*x = append(*x, 1)
				s.Put(x)
			}
		})
	}
	wg.Wait()
	if n := len(s.free); n > 10 {
		t.Fatalf("%d objects for 8 goroutines and 2 put back", n)
	}
	if n := testing.AllocsPerRun(100, func() { s.Put(s.Get()) }); n != 0 {
		t.Fatalf("Get/Put allocates: %v", n)
	}
}
