// Package progress draws the progress bar of the nn commands (fashion,
// chargpt) on a terminal, and nothing when the output is not one.
package progress

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// Bar is a one-line bar of done out of total steps followed by a status,
// redrawn in place with a carriage return.
type Bar struct {
	f     *os.File
	total int
	on    bool
	last  time.Time
}

// New returns a bar of total steps drawn on f when f is a terminal; on
// anything else its methods do nothing.
func New(f *os.File, total int) *Bar {
	st, err := f.Stat()
	return &Bar{f: f, total: max(total, 1), on: err == nil && st.Mode()&os.ModeCharDevice != 0}
}

// Due reports whether the bar draws after done steps: on a terminal, at
// most ten times a second and at the end.
func (p *Bar) Due(done int) bool {
	return p.on && (done >= p.total || time.Since(p.last) >= 100*time.Millisecond)
}

// Quiet turns the bar off (in a distributed run, on every rank but 0).
func (p *Bar) Quiet() { p.on = false }

// SetTotal changes the number of steps the bar counts to.
func (p *Bar) SetTotal(total int) { p.total = max(total, 1) }

// Update draws the bar at done steps with status after it.
func (p *Bar) Update(done int, status string) {
	p.last = time.Now()
	const width = 30
	n := min(width*done/p.total, width)
	fmt.Fprintf(p.f, "\r[%s%s] %3d%% %d/%d %s", strings.Repeat("=", n), strings.Repeat(" ", width-n), 100*done/p.total, done, p.total, status)
}

// Done erases the bar (to print a line in its place).
func (p *Bar) Done() {
	if p.on {
		fmt.Fprint(p.f, "\r\033[K")
	}
}
