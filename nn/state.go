package nn

import (
	"fmt"
	"strings"
)

// stateOf returns m's parameters and buffers by name, in State order,
// sharing their storage, and panics, naming fn, when m is nil or gives a
// nil Var.
func stateOf(fn string, m Module) []Named {
	if m == nil {
		panic(fmt.Sprintf("nn: %s: nil module", fn))
	}
	var ts []Named
	m.State("", func(name string, v *Var) {
		if v == nil || v.value == nil {
			panic(fmt.Sprintf("nn: %s: the module's %q is a nil Var", fn, name))
		}
		ts = append(ts, Named{Name: name, T: v.value, DType: "F32"})
	})
	return ts
}

// LoadState copies the tensors of ts into m's parameters and buffers by
// name. Every name of m must be present with the same number of elements
// and shape; names m does not have are an error too, except PyTorch's
// BatchNorm "num_batches_tracked" counters, which lanes does not keep, as
// is a nil tensor in ts. Nothing is copied unless everything matches.
// LoadState panics when m is nil or gives a nil Var.
func LoadState(m Module, ts []Named) error {
	copies, err := planLoadState("LoadState", m, ts)
	if err != nil {
		return err
	}
	copies()
	return nil
}

// planLoadState checks ts against m as LoadState and returns the function
// that copies them.
func planLoadState(fn string, m Module, ts []Named) (func(), error) {
	mine := stateOf(fn, m)
	byName := make(map[string]Named, len(ts))
	var problems []string
	for _, t := range ts {
		if t.T == nil {
			problems = append(problems, fmt.Sprintf("tensor %q is nil", t.Name))
			continue
		}
		byName[t.Name] = t
	}
	var pairs [][2]*Named
	seen := make(map[string]bool, len(mine))
	for i, v := range mine {
		seen[v.Name] = true
		t, ok := byName[v.Name]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("missing %q", v.Name))
		case !sameShapeAs(t.T, v.T):
			problems = append(problems, fmt.Sprintf("%q has shape %v, the model %v", v.Name, t.T.Shape(), v.T.Shape()))
		default:
			pairs = append(pairs, [2]*Named{&mine[i], &t})
		}
	}
	for _, t := range ts {
		if t.T != nil && !seen[t.Name] && !strings.HasSuffix(t.Name, "num_batches_tracked") {
			problems = append(problems, fmt.Sprintf("unexpected %q", t.Name))
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("nn: %s: %s", fn, strings.Join(problems, "; "))
	}
	return func() {
		for _, p := range pairs {
			copy(p[0].T.Data(), p[1].T.Data())
		}
	}, nil
}

// Save writes m's parameters and buffers to path in the safetensors
// format, under their state_dict names, with optional metadata. It
// replaces the file atomically, as SaveSafetensors: a failed or
// interrupted Save leaves the previous file whole. Save panics when m is
// nil or gives a nil Var.
func Save(path string, m Module, metadata map[string]string) error {
	return SaveSafetensors(path, stateOf("Save", m), metadata)
}

// Load reads a safetensors file into m's parameters and buffers (see
// LoadState) and returns the file's metadata. Load panics when m is nil or
// gives a nil Var.
func Load(path string, m Module) (map[string]string, error) {
	if m == nil {
		panic("nn: Load: nil module")
	}
	ts, meta, err := LoadSafetensors(path)
	if err != nil {
		return nil, err
	}
	if err := LoadState(m, ts); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return meta, nil
}
