package nn

import (
	"fmt"
	"math"
)

// ParamGroup is a set of an optimizer's parameters with their own
// learning rate and weight decay, PyTorch's parameter groups
// (optim.X([{"params": ..., "lr": ..., "weight_decay": ...}, ...])).
//
// The group's learning rate is the optimizer's (LR, SetLR) times LRScale,
// rounded to float32, so that a schedule applied with SetLR scales every
// group alike, as PyTorch's schedulers scale each group's initial rate
// (the same for every schedule linear in its base rate: StepLR, CosineLR
// with Min 0, LinearLR, OneCycle). LRScale 0 means 1. The group's weight
// decay is WeightDecay when OwnDecay is set, else the optimizer's
// WeightDecay field.
type ParamGroup struct {
	Params      []*Var
	LRScale     float32
	WeightDecay float32
	OwnDecay    bool
}

// paramGroup is a ParamGroup inside an optimizer: its n parameters follow
// those of the groups before it in the optimizer's list.
type paramGroup struct {
	n           int
	lrScale     float32
	weightDecay float32
	ownDecay    bool
}

// SetGroups splits the optimizer's parameters into groups with their own
// learning rates and weight decays (see ParamGroup). The groups' Params,
// one after the other, must be the optimizer's parameters in their order
// (the list the optimizer was made with); it panics, naming the group and
// the parameter, when they are not, and for a negative or NaN LRScale or
// a NaN WeightDecay. The groups are kept by SaveCheckpoint, and
// LoadCheckpoint requires the same group sizes (and takes the file's
// scales and decays, as PyTorch's load_state_dict takes its groups'
// hyperparameters). SetGroups with no group makes one group of all.
func (o *optBase) SetGroups(groups ...ParamGroup) {
	const fn = "nn: SetGroups"
	var gs []paramGroup
	at := 0
	for k, g := range groups {
		if !(g.LRScale >= 0) || math.IsInf(float64(g.LRScale), 0) {
			panic(fmt.Sprintf("%s: group %d: LRScale %v (want finite and >= 0)", fn, k, g.LRScale))
		}
		if g.WeightDecay != g.WeightDecay {
			panic(fmt.Sprintf("%s: group %d: WeightDecay NaN", fn, k))
		}
		for j, v := range g.Params {
			if at >= len(o.params) {
				panic(fmt.Sprintf("%s: group %d: parameter %d is beyond the optimizer's %d parameters", fn, k, j, len(o.params)))
			}
			if v != o.params[at] {
				panic(fmt.Sprintf("%s: group %d: parameter %d is not the optimizer's parameter %d (the groups must list the optimizer's parameters in order)", fn, k, j, at))
			}
			at++
		}
		gs = append(gs, paramGroup{n: len(g.Params), lrScale: g.LRScale, weightDecay: g.WeightDecay, ownDecay: g.OwnDecay})
	}
	if len(groups) > 0 && at != len(o.params) {
		panic(fmt.Sprintf("%s: the groups hold %d parameters, the optimizer %d", fn, at, len(o.params)))
	}
	o.groups = gs
}

// eachGroup calls step for each parameter group: the group's parameters
// are lo..hi of the optimizer's, its learning rate lr and weight decay wd
// (the optimizer's wd unless the group has its own).
func (o *optBase) eachGroup(wd float32, step func(lo, hi int, lr, wd float32)) {
	if len(o.groups) == 0 {
		step(0, len(o.params), o.lr, wd)
		return
	}
	lo := 0
	for _, g := range o.groups {
		lr, gwd := o.lr, wd
		if g.lrScale != 0 {
			lr = o.lr * g.lrScale
		}
		if g.ownDecay {
			gwd = g.weightDecay
		}
		step(lo, lo+g.n, lr, gwd)
		lo += g.n
	}
}

// groupState is a parameter group in a checkpoint.
type groupState struct {
	Params      int  `json:"params"`
	LRScale     jf32 `json:"lr_scale"`
	WeightDecay jf32 `json:"weight_decay"`
	OwnDecay    bool `json:"own_decay"`
}

// groupStates returns o's groups for a checkpoint (nil for one group).
func (o *optBase) groupStates() []groupState {
	var gs []groupState
	for _, g := range o.groups {
		gs = append(gs, groupState{Params: g.n, LRScale: jf32(g.lrScale), WeightDecay: jf32(g.weightDecay), OwnDecay: g.ownDecay})
	}
	return gs
}

// groupSizes returns the sizes of a checkpoint's groups: gs's, or one
// group of all n parameters when gs is empty.
func groupSizes(gs []groupState, n int) []int {
	if len(gs) == 0 {
		return []int{n}
	}
	sizes := make([]int, len(gs))
	for k, g := range gs {
		sizes[k] = g.Params
	}
	return sizes
}

// restoreGroups sets o's groups from a checkpoint's (of the same sizes).
func (o *optBase) restoreGroups(gs []groupState) {
	o.groups = o.groups[:0]
	for _, g := range gs {
		o.groups = append(o.groups, paramGroup{n: g.Params, lrScale: float32(g.LRScale), weightDecay: float32(g.WeightDecay), ownDecay: g.OwnDecay})
	}
}
