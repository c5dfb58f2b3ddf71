// Package freelist keeps reusable scratch objects for the kernels'
// goroutines.
package freelist

import "sync"

// Stack is a LIFO free list of *T, safe for concurrent use. Unlike a
// sync.Pool, the garbage collector never empties it, and it hands out the
// most recently returned object first, so scratch buffers grown for the
// largest need stay grown: a training loop using a sync.Pool kept
// reallocating them (tens of KB per step of nn's CNN). It holds at most as
// many objects as goroutines ever held one at the same time.
type Stack[T any] struct {
	mu   sync.Mutex
	free []*T
}

// Get returns an object from the stack, or a new zero T when it is empty.
func (s *Stack[T]) Get() *T {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := len(s.free); n > 0 {
		x := s.free[n-1]
		s.free[n-1] = nil
		s.free = s.free[:n-1]
		return x
	}
	return new(T)
}

// Put returns x to the stack.
func (s *Stack[T]) Put(x *T) {
	s.mu.Lock()
	s.free = append(s.free, x)
	s.mu.Unlock()
}
