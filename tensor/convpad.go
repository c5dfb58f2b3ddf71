package tensor

import "fmt"

// Convolutions with ConvParams.PaddingMode other than PadConstant (zeros):
// the input is padded by Pad into a new tensor (the extra copy: one input
// of (H+2·ph)·(W+2·pw) per image, made on every call, on x's device) and
// convolved with no padding; the input gradient is that of the padded
// input, folded back by PadBackward.

// modePadded returns x padded as p says and p without padding, and true,
// when p pads in a mode other than zeros; else false.
func modePadded(op string, x *Tensor, p ConvParams) (*Tensor, ConvParams, bool) {
	if p.PaddingMode == PadConstant || p.Padding == [2]int{} {
		return nil, p, false
	}
	planPad(op, x.shape, convPads(p), p.PaddingMode) // its panics name op
	xp := Pad(x, convPads(p), p.PaddingMode, 0)
	q := p
	q.Padding, q.PaddingMode = [2]int{}, PadConstant
	return xp, q, true
}

// convPads returns Pad's pads for p's padding of the last two axes.
func convPads(p ConvParams) []int {
	return []int{p.Padding[1], p.Padding[1], p.Padding[0], p.Padding[0]}
}

// checkPadMode panics on a padding mode that is not one of PadMode's.
func checkPadMode(op string, p ConvParams) {
	if p.PaddingMode < PadConstant || p.PaddingMode > PadCircular {
		panic(fmt.Sprintf("tensor: %s: unknown padding mode %v", op, p.PaddingMode))
	}
}

// modeBackwardInput sets dx to the input gradient of a convolution that
// pads in a mode (see modePadded) and reports whether p has one.
func modeBackwardInput(dx, dy, w *Tensor, p ConvParams) bool {
	if p.PaddingMode == PadConstant || p.Padding == [2]int{} {
		return false
	}
	q := p
	q.Padding, q.PaddingMode = [2]int{}, PadConstant
	s := dx.Shape()
	s[2], s[3] = s[2]+2*p.Padding[0], s[3]+2*p.Padding[1]
	PadBackwardInto(dx, Conv2DBackwardInput(dy, w, s, q), convPads(p), p.PaddingMode)
	return true
}
