package nn

import (
	"fmt"
	"strings"
)

// LoadState copies the tensors of ts into m's parameters and buffers by
// name. Every name of m must be present with the same number of elements
// and shape; names m does not have are an error too, except PyTorch's
// BatchNorm "num_batches_tracked" counters, which lanes does not keep.
// Nothing is copied unless everything matches.
func LoadState(m Module, ts []Named) error {
	byName := make(map[string]Named, len(ts))
	for _, t := range ts {
		byName[t.Name] = t
	}
	var problems []string
	var pairs [][2]*Named
	seen := make(map[string]bool)
	m.State("", func(name string, v *Var) {
		seen[name] = true
		t, ok := byName[name]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("missing %q", name))
		case !sameShapeAs(t.T, v.value):
			problems = append(problems, fmt.Sprintf("%q has shape %v, the model %v", name, t.T.Shape(), v.value.Shape()))
		default:
			pairs = append(pairs, [2]*Named{{Name: name, T: v.value}, &t})
		}
	})
	for _, t := range ts {
		if !seen[t.Name] && !strings.HasSuffix(t.Name, "num_batches_tracked") {
			problems = append(problems, fmt.Sprintf("unexpected %q", t.Name))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("nn: LoadState: %s", strings.Join(problems, "; "))
	}
	for _, p := range pairs {
		copy(p[0].T.Data(), p[1].T.Data())
	}
	return nil
}

// Save writes m's parameters and buffers to path in the safetensors
// format, under their state_dict names, with optional metadata.
func Save(path string, m Module, metadata map[string]string) error {
	return SaveSafetensors(path, StateDict(m), metadata)
}

// Load reads a safetensors file into m's parameters and buffers (see
// LoadState) and returns the file's metadata.
func Load(path string, m Module) (map[string]string, error) {
	ts, meta, err := LoadSafetensors(path)
	if err != nil {
		return nil, err
	}
	if err := LoadState(m, ts); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return meta, nil
}
