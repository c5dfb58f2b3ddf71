package tensor

import (
	"fmt"
	"slices"

	"github.com/lanesgo/lanes/simd"
)

// PadMode is how Pad fills the positions outside its input, as the mode of
// PyTorch's torch.nn.functional.pad (and, for ConvParams.PaddingMode, the
// padding_mode of nn.Conv2d, whose "zeros" is PadConstant).
type PadMode int

const (
	// PadConstant fills with the value given (0 for a convolution).
	PadConstant PadMode = iota
	// PadReflect mirrors the input about its edge elements, which are not
	// repeated (a b c d → c b | a b c d | c b): a pad must be smaller than
	// the input's size along its axis.
	PadReflect
	// PadReplicate repeats the edge elements (a a | a b c d | d d): the
	// input must not be empty along a padded axis.
	PadReplicate
	// PadCircular wraps around (c d | a b c d | a b): a pad must be at
	// most the input's size along its axis (after the crop of a negative
	// pad on the other side, around which it then wraps, as PyTorch's).
	PadCircular
)

func (m PadMode) String() string {
	switch m {
	case PadConstant:
		return "constant"
	case PadReflect:
		return "reflect"
	case PadReplicate:
		return "replicate"
	case PadCircular:
		return "circular"
	}
	return fmt.Sprintf("PadMode(%d)", int(m))
}

// padGeom is a padding after its checks: the output shape and, for each
// axis, the input index each output index reads (-1: the constant).
type padGeom struct {
	in, out []int
	src     [][]int
}

func planPad(op string, xs, pads []int, mode PadMode) padGeom {
	if len(pads)%2 != 0 || len(pads) > 2*len(xs) {
		panic(fmt.Sprintf("tensor: %s: input of shape %v: pads %v must be pairs (left, right), at most one per axis, from the last axis backwards", op, xs, pads))
	}
	if mode < PadConstant || mode > PadCircular {
		panic(fmt.Sprintf("tensor: %s: unknown mode %v", op, mode))
	}
	g := padGeom{in: xs, out: slices.Clone(xs), src: make([][]int, len(xs))}
	for k := 0; k < len(pads)/2; k++ {
		a := len(xs) - 1 - k
		n, lo, hi := xs[a], pads[2*k], pads[2*k+1]
		size := n + lo + hi
		if lo < -n || hi < -n || size < 0 || size > MaxElems {
			panic(fmt.Sprintf("tensor: %s: input of shape %v: pads %v give axis %d size %d", op, xs, pads, a, size))
		}
		bad := false
		switch mode {
		case PadReflect:
			bad = max(lo, hi) > 0 && max(lo, hi) >= n
		case PadReplicate:
			bad = max(lo, hi) > 0 && n == 0
		case PadCircular:
			bad = max(lo, hi) > 0 && max(lo, hi) > n-max(-lo, 0)-max(-hi, 0)
		}
		if bad {
			panic(fmt.Sprintf("tensor: %s: input of shape %v: %v pads (%d, %d) too large for axis %d of size %d", op, xs, mode, lo, hi, a, n))
		}
		g.out[a] = size
		m := make([]int, size)
		for i := range m {
			c := i - lo // the input coordinate of output index i
			switch {
			case c >= 0 && c < n:
			case mode == PadConstant:
				c = -1
			case mode == PadReflect && c < 0:
				c = -c
			case mode == PadReflect:
				c = 2*(n-1) - c
			case mode == PadReplicate:
				c = min(max(c, 0), n-1)
			case mode == PadCircular:
				// PyTorch wraps around what the negative pads leave.
				c0, m := max(-lo, 0), n-max(-lo, 0)-max(-hi, 0)
				c = c0 + ((c-c0)%m+m)%m
			}
			m[i] = c
		}
		g.src[a] = m
	}
	if _, ok := checkedSize(g.out); !ok {
		panic(fmt.Sprintf("tensor: %s: input of shape %v: pads %v give an output of shape %v: more than MaxElems = %d elements", op, xs, pads, g.out, MaxElems))
	}
	return g
}

// moves reports whether axis a is padded or cropped: whether its output
// index i reads another input index than i.
func (g *padGeom) moves(a int) bool {
	src := g.src[a]
	return src != nil && !(len(src) == g.in[a] && isRun(src, 0))
}

// index returns the input index output index i of axis a reads.
func (g *padGeom) index(a, i int) int {
	if g.src[a] == nil {
		return i
	}
	return g.src[a][i]
}

// rows calls f for every output row (all axes but the last) with its
// offset in the output and that of the input row it reads (-1: the
// constant), both contiguous, row-major.
func (g *padGeom) rows(f func(outOff, inOff int)) {
	nd := len(g.out)
	if nd == 0 {
		f(0, 0)
		return
	}
	lead := g.out[:nd-1]
	pos := make([]int, nd-1)
	inW, outW := g.in[nd-1], g.out[nd-1]
	for r := 0; ; r++ {
		in := 0
		for a, p := range pos {
			s := g.index(a, p)
			if s < 0 || in < 0 {
				in = -1
				continue
			}
			in = in*g.in[a] + s
		}
		if in >= 0 {
			in *= inW
		}
		f(r*outW, in)
		a := nd - 2
		for ; a >= 0; a-- {
			if pos[a]++; pos[a] < lead[a] {
				break
			}
			pos[a] = 0
		}
		if a < 0 {
			return
		}
	}
}

// Pad returns x padded as PyTorch's torch.nn.functional.pad(x, pads,
// mode, value): pads holds (left, right) pairs for the last axis, then
// the one before it, and so on (at most one pair per axis); a negative
// pad removes that many elements (a crop); the mode says what fills the
// added positions (value for PadConstant; it is ignored otherwise). Every
// mode works on any number of axes (PyTorch limits reflect, replicate and
// circular to the last 1 to 3 axes of a 2- to 5-d input); with negative
// pads the non-constant modes reflect, repeat or wrap the uncropped
// input. The result is a new contiguous tensor on x's device. Pad moves
// elements without arithmetic: on a device it composes the Elementwise
// (Fill), Copy and Index (IndexSelect, one pass per padded axis) families,
// and its result equals the host's bit for bit.
func Pad(x *Tensor, pads []int, mode PadMode, value float32) *Tensor {
	checkNil("Pad", "x", x)
	g := planPad("Pad", x.shape, pads, mode)
	if x.Device() != CPU {
		return padComposed("Pad", &g, nil, x, pads, mode, value)
	}
	dst := alloc("Pad", g.out)
	padInto("Pad", &g, dst, x, value)
	return dst
}

// PadInto sets dst to Pad(x, pads, mode, value) and returns dst.
func PadInto(dst, x *Tensor, pads []int, mode PadMode, value float32) *Tensor {
	const op = "PadInto"
	checkNil(op, "dst, x", dst, x)
	g := planPad(op, x.shape, pads, mode)
	if !slices.Equal(dst.shape, g.out) {
		panic(fmt.Sprintf("tensor: %s: input of shape %v with pads %v gives %v, dst is %v", op, x.shape, pads, g.out, dst.shape))
	}
	checkWritable(op, dst)
	if deviceOn(op, dst, x) != CPU {
		return padComposed(op, &g, dst, detach(dst, x), pads, mode, value)
	}
	x = detach(dst, x)
	padInto(op, &g, dst, x, value)
	return dst
}

// padComposed is Pad on x's device, into dst (a new tensor when dst is
// nil; else not overlapping x): for PadConstant, the result filled with
// value and the uncropped part of x copied into its place; for the other
// modes, IndexSelect along each padded axis by the input index each output
// index reads (g.src; selectPasses).
func padComposed(op string, g *padGeom, dst, x *Tensor, pads []int, mode PadMode, value float32) *Tensor {
	if mode == PadConstant {
		y := dst
		if y == nil {
			y = result(op, x.Device(), g.out, x)
		}
		Fill(y, value)
		if y.Len() == 0 {
			return y
		}
		yv, xv := y, x
		for k := 0; k < len(pads)/2; k++ {
			a := len(x.shape) - 1 - k
			lo, hi := pads[2*k], pads[2*k+1]
			kept := x.shape[a] - max(-lo, 0) - max(-hi, 0)
			yv = yv.Slice(a, max(lo, 0), max(lo, 0)+kept, 1)
			xv = xv.Slice(a, max(-lo, 0), max(-lo, 0)+kept, 1)
		}
		if xv.Len() > 0 {
			copyInto(op, yv, xv)
		}
		return y
	}
	var axes []int
	for a := range g.src {
		if g.moves(a) {
			axes = append(axes, a)
		}
	}
	return selectPasses(op, dst, x, axes, func(a int) *Tensor {
		src := g.src[a]
		return indexRange(op, x, len(src), func(i int) int { return src[i] })
	})
}

// isRun reports whether src is the indices first, first+1, ... in order.
func isRun(src []int, first int) bool {
	for i, s := range src {
		if s != first+i {
			return false
		}
	}
	return true
}

func padInto(op string, g *padGeom, dst, x *Tensor, value float32) {
	out := target(dst)
	od := out.hostData(op)
	xd := x.hostData(op)
	if len(od) == 0 {
		return
	}
	last := len(g.out) - 1
	g.rows(func(oo, io int) {
		if last < 0 {
			od[0] = xd[0]
			return
		}
		row := od[oo:][:g.out[last]]
		if io < 0 {
			for i := range row {
				row[i] = value
			}
			return
		}
		src := xd[io:][:g.in[last]]
		for i := range row {
			if s := g.index(last, i); s >= 0 {
				row[i] = src[s]
			} else {
				row[i] = value
			}
		}
	})
	finish(dst, out)
}

// PadBackward returns the gradient of Pad(x, pads, mode, ·) with respect
// to x, of shape xShape, given dy: each dy element added to the input
// element it was read from (several for the non-constant modes). The sums
// are in float32, one padded axis at a time from the last to the first:
// along each, an input slice adds the output slices that read it in
// ascending order, starting from zero. On a device PadBackward composes
// the Elementwise (Fill), Copy and Index (IndexSelect, IndexAdd) families
// in that order, so that its result equals the host's bit for bit: each
// IndexAdd names each input slice at most once (a device's atomic adds
// then have one order), at most 3 rounds per axis (1 + the larger pad for
// PadReplicate, whose edges gather every pad); a round whose slices are
// runs is AddInto on views. The host runs the same sums as loops. On a
// device, PadConstant uploads no index (so a captured CUDA graph step can
// hold it); the other modes upload their index vectors at each call, as
// Flip and Roll do, which a capture refuses (the step then runs eagerly).
func PadBackward(dy *Tensor, xShape []int, pads []int, mode PadMode) *Tensor {
	const op = "PadBackward"
	checkNil(op, "dy", dy)
	g := planPadBackward(op, xShape, pads, mode, dy)
	return padBackward(op, &g, dy)
}

// planPadBackward is planPad for Pad's gradient, which panics unless dy
// has Pad's output shape for an input of xShape.
func planPadBackward(op string, xShape, pads []int, mode PadMode, dy *Tensor) padGeom {
	g := planPad(op, xShape, pads, mode)
	if !slices.Equal(dy.shape, g.out) {
		panic(fmt.Sprintf("tensor: %s: input of shape %v with pads %v gives %v, dy is %v", op, xShape, pads, g.out, dy.shape))
	}
	return g
}

// PadBackwardInto sets dx (x's shape) to the gradient of Pad (see
// PadBackward) and returns dx; dx and dy must be on one device.
func PadBackwardInto(dx, dy *Tensor, pads []int, mode PadMode) *Tensor {
	const op = "PadBackward"
	checkNil(op, "dx, dy", dx, dy)
	g := planPadBackward(op, dx.shape, pads, mode, dy)
	checkWritable(op, dx)
	if deviceOn(op, dx, dy) == CPU {
		// The last round of sums writes dx's elements (or a contiguous
		// stand-in for them) directly.
		out := target(dx)
		padBackwardHost(op, &g, detach(dx, dy), out)
		finish(dx, out)
		return dx
	}
	return copyInto(op, dx, padBackward(op, &g, dy))
}

// padBackward is PadBackward on dy's device (see PadBackward for the
// order of the sums): a new tensor of g.in.
func padBackward(op string, g *padGeom, dy *Tensor) *Tensor {
	if dy.Device() == CPU {
		return padBackwardHost(op, g, dy, nil)
	}
	t := dy
	for a := len(g.src) - 1; a >= 0; a-- {
		if !g.moves(a) {
			continue
		}
		src := g.src[a]
		shape := slices.Clone(t.shape)
		shape[a] = g.in[a]
		acc := result(op, dy.Device(), shape, dy)
		Fill(acc, 0)
		// Round k adds to each input slice its k-th reader.
		readers := make([][]int, g.in[a])
		for i, s := range src {
			if s >= 0 {
				readers[s] = append(readers[s], i)
			}
		}
		for k := 0; ; k++ {
			var from, to []int
			for s, r := range readers {
				if k < len(r) {
					from, to = append(from, r[k]), append(to, s)
				}
			}
			if len(from) == 0 {
				break
			}
			part := t.Slice(a, from[0], from[0]+len(from), 1)
			if !isRun(from, from[0]) {
				part = IndexSelect(t, a, indexRange(op, t, len(from), func(j int) int { return from[j] }))
			}
			if isRun(to, to[0]) { // the same adds, without uploading an index
				v := acc.Slice(a, to[0], to[0]+len(to), 1)
				AddInto(v, v, part)
				continue
			}
			IndexAdd(acc, a, indexRange(op, t, len(to), func(j int) int { return to[j] }), part)
		}
		t = acc
	}
	if t == dy {
		return dy.Clone()
	}
	return t
}

// padBackwardHost is padBackward on the host: the same sums in the same
// order (per padded axis, the last first, each input slice adding the
// output slices that read it in ascending order from zero), as loops over
// contiguous slices rather than the composition's IndexSelect and
// IndexAdd rounds. The result is dst when it is given (contiguous, of
// g.in, not overlapping dy), else a new tensor.
func padBackwardHost(op string, g *padGeom, dy, dst *Tensor) *Tensor {
	last := -1 // the last round's axis: the first summed one
	for a := range g.src {
		if g.moves(a) {
			last = a
			break
		}
	}
	t, shape := dy, dy.shape
	for a := len(g.src) - 1; a >= 0; a-- {
		if !g.moves(a) {
			continue
		}
		src := g.src[a]
		var acc *Tensor
		if a == last && dst != nil {
			acc = dst
			clear(acc.hostData(op))
		} else {
			next := slices.Clone(shape)
			next[a] = g.in[a]
			acc = alloc(op, next)
		}
		next := acc.shape
		outer, inner := 1, 1
		for _, d := range shape[:a] {
			outer *= d
		}
		for _, d := range shape[a+1:] {
			inner *= d
		}
		td, ad := t.hostData(op), acc.hostData(op)
		if len(td) > 0 && len(ad) > 0 {
			for o := range outer {
				dr, tr := ad[o*g.in[a]*inner:][:g.in[a]*inner], td[o*len(src)*inner:][:len(src)*inner]
				for i, s := range src {
					switch {
					case s < 0:
					case inner == 1:
						dr[s] += tr[i]
					default:
						d := dr[s*inner:][:inner]
						simd.Add(d, d, tr[i*inner:][:inner])
					}
				}
			}
		}
		t, shape = acc, next
	}
	switch {
	case t != dy:
		return t
	case dst != nil:
		return CopyInto(dst, dy)
	}
	return dy.Clone()
}
