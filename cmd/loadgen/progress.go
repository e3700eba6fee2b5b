package main

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Progress shows a run's live counters on w until stop is closed: on a terminal one line
// redrawn in place with a bar, otherwise a plain line every `every`. It returns after its last
// line, so the caller can wait for it before printing the summary.
type Progress struct {
	W        io.Writer
	TTY      bool
	Every    time.Duration // plain lines; the terminal line redraws 4 times a second
	Duration time.Duration // for the bar: the run's length, or
	Batches  int64         // its request count (0 and 0: no bar)
}

func (p Progress) Run(live *Live, stop <-chan struct{}) {
	every := p.Every
	if p.TTY {
		every = 250 * time.Millisecond
	}
	if every <= 0 {
		every = 5 * time.Second
	}
	start := time.Now()
	tick := time.NewTicker(every)
	defer tick.Stop()
	var lastEvents, lastItems int64
	lastAt := start
	for {
		select {
		case <-stop:
			if p.TTY {
				p.line(live, time.Since(start), 0, 0, true)
				fmt.Fprintln(p.W)
			}
			return
		case now := <-tick.C:
			events, items := live.Events.Load(), live.Items.Load()
			sec := now.Sub(lastAt).Seconds()
			p.line(live, now.Sub(start), float64(events-lastEvents)/sec, float64(items-lastItems)/sec, false)
			lastEvents, lastItems, lastAt = events, items, now
		}
	}
}

// line writes one progress line with the recent rates; the final line shows the run's means.
func (p Progress) line(live *Live, el time.Duration, evRate, itemRate float64, final bool) {
	req, events, items := live.Requests.Load(), live.Events.Load(), live.Items.Load()
	errs, retries := live.Errors.Load(), live.Retries.Load()
	if final {
		sec := max(el.Seconds(), 1e-9)
		evRate, itemRate = float64(events)/sec, float64(items)/sec
	}
	stats := fmt.Sprintf("%6.1fs  %d req  %.0f events/s  %.0f items/s  %d retries  %d errors",
		el.Seconds(), req, evRate, itemRate, retries, errs)
	if !p.TTY {
		fmt.Fprintln(p.W, "loadgen:", stats)
		return
	}
	frac := -1.0
	switch {
	case p.Batches > 0:
		frac = float64(live.Started.Load()) / float64(p.Batches)
	case p.Duration > 0:
		frac = el.Seconds() / p.Duration.Seconds()
	}
	bar := ""
	if frac >= 0 {
		const width = 24
		frac = min(frac, 1)
		n := int(frac * width)
		bar = "[" + strings.Repeat("=", n) + strings.Repeat(" ", width-n) + fmt.Sprintf("] %3.0f%% ", frac*100)
	}
	// \r returns to the line start, \x1b[K clears what a longer previous line left.
	fmt.Fprintf(p.W, "\r%s%s\x1b[K", bar, stats)
}
