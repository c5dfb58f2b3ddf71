package tensor

import (
	"fmt"
	"strconv"
	"strings"
)

// printEdge is how many leading and trailing entries of each dimension
// String shows once a tensor has more than printThreshold elements.
const (
	printThreshold = 1000
	printEdge      = 3
)

// String formats t as NumPy prints arrays: nested brackets, one row per
// line, values in the shortest form that reads back exactly, elided with
// "..." when t has more than 1000 elements. A device tensor's elements
// are not read: it formats as "<tensor of shape [2 3] on device(1)>".
func (t *Tensor) String() string {
	if t == nil {
		return "<nil>"
	}
	if t.store != nil {
		return "<tensor of shape " + fmt.Sprint(t.shape) + " on " + t.Device().String() + ">"
	}
	var b strings.Builder
	if t.Dims() == 0 {
		b.WriteString(formatValue(t.data[t.offset]))
		return b.String()
	}
	elide := t.Len() > printThreshold
	idx := make([]int, t.Dims())
	var rec func(dim, indent int)
	rec = func(dim, indent int) {
		b.WriteByte('[')
		n := t.shape[dim]
		for i := 0; i < n; i++ {
			if elide && n > 2*printEdge && i == printEdge {
				if dim == t.Dims()-1 {
					b.WriteString(" ...")
				} else {
					b.WriteString(strings.Repeat("\n", t.Dims()-dim-1) + strings.Repeat(" ", indent+1) + "...")
				}
				i = n - printEdge - 1 // the separator before the next entry follows
				continue
			}
			if i > 0 {
				if dim == t.Dims()-1 {
					b.WriteByte(' ')
				} else {
					b.WriteString(strings.Repeat("\n", t.Dims()-dim-1) + strings.Repeat(" ", indent+1))
				}
			}
			idx[dim] = i
			if dim == t.Dims()-1 {
				b.WriteString(formatValue(t.At(idx...)))
			} else {
				rec(dim+1, indent+1)
			}
		}
		b.WriteByte(']')
	}
	rec(0, 0)
	return b.String()
}

func formatValue(v float32) string {
	switch {
	case v != v:
		return "nan"
	case v > 3.4e38:
		return "inf"
	case v < -3.4e38:
		return "-inf"
	}
	return strconv.FormatFloat(float64(v), 'g', -1, 32)
}
