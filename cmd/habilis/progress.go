package main

import (
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/habilis-router/habilis/selector"
	"github.com/schollz/progressbar/v3"
)

// progressDelay is how long work runs before a bar appears, so that quick
// commands stay quiet; progressLogEvery is how often progress is logged
// when stderr is no terminal.
const (
	progressDelay    = 500 * time.Millisecond
	progressLogEvery = 5 * time.Second
)

// progress shows how far a long operation has come, on stderr only, so
// that --json output on stdout stays clean. On a terminal it draws a bar a
// step (github.com/schollz/progressbar: one bar at a time, with counts,
// rate and time left, drawn on any writer, and a spinner for steps that
// have no count) once the work has run progressDelay. Elsewhere it logs
// the step and its count at info level every progressLogEvery, so that a
// log shows a long load is alive without filling up. It is safe for
// concurrent use; calls after finish do nothing.
type progress struct {
	w        io.Writer
	tty      bool
	logger   *slog.Logger
	label    string // the operation: load, eval, ...
	logEvery time.Duration
	delay    time.Duration // before a bar is drawn
	start    time.Time

	mu          sync.Mutex
	step        string
	stepStart   time.Time
	done, total int
	bar         *progressbar.ProgressBar
	ticker      *time.Ticker
	stop        chan struct{}
	finished    bool
}

// newProgress returns a progress for the operation label on stderr.
func (g *globalOptions) newProgress(label string) *progress {
	logger := g.logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	delay := g.barDelay
	if delay == 0 {
		delay = progressDelay
	}
	return &progress{w: g.stderr, tty: g.tty, logger: logger, label: label, logEvery: progressLogEvery, delay: delay, start: time.Now()}
}

// update records done of total units of the operation's one step.
func (p *progress) update(done, total int) { p.set(p.label, done, total) }

// selectorStep is a selector.Config.Progress: the steps of opening a
// router and of a write.
func (p *progress) selectorStep(s selector.Step, done, total int) { p.set(string(s), done, total) }

// set records that step has reached done of total (0 of 0: not counted).
func (p *progress) set(step string, done, total int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finished {
		return
	}
	now := time.Now()
	if step != p.step {
		p.endBar()
		p.step, p.stepStart = step, now
	}
	p.done, p.total = done, total
	if p.stop == nil {
		p.run()
	}
	if p.bar != nil {
		if p.total > 0 && p.bar.GetMax() != p.total {
			p.bar.ChangeMax(p.total)
		}
		p.bar.Set(p.done)
	} else if p.tty && now.Sub(p.start) >= p.delay {
		p.newBar()
	}
}

// run starts the goroutine that draws the first bar of a step that gives
// no count (a terminal) or logs (otherwise).
func (p *progress) run() {
	every := p.logEvery
	if p.tty {
		every = progressDelay / 5
	}
	p.ticker = time.NewTicker(every)
	p.stop = make(chan struct{})
	go func(tick <-chan time.Time, stop <-chan struct{}) {
		for {
			select {
			case <-stop:
				return
			case <-tick:
				p.tick()
			}
		}
	}(p.ticker.C, p.stop)
}

func (p *progress) tick() {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.finished || p.step == "":
	case p.tty:
		if p.bar == nil && time.Since(p.start) >= p.delay {
			p.newBar()
		}
	default:
		p.logger.Info(p.label+": "+p.step, p.attrs()...)
	}
}

// attrs describe where the current step is, for a log line.
func (p *progress) attrs() []any {
	attrs := []any{"elapsed", time.Since(p.stepStart).Round(time.Second)}
	if p.total > 0 {
		attrs = append(attrs, "done", p.done, "total", p.total)
	}
	return attrs
}

// newBar draws the current step's bar: a count when it has one, else a
// spinner.
func (p *progress) newBar() {
	opts := []progressbar.Option{
		progressbar.OptionSetWriter(p.w),
		progressbar.OptionSetDescription(p.step),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100 * time.Millisecond),
		progressbar.OptionSetElapsedTime(true),
	}
	max := p.total
	if max > 0 {
		opts = append(opts, progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true))
	} else {
		max = -1
	}
	p.bar = progressbar.NewOptions(max, opts...)
	if p.total > 0 {
		p.bar.Set(p.done)
	} else {
		p.bar.RenderBlank()
	}
}

// endBar leaves the current step's bar complete on its own line.
func (p *progress) endBar() {
	if p.bar == nil {
		return
	}
	p.bar.Finish()
	fmt.Fprintln(p.w)
	p.bar = nil
}

// finish ends the bar and stops logging; the operation is over.
func (p *progress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finished {
		return
	}
	p.finished = true
	p.endBar()
	if p.stop != nil {
		p.ticker.Stop()
		close(p.stop)
	}
	if !p.tty && time.Since(p.start) >= p.logEvery {
		p.logger.Info(p.label+": done", "elapsed", time.Since(p.start).Round(time.Millisecond))
	}
}
