package peakewma

// The algorithm of peak_ewma_experimental, free of grpc-go: the peak EWMA of one endpoint, its
// cost, and the pick among explicit candidates at explicit times. Time is int64 nanoseconds from
// an arbitrary origin; estimates and costs are float64 nanoseconds. The semantics are lblab's
// default (docs/design.md, "Round three", "The decision"), copied from the grpc-js port
// (interop/node/peak_ewma_core.js); the proposal as first written is kept as FirstWritten for
// the conformance vectors that pin it:
//
//	per endpoint: e (estimate), f (share of failed calls), sampled, t (time of the last sample),
//	  k (the policy's pick count then), p (its last progress), outstanding
//	on READY:     e = 0, f = 0, sampled = false, t = p = now, k = K, outstanding = 0
//	w(now)      = min(max(exp(-(now-t)/decayTime), exp(-(K-k)/idlePicks)),
//	                  exp(-(now-t)/max(idleMaxTime, decayTime)))
//	cost(now)   = max(e*w(now)/(1-min(f, 0.999)), outstanding > 0 ? now-p : 0) * (outstanding+1)
//	pick:         choiceCount distinct READY draws, the lowest cost, the earlier draw on a tie;
//	              K += 1; outstanding += 1 (if it was 0: p = max(p, now))
//	done(rtt,ok): outstanding -= 1; if cancelled: nothing else
//	              quiet = p <= now-rtt; p = max(p, now)
//	              if !sampled: e = rtt, f = ok ? 0 : 1
//	              else: v = min(w, 1-1/errorSamples); f = f*v + (1-v)*(ok ? 0 : 1)
//	                    !ok: e = max(e, rtt); rtt > e*w and quiet: e = rtt; else e = e*w + (1-w)*rtt
//	              sampled = true, t = now, k = K
//
// idlePicks is 500 × decayTime in seconds and idleMaxTime 6 × decayTime (5000 and 60 s at the
// default decayTime of 10 s) unless a Semantics overrides them.

import "math"

// Semantics selects the variant of the algorithm (lblab's lab-only `lblabAblation`; a grpc-go
// user only ever gets Chosen).
type Semantics struct {
	Initial      string  // "zero" (Chosen) or "prior" (FirstWritten: the estimate starts at defaultRtt)
	Idle         string  // "pick_clock" (Chosen) or "to_zero" (the wall clock only)
	IdlePicks    float64 // 0: 500 × decayTime in seconds, rounded, at least 1
	IdleMaxTime  int64   // ns; -1: 6 × decayTime; 0: no wall-clock bound
	ErrorPenalty float64 // 1 (Chosen): the cost's factor 1 + p·f/(1−f)
	Failures     string  // "hold" (Chosen), "sample" or "ignore"
	ErrorSamples int     // 10 (Chosen): each answer weighs at least 1/errorSamples in f
	Peak         string  // "stalled" (Chosen) or "jump"
	Stall        bool    // the stall-aware cost (Chosen)
}

// Chosen is lblab's default since its design search's third round.
var Chosen = Semantics{Initial: "zero", Idle: "pick_clock", IdleMaxTime: -1, ErrorPenalty: 1,
	Failures: "hold", ErrorSamples: 10, Peak: "stalled", Stall: true}

// FirstWritten is the proposal as first written: the defaultRtt prior, decay to 0 on the wall
// clock, any slow answer a peak, failures samples like any other.
var FirstWritten = Semantics{Initial: "prior", Idle: "to_zero", IdleMaxTime: 0, Failures: "sample",
	Peak: "jump"}

// Context is what one balancer shares among its endpoints: the config, the semantics (with
// idlePicks and idleMaxTime resolved) and the pick clock. Not safe for concurrent use: the
// grpc-go shell holds a mutex around every call into the core.
type Context struct {
	Config      Config
	Sem         Semantics
	Picks       uint64
	idlePicks   float64
	idleMaxTime float64 // ns, 0: none
}

// NewContext resolves the semantics' defaults against the config.
func NewContext(c Config, s Semantics) *Context {
	ctx := &Context{Config: c, Sem: s}
	ctx.SetConfig(c)
	return ctx
}

// SetConfig replaces the config (a service config update); the pick count stays.
func (ctx *Context) SetConfig(c Config) {
	ctx.Config = c
	tau := float64(c.DecayTime)
	ctx.idlePicks = ctx.Sem.IdlePicks
	if ctx.idlePicks <= 0 {
		// 500 picks per second of decayTime, a whole number and at least 1 (as lblab).
		ctx.idlePicks = math.Max(1, math.Round(500*tau/1e9))
	}
	switch {
	case ctx.Sem.IdleMaxTime < 0:
		ctx.idleMaxTime = 6 * tau
	default:
		ctx.idleMaxTime = float64(ctx.Sem.IdleMaxTime)
	}
}

// Load is one endpoint's state: a new one on every transition to READY.
type Load struct {
	Estimate    float64
	Errors      float64
	Stamp       int64
	Sampled     bool
	PicksAt     uint64
	Outstanding int
	Progress    int64
}

// NewLoad is an endpoint's state at `now`, when it becomes READY.
func NewLoad(ctx *Context, now int64) *Load {
	l := &Load{Stamp: now, PicksAt: ctx.Picks, Progress: now}
	if ctx.Sem.Initial == "prior" {
		l.Estimate = float64(ctx.Config.DefaultRtt)
	}
	return l
}

// weight is w(now); a clock behind the stamp counts as no time passed.
func (l *Load) weight(now int64, ctx *Context) float64 {
	dt := math.Max(0, float64(now-l.Stamp))
	tau := float64(ctx.Config.DecayTime)
	wall := math.Exp(-dt / tau)
	if ctx.Sem.Idle != "pick_clock" {
		return wall
	}
	picks := 0.0
	if ctx.Picks > l.PicksAt {
		picks = float64(ctx.Picks - l.PicksAt)
	}
	w := math.Max(wall, math.Exp(-picks/ctx.idlePicks))
	if ctx.idleMaxTime == 0 {
		return w
	}
	return math.Min(w, math.Exp(-dt/math.Max(ctx.idleMaxTime, tau)))
}

// Cost is the endpoint's cost at `now`; reading it changes nothing.
func (l *Load) Cost(now int64, ctx *Context) float64 {
	e := l.Estimate * l.weight(now, ctx)
	if p := ctx.Sem.ErrorPenalty; p != 0 {
		f := math.Min(l.Errors, 0.999)
		e *= 1 + p*f/(1-f)
	}
	if ctx.Sem.Stall && l.Outstanding > 0 {
		// A pending call's age is a lower bound on its RTT: a stall is seen while it happens.
		e = math.Max(e, math.Max(0, float64(now-l.Progress)))
	}
	return e * float64(l.Outstanding+1)
}

// Decayed is Cost / (outstanding + 1): the estimate as the cost reads it.
func (l *Load) Decayed(now int64, ctx *Context) float64 {
	return l.Cost(now, ctx) / float64(l.Outstanding+1)
}

// Started: a call picked this endpoint at `now`; one that makes it busy is progress.
func (l *Load) Started(now int64) {
	if l.Outstanding == 0 && now > l.Progress {
		l.Progress = now
	}
	l.Outstanding++
}

// Ended: a call started here ended at `now` after `elapsed` ns. `sample` false (cancelled by the
// client, or never sent) only takes it off the outstanding calls; `failed`: not OK.
func (l *Load) Ended(now, elapsed int64, sample, failed bool, ctx *Context) {
	if l.Outstanding > 0 {
		l.Outstanding--
	}
	if !sample {
		return
	}
	quiet := l.Progress <= now-elapsed
	if now > l.Progress {
		l.Progress = now
	}
	rtt := float64(elapsed)
	failure := 0.0
	if failed {
		failure = 1
	}
	if !l.Sampled && ctx.Sem.Initial != "prior" {
		l.Estimate, l.Errors = rtt, failure
	} else {
		w := l.weight(now, ctx)
		decayed := l.Estimate * w
		we := w
		if n := ctx.Sem.ErrorSamples; n > 0 {
			we = math.Min(w, 1-1/float64(n))
		}
		l.Errors = l.Errors*we + (1-we)*failure
		switch {
		case failed && ctx.Sem.Failures == "ignore":
			l.Estimate = decayed
		case failed && ctx.Sem.Failures == "hold":
			l.Estimate = math.Max(l.Estimate, rtt)
		case rtt > decayed && (ctx.Sem.Peak != "stalled" || quiet):
			l.Estimate = rtt
		default:
			l.Estimate = decayed + (1-w)*rtt
		}
	}
	if now > l.Stamp {
		l.Stamp = now
	}
	l.Sampled = true
	l.PicksAt = ctx.Picks
}

// Rand draws an index in [0, n).
type Rand interface{ Intn(n int) int }

// Pick draws min(choiceCount, len(ready)) distinct indices by rejection sampling (one READY
// endpoint: no draw), keeps the cheapest at `now` (strict <: the earlier draw wins a tie) and
// counts the pick. Returns -1 when nothing is READY. It does not start the call (Started).
func Pick(ready []*Load, now int64, ctx *Context, rng Rand) int {
	n := len(ready)
	if n == 0 {
		return -1
	}
	// Every pick counts on the pick clock, after the costs are read.
	defer func() { ctx.Picks++ }()
	if n == 1 {
		return 0
	}
	d := ctx.Config.ChoiceCount
	if d > n {
		d = n
	}
	var drawn [MaxChoices]int
	best, bestCost := -1, math.Inf(1)
	for k := 0; k < d; {
		i := rng.Intn(n)
		dup := false
		for _, j := range drawn[:k] {
			dup = dup || j == i
		}
		if dup {
			continue
		}
		drawn[k] = i
		k++
		if c := ready[i].Cost(now, ctx); best < 0 || c < bestCost {
			best, bestCost = i, c
		}
	}
	return best
}
