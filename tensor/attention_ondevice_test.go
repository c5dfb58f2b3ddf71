package tensor_test

import (
	"math"
	"math/rand/v2"
	"testing"

	. "github.com/lanesgo/lanes/tensor"
	"github.com/lanesgo/lanes/tensor/tensortest"
)

// TestAttentionOnDevice runs ScaledDotProductAttention and its backward on
// the stand-in device (the composed path) and checks the results stay
// there and agree with the host's fused path; operands on two devices
// panic naming the op.
func TestAttentionOnDevice(t *testing.T) {
	tensortest.Register(t, onDev)
	r := rand.New(rand.NewPCG(3, 3))
	pad := New(2, 9)
	pad.Set(1, 0, 4)
	for j := range 9 {
		pad.Set(1, 1, j) // batch 1: every key padded
	}
	for _, c := range []struct {
		name   string
		sq, sk int
		p      AttentionParams
	}{
		{"plain", 7, 9, AttentionParams{}},
		{"causal", 11, 9, AttentionParams{Causal: true, Scale: 0.3}},
		{"padded", 7, 9, AttentionParams{KeyPadding: pad}},
		{"causal+padded", 9, 9, AttentionParams{Causal: true, KeyPadding: pad}},
		{"no keys", 4, 0, AttentionParams{Causal: true}},
	} {
		q, k, v, dout := RandN(r, 2, 3, c.sq, 5), RandN(r, 2, 3, c.sk, 5), RandN(r, 2, 3, c.sk, 4), RandN(r, 2, 3, c.sq, 4)
		p := c.p
		if p.KeyPadding != nil && c.sk == 0 {
			p.KeyPadding = nil
		}
		out, lse := New(2, 3, c.sq, 4), New(2, 3, c.sq)
		ScaledDotProductAttentionInto(out, lse, q, k, v, p)
		dq, dk, dv := ScaledDotProductAttentionBackward(dout, q, k, v, out, lse, p)

		dp := p
		if p.KeyPadding != nil {
			dp.KeyPadding = toDev(t, p.KeyPadding, onDev)
		}
		qd, kd, vd, doutd := toDev(t, q, onDev), toDev(t, k, onDev), toDev(t, v, onDev), toDev(t, dout, onDev)
		outd := ScaledDotProductAttention(qd, kd, vd, dp)
		out2, lse2 := toDev(t, New(2, 3, c.sq, 4), onDev), toDev(t, New(2, 3, c.sq), onDev)
		ScaledDotProductAttentionInto(out2, lse2, qd, kd, vd, dp)
		dqd, dkd, dvd := ScaledDotProductAttentionBackward(doutd, qd, kd, vd, out2, lse2, dp)
		for _, x := range []struct {
			name      string
			dev, host *Tensor
		}{{"out", outd, out}, {"Into's out", out2, out}, {"lse", lse2, lse}, {"dq", dqd, dq}, {"dk", dkd, dk}, {"dv", dvd, dv}} {
			got, want := fromDev(t, c.name+" "+x.name, x.dev, onDev).Data(), x.host.Data()
			for i := range want {
				w, g := float64(want[i]), float64(got[i])
				if !(g == w || math.Abs(g-w) <= 1e-5*(1+math.Abs(w))) {
					t.Errorf("%s: %s[%d] = %v on the device, %v on the host", c.name, x.name, i, g, w)
					break
				}
			}
		}
	}
	q := RandN(r, 1, 1, 2, 3)
	panics(t, "tensor: ScaledDotProductAttention: [1 1 2 3] on device(7) and [1 1 2 3] on cpu and [1 1 2 3] on device(7): operands on device(7) and cpu; copy them to one device with To",
		func() { ScaledDotProductAttention(toDev(t, q, onDev), q, toDev(t, q, onDev), AttentionParams{}) })
}
