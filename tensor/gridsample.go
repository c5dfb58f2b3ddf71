package tensor

import (
	"fmt"
	"math"
)

// Sampling and geometry: PyTorch's affine_grid, grid_sample and
// interpolate (nearest, bilinear) over [N, C, H, W] images, with their
// backwards. They run on the device of their operands, through its Sample
// family (SampleKernels), read operands of any layout, and compute each
// output element in float64 from float32 operands, rounding once (the
// source coordinates of Interpolate are PyTorch's float32 ones, so that it
// picks the same pixels). The gradients of the input sum in float64 over
// the output positions in row-major order, per image plane, rounding
// once; a device's kernels do the same (cudaplugin: one thread per plane
// for those sums), so that every result is the CPU's bit for bit.

// InterpMode is the sampling of GridSample and Interpolate.
type InterpMode int

const (
	// InterpDefault is the op's PyTorch default: bilinear for
	// GridSample, nearest for Interpolate.
	InterpDefault InterpMode = iota
	// InterpNearest takes the nearest pixel: GridSample rounds half to
	// even (PyTorch's nearbyint); Interpolate takes floor(dst·scale)
	// (PyTorch's legacy 'nearest').
	InterpNearest
	// InterpBilinear weighs the four nearest pixels.
	InterpBilinear
	// InterpNearestExact is Interpolate's 'nearest-exact': the pixel at
	// floor((dst + 0.5)·scale), as Pillow and scikit-image.
	InterpNearestExact
	// InterpBicubic is Interpolate's 'bicubic': 4×4 pixels weighed by the
	// cubic convolution kernel with A = -0.75.
	InterpBicubic
)

func (m InterpMode) String() string {
	switch m {
	case InterpDefault:
		return "default"
	case InterpNearest:
		return "nearest"
	case InterpBilinear:
		return "bilinear"
	case InterpNearestExact:
		return "nearest-exact"
	case InterpBicubic:
		return "bicubic"
	}
	return fmt.Sprintf("InterpMode(%d)", int(m))
}

// GridPadding is what GridSample reads outside the input.
type GridPadding int

const (
	GridPadZeros  GridPadding = iota // zeros (PyTorch's default 'zeros')
	GridPadBorder                    // the nearest border pixel ('border')
	// GridPadReflection reflects the coordinates at the border ('reflection':
	// at the outer pixels' centres with align corners, at their edges
	// without), then clips them as GridPadBorder.
	GridPadReflection
)

// GridSampleParams configures GridSample (PyTorch's grid_sample
// arguments; the zero value is its defaults: bilinear, zeros,
// align_corners=False).
type GridSampleParams struct {
	Mode         InterpMode
	Padding      GridPadding
	AlignCorners bool
}

// AffineGrid returns PyTorch's affine_grid(theta, size, align_corners):
// for theta [N, 2, 3] and size [N, C, H, W], the grid [N, H, W, 2] whose
// element (n, h, w) is theta[n]·(x_w, y_h, 1), with x_w = -1 + 2w/(W-1)
// (align corners) or (2w+1)/W - 1 (not), 0 when W is 1, and y_h alike.
func AffineGrid(theta *Tensor, size []int, alignCorners bool) *Tensor {
	const op = "AffineGrid"
	checkNil(op, "theta", theta)
	n, h, w := checkAffineGrid(op, theta.shape, size)
	dev := deviceOn(op, nil, theta)
	k := sampleOn(op, dev, nil, theta)
	dst := result(op, dev, []int{n, h, w, 2}, theta)
	ran(op, k.AffineGrid(dst, theta, alignCorners), dst, theta)
	return dst
}

// AffineGridInto sets dst [N, H, W, 2] to AffineGrid(theta, size,
// alignCorners) and returns dst (on theta's device; a strided dst, or one
// overlapping theta, is written through a temporary).
func AffineGridInto(dst, theta *Tensor, size []int, alignCorners bool) *Tensor {
	const op = "AffineGridInto"
	checkNil(op, "dst, theta", dst, theta)
	n, h, w := checkAffineGrid(op, theta.shape, size)
	checkShapeIs(op, "dst", dst, n, h, w, 2)
	checkWritable(op, dst)
	dev := deviceOn(op, dst, theta)
	k := sampleOn(op, dev, dst, theta)
	if dev == CPU {
		theta = detach(dst, theta)
	}
	ran(op, k.AffineGrid(dst, theta, alignCorners), dst, theta)
	return dst
}

// affineGrid writes AffineGrid into out, contiguous [n, h, w, 2].
func affineGrid(op string, out, theta *Tensor, n, h, w int, alignCorners bool) {
	th := theta.hostData(op)
	xs, ys := gridBase(w, alignCorners), gridBase(h, alignCorners)
	for b := range n {
		t := th[b*6 : b*6+6]
		for i, y := range ys {
			for j, x := range xs {
				o := ((b*h+i)*w + j) * 2
				out.data[out.offset+o] = float32(float64(t[0])*x + float64(t[1])*y + float64(t[2]))
				out.data[out.offset+o+1] = float32(float64(t[3])*x + float64(t[4])*y + float64(t[5]))
			}
		}
	}
}

// hostInto has fill write every element of dst, a host tensor that
// overlaps no operand, through a contiguous tensor of its shape: dst
// itself, else a temporary then copied into dst.
func hostInto(op string, dst *Tensor, fill func(out *Tensor)) {
	dst.hostOnly(op)
	out := target(dst)
	fill(out)
	finish(dst, out)
}

// AffineGridBackward returns the gradient with respect to theta [N, 2, 3]
// of AffineGrid(theta, size, alignCorners), given dgrid [N, H, W, 2]:
// dtheta[n, i] = Σ_(h,w) dgrid[n, h, w, i]·(x_w, y_h, 1).
func AffineGridBackward(dgrid *Tensor, size []int, alignCorners bool) *Tensor {
	const op = "AffineGridBackward"
	n := checkAffineGridBackward(op, dgrid, size)
	dev := deviceOn(op, nil, dgrid)
	k := sampleOn(op, dev, nil, dgrid)
	dst := result(op, dev, []int{n, 2, 3}, dgrid)
	ran(op, k.AffineGridBackward(dst, dgrid, alignCorners), dst, dgrid)
	return dst
}

// AffineGridBackwardInto sets dtheta [N, 2, 3] to AffineGridBackward(dgrid,
// size, alignCorners) and returns it, with AffineGridInto's rules.
func AffineGridBackwardInto(dtheta, dgrid *Tensor, size []int, alignCorners bool) *Tensor {
	const op = "AffineGridBackwardInto"
	n := checkAffineGridBackward(op, dgrid, size)
	checkNil(op, "dtheta", dtheta)
	checkShapeIs(op, "dtheta", dtheta, n, 2, 3)
	checkWritable(op, dtheta)
	dev := deviceOn(op, dtheta, dgrid)
	k := sampleOn(op, dev, dtheta, dgrid)
	if dev == CPU {
		dgrid = detach(dtheta, dgrid)
	}
	ran(op, k.AffineGridBackward(dtheta, dgrid, alignCorners), dtheta, dgrid)
	return dtheta
}

func checkAffineGridBackward(op string, dgrid *Tensor, size []int) int {
	checkNil(op, "dgrid", dgrid)
	if len(size) != 4 {
		panic(fmt.Sprintf("tensor: %s: size %v, want [N C H W]", op, size))
	}
	n, h, w := size[0], size[2], size[3]
	if want := []int{n, h, w, 2}; !equalInts(dgrid.shape, want) {
		panic(fmt.Sprintf("tensor: %s: dgrid of shape %v, want %v", op, dgrid.shape, want))
	}
	return n
}

// affineGridBackward writes AffineGridBackward into out, contiguous [n, 2, 3].
func affineGridBackward(op string, out, dgrid *Tensor, alignCorners bool) {
	n, h, w := dgrid.shape[0], dgrid.shape[1], dgrid.shape[2]
	g := dgrid.hostData(op)
	xs, ys := gridBase(w, alignCorners), gridBase(h, alignCorners)
	for b := range n {
		var acc [6]float64
		for i, y := range ys {
			for j, x := range xs {
				o := ((b*h+i)*w + j) * 2
				for k := range 2 {
					d := float64(g[o+k])
					acc[3*k] += d * x
					acc[3*k+1] += d * y
					acc[3*k+2] += d
				}
			}
		}
		for k, v := range acc {
			out.data[out.offset+b*6+k] = float32(v)
		}
	}
}

func checkAffineGrid(op string, theta, size []int) (n, h, w int) {
	if len(size) != 4 || len(theta) != 3 || theta[0] != size[0] || theta[1] != 2 || theta[2] != 3 || size[2] < 0 || size[3] < 0 {
		panic(fmt.Sprintf("tensor: %s: theta of shape %v and size %v, want [N 2 3] and [N C H W]", op, theta, size))
	}
	return size[0], size[2], size[3]
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// gridBase returns the normalized coordinates of n pixels (PyTorch's
// linspace_from_neg_one).
func gridBase(n int, align bool) []float64 {
	xs := make([]float64, n)
	if n <= 1 {
		return xs
	}
	for i := range xs {
		if align {
			xs[i] = -1 + 2*float64(i)/float64(n-1)
		} else {
			xs[i] = (2*float64(i)+1)/float64(n) - 1
		}
	}
	return xs
}

// gridJob is one GridSample or its backward.
type gridJob struct {
	p                GridSampleParams
	n, c, h, w       int
	ho, wo           int
	x, grid          []float32
	dx, dgrid, dy    []float64
	out              []float32
	backward, gradXY bool
}

// checkGridSample checks GridSample's operands and parameters and
// returns p with its mode resolved (InterpDefault: bilinear).
func checkGridSample(op string, input, grid *Tensor, p GridSampleParams) GridSampleParams {
	checkNil(op, "input, grid", input, grid)
	s, g := input.shape, grid.shape
	if len(s) != 4 || len(g) != 4 || g[0] != s[0] || g[3] != 2 {
		panic(fmt.Sprintf("tensor: %s: input of shape %v and grid of shape %v, want [N C H W] and [N Ho Wo 2]", op, s, g))
	}
	if p.Mode < InterpDefault || p.Mode > InterpBilinear || p.Padding < GridPadZeros || p.Padding > GridPadReflection {
		panic(fmt.Sprintf("tensor: %s: mode %v, padding %d not supported", op, p.Mode, p.Padding))
	}
	if p.Mode == InterpDefault {
		p.Mode = InterpBilinear
	}
	return p
}

// newGridJob is GridSample's job on host operands, checked.
func newGridJob(op string, input, grid *Tensor, p GridSampleParams) *gridJob {
	s, g := input.shape, grid.shape
	return &gridJob{p: p, n: s[0], c: s[1], h: s[2], w: s[3], ho: g[1], wo: g[2],
		x: input.hostData(op), grid: grid.hostData(op)}
}

// source returns the pixel coordinate of normalized coordinate v over
// size pixels and its derivative with respect to v (0 where the border
// padding clips it).
func (j *gridJob) source(v float32, size int) (float64, float64) {
	c, d := float64(v), float64(size)/2
	if j.p.AlignCorners {
		c, d = (c+1)/2*float64(size-1), float64(size-1)/2
	} else {
		c = ((c+1)*float64(size) - 1) / 2
	}
	if j.p.Padding == GridPadReflection {
		var r float64
		if j.p.AlignCorners {
			c, r = reflect(c, 0, 2*float64(size-1))
		} else {
			c, r = reflect(c, -1, 2*float64(size)-1)
		}
		d *= r
	}
	if j.p.Padding != GridPadZeros {
		switch {
		case !(c > 0): // also NaN, which PyTorch's clip sends to 0 too
			return 0, 0
		case c >= float64(size-1):
			return float64(size - 1), 0
		}
	}
	return c, d
}

// reflect returns c reflected into [lo/2, hi/2] (PyTorch's
// reflect_coordinates of the doubled bounds) and the derivative, ±1 (0
// when the range is empty).
func reflect(c, lo, hi float64) (float64, float64) {
	if lo == hi {
		return 0, 0
	}
	m, span := lo/2, (hi-lo)/2
	sgn := 1.0
	if c < m {
		c, sgn = m-c, -1
	} else {
		c -= m
	}
	extra, flips := math.Mod(c, span), math.Floor(c/span)
	if math.Mod(flips, 2) == 0 {
		return extra + m, sgn
	}
	return span - extra + m, -sgn
}

// pixel returns input element (b, ch, y, x), 0 outside.
func (j *gridJob) pixel(b, ch, y, x int) float64 {
	if y < 0 || y >= j.h || x < 0 || x >= j.w {
		return 0
	}
	return float64(j.x[((b*j.c+ch)*j.h+y)*j.w+x])
}

// addPixel adds v to dx at (b, ch, y, x) when inside.
func (j *gridJob) addPixel(b, ch, y, x int, v float64) {
	if y >= 0 && y < j.h && x >= 0 && x < j.w {
		j.dx[((b*j.c+ch)*j.h+y)*j.w+x] += v
	}
}

// run computes the output (forward) or the gradients (backward) at every
// output position.
func (j *gridJob) run() {
	for b := range j.n {
		for oy := range j.ho {
			for ox := range j.wo {
				gi := ((b*j.ho+oy)*j.wo + ox) * 2
				ix, mx := j.source(j.grid[gi], j.w)
				iy, my := j.source(j.grid[gi+1], j.h)
				j.at(b, oy, ox, gi, ix, iy, mx, my)
			}
		}
	}
}

func (j *gridJob) at(b, oy, ox, gi int, ix, iy, mx, my float64) {
	finite := !math.IsNaN(ix) && !math.IsNaN(iy) && math.Abs(ix) < 1<<40 && math.Abs(iy) < 1<<40
	outAt := func(ch int) int { return ((b*j.c+ch)*j.ho+oy)*j.wo + ox }
	if !finite {
		// A NaN or huge coordinate reads 0 (its gradients are 0).
		if !j.backward {
			for ch := range j.c {
				j.out[outAt(ch)] = 0
			}
		}
		return
	}
	if j.p.Mode == InterpNearest {
		x, y := int(math.RoundToEven(ix)), int(math.RoundToEven(iy))
		for ch := range j.c {
			if j.backward {
				j.addPixel(b, ch, y, x, j.dy[outAt(ch)])
			} else {
				j.out[outAt(ch)] = float32(j.pixel(b, ch, y, x))
			}
		}
		return
	}
	x0, y0 := int(math.Floor(ix)), int(math.Floor(iy))
	fx, fy := ix-float64(x0), iy-float64(y0)
	wnw, wne, wsw, wse := (1-fx)*(1-fy), fx*(1-fy), (1-fx)*fy, fx*fy
	var gx, gy float64
	for ch := range j.c {
		nw, ne := j.pixel(b, ch, y0, x0), j.pixel(b, ch, y0, x0+1)
		sw, se := j.pixel(b, ch, y0+1, x0), j.pixel(b, ch, y0+1, x0+1)
		if !j.backward {
			j.out[outAt(ch)] = float32(nw*wnw + ne*wne + sw*wsw + se*wse)
			continue
		}
		g := j.dy[outAt(ch)]
		j.addPixel(b, ch, y0, x0, g*wnw)
		j.addPixel(b, ch, y0, x0+1, g*wne)
		j.addPixel(b, ch, y0+1, x0, g*wsw)
		j.addPixel(b, ch, y0+1, x0+1, g*wse)
		gx += g * ((ne-nw)*(1-fy) + (se-sw)*fy)
		gy += g * ((sw-nw)*(1-fx) + (se-ne)*fx)
	}
	if j.backward {
		j.dgrid[gi] += gx * mx
		j.dgrid[gi+1] += gy * my
	}
}

// GridSample returns PyTorch's grid_sample(input, grid, mode,
// padding_mode, align_corners) for 4-d input [N, C, H, W] and grid
// [N, Ho, Wo, 2] of normalized (x, y) in [-1, 1] (-1 the left/top edge
// of the first pixel without align corners, its centre with): the
// [N, C, Ho, Wo] samples. Bilinear weighs the four pixels around the
// point, those outside reading 0 (zeros) or the point first clipped to
// the image (border) or reflected into it (reflection); nearest takes
// the pixel at the coordinates rounded half to even. A NaN or huge
// coordinate reads 0 (border: clips to 0 as PyTorch's). The bicubic mode
// is not provided.
func GridSample(input, grid *Tensor, p GridSampleParams) *Tensor {
	const op = "GridSample"
	p = checkGridSample(op, input, grid, p)
	dev := deviceOn(op, nil, input, grid)
	k := sampleOn(op, dev, nil, input, grid)
	dst := result(op, dev, gridSampleShape(input, grid), input, grid)
	ran(op, k.GridSample(dst, input, grid, p), dst, input, grid)
	return dst
}

// gridSampleShape is GridSample's output shape [N, C, Ho, Wo].
func gridSampleShape(input, grid *Tensor) []int {
	return []int{input.shape[0], input.shape[1], grid.shape[1], grid.shape[2]}
}

// GridSampleInto sets dst [N, C, Ho, Wo] to GridSample(input, grid, p)
// and returns dst (on the operands' device; a strided dst, or one
// overlapping input or grid, is written through a temporary).
func GridSampleInto(dst, input, grid *Tensor, p GridSampleParams) *Tensor {
	const op = "GridSampleInto"
	p = checkGridSample(op, input, grid, p)
	checkNil(op, "dst", dst)
	checkShapeIs(op, "dst", dst, gridSampleShape(input, grid)...)
	checkWritable(op, dst)
	dev := deviceOn(op, dst, input, grid)
	k := sampleOn(op, dev, dst, input, grid)
	if dev == CPU {
		input, grid = detach(dst, input), detach(dst, grid)
	}
	ran(op, k.GridSample(dst, input, grid, p), dst, input, grid)
	return dst
}

// GridSampleBackward returns the gradients with respect to input and
// grid of GridSample(input, grid, p), given dy [N, C, Ho, Wo]. The grid's
// is 0 for nearest and where the border padding clips, as PyTorch's; at
// integer coordinates it is the one-sided slope toward the next pixel.
func GridSampleBackward(dy, input, grid *Tensor, p GridSampleParams) (dinput, dgrid *Tensor) {
	const op = "GridSampleBackward"
	checkNil(op, "input, grid", input, grid)
	dev := deviceOn(op, nil, dy, input, grid)
	return gridSampleBackward(op, result(op, dev, input.shape, input), result(op, dev, grid.shape, grid), dy, input, grid, p)
}

// GridSampleBackwardInto sets dinput and dgrid, of input's and grid's
// shapes (either may be nil: not written), to GridSampleBackward(dy,
// input, grid, p) and returns them, with GridSampleInto's rules. The CPU
// accumulates in float64 scratch of input's and grid's sizes.
func GridSampleBackwardInto(dinput, dgrid, dy, input, grid *Tensor, p GridSampleParams) (*Tensor, *Tensor) {
	return gridSampleBackward("GridSampleBackwardInto", dinput, dgrid, dy, input, grid, p)
}

func gridSampleBackward(op string, dinput, dgrid, dy, input, grid *Tensor, p GridSampleParams) (*Tensor, *Tensor) {
	p = checkGridSample(op, input, grid, p)
	checkNil(op, "dy", dy)
	if want := gridSampleShape(input, grid); !equalInts(dy.shape, want) {
		panic(fmt.Sprintf("tensor: %s: dy of shape %v, want %v", op, dy.shape, want))
	}
	for _, c := range []struct {
		name string
		d, t *Tensor
	}{{"dinput", dinput, input}, {"dgrid", dgrid, grid}} {
		if c.d != nil {
			checkSameShapeAs(op, c.name, c.d, c.t)
			checkWritable(op, c.d)
		}
	}
	if dinput == nil && dgrid == nil {
		return nil, nil
	}
	dst := dinput
	if dst == nil {
		dst = dgrid
	}
	dev := deviceOn(op, dst, dy, input, grid)
	if dgrid != nil {
		deviceOn(op, dgrid, dy, input, grid)
	}
	k := sampleOn(op, dev, dst, dy, input, grid)
	if dev == CPU {
		for _, d := range []*Tensor{dinput, dgrid} {
			if d != nil {
				dy, input, grid = detach(d, dy), detach(d, input), detach(d, grid)
			}
		}
	}
	ran(op, k.GridSampleBackward(dinput, dgrid, dy, input, grid, p), dst, dy, input, grid)
	return dinput, dgrid
}

func toF64(s []float32) []float64 {
	d := make([]float64, len(s))
	for i, v := range s {
		d[i] = float64(v)
	}
	return d
}

// fromF64Into rounds s into t, contiguous.
func fromF64Into(t *Tensor, s []float64) {
	d := t.data[t.offset:]
	for i, v := range s {
		d[i] = float32(v)
	}
}

// InterpolateParams configures Interpolate (PyTorch's interpolate of a
// 4-d input). Give the output size (Size, [Ho, Wo]) or the scale factors
// (Scale, [sh, sw], the output being floor(H·sh) by floor(W·sw)), not
// both.
type InterpolateParams struct {
	Size         [2]int
	Scale        [2]float64
	Mode         InterpMode // InterpDefault is nearest, PyTorch's default
	AlignCorners bool       // bilinear and bicubic only (PyTorch refuses it for the nearest modes)
}

// interpAxis is one axis of an interpolation: for each output index o,
// taps source indices idx[o·taps:] with weights w[o·taps:].
type interpAxis struct {
	taps int
	idx  []int
	w    []float64
}

// newInterpAxis computes the source indices and weights along an axis of
// in pixels resized to out, with the user's scale factor sf (0: none), as
// PyTorch's upsample kernels (float32 scales; see each mode).
func newInterpAxis(in, out int, sf float64, mode InterpMode, align bool) interpAxis {
	taps := map[InterpMode]int{InterpNearest: 1, InterpNearestExact: 1, InterpBilinear: 2, InterpBicubic: 4}[mode]
	a := interpAxis{taps: taps, idx: make([]int, out*taps), w: make([]float64, out*taps)}
	scale := InterpolateScale(in, out, sf, mode, align)
	for o := range out {
		idx, w := a.idx[o*taps:][:taps], a.w[o*taps:][:taps]
		switch mode {
		case InterpNearest: // nearest_neighbor_compute_source_index
			idx[0], w[0] = min(int(float32(math.Floor(float64(float32(o)*scale)))), in-1), 1
		case InterpNearestExact: // nearest_exact_idx
			idx[0], w[0] = min(int(float32(math.Floor(float64((float32(o)+0.5)*scale)))), in-1), 1
		case InterpBilinear: // compute_source_index_and_lambda: a float64 source
			if out == in {
				idx[0], idx[1], w[0] = o, o, 1
				continue
			}
			src := float64(scale) * float64(o)
			if !align {
				src = max(float64(scale)*(float64(o)+0.5)-0.5, 0)
			}
			i := int(src)
			idx[0], idx[1] = i, i
			if i < in-1 {
				idx[1] = i + 1
			}
			l1 := float32(src - float64(i))
			w[0], w[1] = float64(1-l1), float64(l1)
		case InterpBicubic: // float32 source, A = -0.75, indices clamped
			src := scale * float32(o)
			if !align {
				src = scale*(float32(o)+0.5) - 0.5
			}
			i := int(math.Floor(float64(src)))
			t := float64(src - float32(i))
			w[0], w[1], w[2], w[3] = cubicFar(t+1), cubicNear(t), cubicNear(1-t), cubicFar(2-t)
			for k := range 4 {
				idx[k] = min(max(i-1+k, 0), in-1)
			}
		}
	}
	return a
}

// InterpolateScale is the float32 scale from which Interpolate computes
// the source coordinates along an axis of in pixels resized to out, with
// the user's scale factor sf (0: none), as PyTorch's upsample kernels:
// in/out, or 1/sf; (in-1)/(out-1) (0 when out is 1) with align corners
// for bilinear and bicubic. It is for device kernels, which derive the
// source indices and weights from it as the CPU does.
func InterpolateScale(in, out int, sf float64, mode InterpMode, align bool) float32 {
	scale := float32(in) / float32(out) // compute_scales_value
	if sf > 0 {
		scale = float32(1 / sf)
	}
	if align && mode != InterpNearest && mode != InterpNearestExact {
		scale = 0 // area_pixel_compute_scale
		if out > 1 {
			scale = float32(in-1) / float32(out-1)
		}
	}
	return scale
}

// cubicNear and cubicFar are the cubic convolution kernel (A = -0.75,
// PyTorch's and OpenCV's) at distances |x| ≤ 1 and 1 < |x| < 2.
func cubicNear(x float64) float64 {
	const a = -0.75
	return ((a+2)*x-(a+3))*x*x + 1
}

func cubicFar(x float64) float64 {
	const a = -0.75
	return ((a*x-5*a)*x+8*a)*x - 4*a
}

// interpGeom checks x and p and returns the output size and both axes.
func interpGeom(op string, shape []int, p InterpolateParams) (ho, wo int, ay, ax interpAxis) {
	ho, wo, mode := interpSize(op, shape, p)
	return ho, wo, newInterpAxis(shape[2], ho, p.Scale[0], mode, p.AlignCorners), newInterpAxis(shape[3], wo, p.Scale[1], mode, p.AlignCorners)
}

// interpSize checks x and p and returns the output size and the mode
// (InterpDefault resolved), without interpGeom's tables.
func interpSize(op string, shape []int, p InterpolateParams) (ho, wo int, mode InterpMode) {
	if len(shape) != 4 {
		panic(fmt.Sprintf("tensor: %s: input of shape %v, want [N C H W]", op, shape))
	}
	if p.Mode < InterpDefault || p.Mode > InterpBicubic {
		panic(fmt.Sprintf("tensor: %s: mode %v not supported", op, p.Mode))
	}
	mode = p.Mode
	if mode == InterpDefault {
		mode = InterpNearest
	}
	if (mode == InterpNearest || mode == InterpNearestExact) && p.AlignCorners {
		panic(fmt.Sprintf("tensor: %s: align corners is for bilinear and bicubic only (PyTorch refuses it for %v)", op, mode))
	}
	h, w := shape[2], shape[3]
	hasSize, hasScale := p.Size != [2]int{}, p.Scale != [2]float64{}
	switch {
	case hasSize == hasScale:
		panic(fmt.Sprintf("tensor: %s: give either Size or Scale (size %v, scale %v)", op, p.Size, p.Scale))
	case hasSize:
		ho, wo = p.Size[0], p.Size[1]
	default:
		if !(p.Scale[0] > 0 && p.Scale[1] > 0) || math.IsInf(p.Scale[0], 0) || math.IsInf(p.Scale[1], 0) {
			panic(fmt.Sprintf("tensor: %s: scale factors %v must be positive and finite", op, p.Scale))
		}
		ho, wo = int(math.Floor(float64(h)*p.Scale[0])), int(math.Floor(float64(w)*p.Scale[1]))
	}
	if ho <= 0 || wo <= 0 || h <= 0 || w <= 0 {
		panic(fmt.Sprintf("tensor: %s: input of shape %v and output size [%d %d]: both must be positive", op, shape, ho, wo))
	}
	return ho, wo, mode
}

// Interpolate returns PyTorch's interpolate(x, size or scale_factor,
// mode, align_corners) of x [N, C, H, W]. The source pixels are PyTorch's:
// scale is in/out, or 1/scale factor when Scale is given (PyTorch's
// recompute_scale_factor=None), in float32; nearest reads
// floor(o·scale), clamped to the last pixel, always (PyTorch 1.13's
// kernels differ where a scale factor such as 1.1 or 2.1 gives an output
// of in or 2·in pixels: some paths copy or halve o instead, as does its
// backward; lanes' backward is the adjoint of its forward); nearest-exact
// floor((o + 0.5)·scale); bilinear weighs the two pixels around
// o·(in-1)/(out-1) (align corners) or max((o + 0.5)·scale - 0.5, 0), and
// copies when out = in; bicubic weighs four with the cubic convolution
// kernel (A = -0.75), indices beyond the border clamped to it. Each output
// is computed in float64 from the float32 weights and rounded once.
func Interpolate(x *Tensor, p InterpolateParams) *Tensor {
	const op = "Interpolate"
	checkNil(op, "x", x)
	ho, wo, mode := interpSize(op, x.shape, p)
	p.Mode = mode
	dev := deviceOn(op, nil, x)
	k := sampleOn(op, dev, nil, x)
	dst := result(op, dev, []int{x.shape[0], x.shape[1], ho, wo}, x)
	ran(op, k.Interpolate(dst, x, p), dst, x)
	return dst
}

// InterpolateShape returns the output shape [N, C, Ho, Wo] of
// Interpolate(x, p), with its panics.
func InterpolateShape(x *Tensor, p InterpolateParams) [4]int {
	const op = "InterpolateShape"
	checkNil(op, "x", x)
	ho, wo, _ := interpSize(op, x.shape, p)
	return [4]int{x.shape[0], x.shape[1], ho, wo}
}

// InterpolateInto sets dst [N, C, Ho, Wo] to Interpolate(x, p) and
// returns dst (on x's device; a strided dst, or one overlapping x, is
// written through a temporary).
func InterpolateInto(dst, x *Tensor, p InterpolateParams) *Tensor {
	const op = "InterpolateInto"
	checkNil(op, "dst, x", dst, x)
	ho, wo, mode := interpSize(op, x.shape, p)
	p.Mode = mode
	checkShapeIs(op, "dst", dst, x.shape[0], x.shape[1], ho, wo)
	checkWritable(op, dst)
	dev := deviceOn(op, dst, x)
	k := sampleOn(op, dev, dst, x)
	if dev == CPU {
		x = detach(dst, x)
	}
	ran(op, k.Interpolate(dst, x, p), dst, x)
	return dst
}

// interpolate writes Interpolate into out, contiguous.
func interpolate(op string, out, x *Tensor, ay, ax interpAxis) {
	n, c, h, w := x.shape[0], x.shape[1], x.shape[2], x.shape[3]
	ho, wo := out.shape[2], out.shape[3]
	xs := x.hostData(op)
	od := out.data[out.offset:]
	for pl := range n * c {
		src, dst := xs[pl*h*w:], od[pl*ho*wo:]
		for oy := range ho {
			for ox := range wo {
				var v float64
				for a := range ay.taps {
					row := src[ay.idx[oy*ay.taps+a]*w:]
					var r float64
					for b := range ax.taps {
						r += ax.w[ox*ax.taps+b] * float64(row[ax.idx[ox*ax.taps+b]])
					}
					v += ay.w[oy*ay.taps+a] * r
				}
				dst[oy*wo+ox] = float32(v)
			}
		}
	}
}

// InterpolateBackward returns the gradient with respect to x (of shape
// xShape [N, C, H, W]) of Interpolate(x, p), given dy: each output
// gradient added to the pixels it read, with their weights, in float64.
func InterpolateBackward(dy *Tensor, xShape []int, p InterpolateParams) *Tensor {
	const op = "InterpolateBackward"
	checkNil(op, "dy", dy)
	p = checkInterpolateBackward(op, dy, xShape, p)
	dev := deviceOn(op, nil, dy)
	k := sampleOn(op, dev, nil, dy)
	dx := result(op, dev, xShape, dy)
	ran(op, k.InterpolateBackward(dx, dy, p), dx, dy)
	return dx
}

// InterpolateBackwardInto sets dx, of x's shape [N, C, H, W], to
// InterpolateBackward(dy, dx's shape, p) and returns dx, with
// InterpolateInto's rules; the kernel accumulates in float64 scratch of
// dx's size.
func InterpolateBackwardInto(dx, dy *Tensor, p InterpolateParams) *Tensor {
	const op = "InterpolateBackwardInto"
	checkNil(op, "dx, dy", dx, dy)
	p = checkInterpolateBackward(op, dy, dx.shape, p)
	checkWritable(op, dx)
	dev := deviceOn(op, dx, dy)
	k := sampleOn(op, dev, dx, dy)
	if dev == CPU {
		dy = detach(dx, dy)
	}
	ran(op, k.InterpolateBackward(dx, dy, p), dx, dy)
	return dx
}

// checkInterpolateBackward panics unless dy is Interpolate's output for an
// input of xShape, and returns p with its mode resolved.
func checkInterpolateBackward(op string, dy *Tensor, xShape []int, p InterpolateParams) InterpolateParams {
	ho, wo, mode := interpSize(op, xShape, p)
	if want := []int{xShape[0], xShape[1], ho, wo}; !equalInts(dy.shape, want) {
		panic(fmt.Sprintf("tensor: %s: dy of shape %v, want %v", op, dy.shape, want))
	}
	p.Mode = mode
	return p
}

// interpolateBackward returns the float64 gradient of x (of xShape).
func interpolateBackward(op string, dy *Tensor, xShape []int, p InterpolateParams) []float64 {
	_, _, ay, ax := interpGeom(op, xShape, p)
	n, c, h, w := xShape[0], xShape[1], xShape[2], xShape[3]
	ho, wo := dy.shape[2], dy.shape[3]
	g := dy.hostData(op)
	acc := make([]float64, n*c*h*w)
	for pl := range n * c {
		dst, src := acc[pl*h*w:], g[pl*ho*wo:]
		for oy := range ho {
			for ox := range wo {
				v := float64(src[oy*wo+ox])
				for a := range ay.taps {
					row := dst[ay.idx[oy*ay.taps+a]*w:]
					va := v * ay.w[oy*ay.taps+a]
					for b := range ax.taps {
						row[ax.idx[ox*ax.taps+b]] += va * ax.w[ox*ax.taps+b]
					}
				}
			}
		}
	}
	return acc
}

// The CPU's Sample family: the host code above, on host operands the
// public function has checked, dst overlapping none (a strided dst is
// written through a temporary).

// GridSample is the CPU's GridSample.
func (cpuKernels) GridSample(dst, input, grid *Tensor, p GridSampleParams) error {
	const op = "GridSample"
	j := newGridJob(op, input, grid, p)
	hostInto(op, dst, func(out *Tensor) {
		j.out = out.data[out.offset:]
		j.run()
	})
	return nil
}

// GridSampleBackward is the CPU's GridSampleBackward.
func (cpuKernels) GridSampleBackward(dinput, dgrid, dy, input, grid *Tensor, p GridSampleParams) error {
	const op = "GridSampleBackward"
	j := newGridJob(op, input, grid, p)
	j.backward = true
	j.dy = toF64(dy.hostData(op))
	j.dx, j.dgrid = make([]float64, len(j.x)), make([]float64, len(j.grid))
	j.run()
	if dinput != nil {
		hostInto(op, dinput, func(out *Tensor) { fromF64Into(out, j.dx) })
	}
	if dgrid != nil {
		hostInto(op, dgrid, func(out *Tensor) { fromF64Into(out, j.dgrid) })
	}
	return nil
}

// AffineGrid is the CPU's AffineGrid.
func (cpuKernels) AffineGrid(dst, theta *Tensor, alignCorners bool) error {
	const op = "AffineGrid"
	hostInto(op, dst, func(out *Tensor) { affineGrid(op, out, theta, dst.shape[0], dst.shape[1], dst.shape[2], alignCorners) })
	return nil
}

// AffineGridBackward is the CPU's AffineGridBackward.
func (cpuKernels) AffineGridBackward(dtheta, dgrid *Tensor, alignCorners bool) error {
	const op = "AffineGridBackward"
	hostInto(op, dtheta, func(out *Tensor) { affineGridBackward(op, out, dgrid, alignCorners) })
	return nil
}

// Interpolate is the CPU's Interpolate.
func (cpuKernels) Interpolate(dst, x *Tensor, p InterpolateParams) error {
	const op = "Interpolate"
	_, _, ay, ax := interpGeom(op, x.shape, p)
	hostInto(op, dst, func(out *Tensor) { interpolate(op, out, x, ay, ax) })
	return nil
}

// InterpolateBackward is the CPU's InterpolateBackward.
func (cpuKernels) InterpolateBackward(dx, dy *Tensor, p InterpolateParams) error {
	const op = "InterpolateBackward"
	acc := interpolateBackward(op, dy, dx.shape, p)
	hostInto(op, dx, func(out *Tensor) { fromF64Into(out, acc) })
	return nil
}
