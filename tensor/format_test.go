package tensor

import (
	"math"
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	for _, c := range []struct {
		t    *Tensor
		want string
	}{
		{Scalar(2.5), "2.5"},
		{Arange(0, 4, 1), "[0 1 2 3]"},
		{Arange(0, 6, 1).Reshape(2, 3), "[[0 1 2]\n [3 4 5]]"},
		{Arange(0, 8, 1).Reshape(2, 2, 2), "[[[0 1]\n  [2 3]]\n\n [[4 5]\n  [6 7]]]"},
		{FromSlice([]float32{float32(math.NaN()), float32(math.Inf(-1)), 0.1}, 3), "[nan -inf 0.1]"},
		{Arange(0, 6, 1).Reshape(2, 3).T(), "[[0 3]\n [1 4]\n [2 5]]"},
		{New(0, 3), "[]"},
	} {
		if got := c.t.String(); got != c.want {
			t.Errorf("String of %v:\n%s\nwant\n%s", c.t.Shape(), got, c.want)
		}
	}
	big := Arange(0, 2000, 1)
	if got := big.String(); got != "[0 1 2 ... 1997 1998 1999]" {
		t.Errorf("elided 1-D: %q", got)
	}
	m := Arange(0, 40000, 1).Reshape(200, 200).String()
	if lines := strings.Count(m, "\n"); lines != 6 || !strings.Contains(m, " ...") || !strings.HasPrefix(m, "[[0 1 2 ... 197 198 199]") {
		t.Errorf("elided 2-D (%d lines):\n%s", lines, m)
	}
}

func TestEmptyIsContiguous(t *testing.T) {
	for _, x := range []*Tensor{New(3, 0, 2), New(0), New(2, 3).Slice(1, 1, 1, 1)} {
		if !x.IsContiguous() {
			t.Errorf("empty tensor of shape %v strides %v: IsContiguous false", x.Shape(), x.Strides())
		}
	}
}
