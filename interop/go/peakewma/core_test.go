package peakewma

import (
	"encoding/json"
	"math"
	"math/rand"
	"testing"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/balancer/base"
	"google.golang.org/grpc/resolver"
)

func TestConfigDefaultsClampsAndErrors(t *testing.T) {
	c, err := ParseConfig(nil)
	if err != nil || c != DefaultConfig {
		t.Fatalf("nil: %+v %v", c, err)
	}
	c, err = ParseConfig([]byte(`{"choiceCount": 50, "decayTime": "1.5s", "defaultRtt": "0.001s", "futureField": 1}`))
	if err != nil || c != (Config{10, 1500e6, 1e6}) {
		t.Fatalf("clamp, durations, unknown field ignored: %+v %v", c, err)
	}
	for in, field := range map[string]string{
		`{"choiceCount": 1}`: "choiceCount", `{"choiceCount": 2.5}`: "choiceCount",
		`{"decayTime": "0s"}`: "decayTime", `{"defaultRtt": "-1s"}`: "defaultRtt",
		`{"decayTime": 10}`: "decayTime", `[]`: "",
	} {
		_, err := ParseConfig([]byte(in))
		if ce, ok := err.(*ConfigError); !ok || ce.Field != field {
			t.Errorf("%s: %v, want an error naming %q", in, err, field)
		}
	}
	if FormatDuration(30e6) != "0.03s" || FormatDuration(10e9) != "10s" {
		t.Errorf("FormatDuration")
	}
	// Through grpc-go: the registered builder parses, and an invalid config is an error.
	p := balancer.Get(Name).(balancer.ConfigParser)
	if _, err := p.ParseConfig(json.RawMessage(`{"choiceCount": 1}`)); err == nil {
		t.Errorf("grpc-go's parser accepted choiceCount 1")
	}
}

func TestIdleConstantsScaleWithDecayTime(t *testing.T) {
	for _, c := range []struct {
		decay       int64
		picks, maxT float64
	}{{10e9, 5000, 60e9}, {1e9, 500, 6e9}, {1250e6, 625, 7.5e9}, {1e6, 1, 6e6}} {
		ctx := NewContext(Config{2, c.decay, 30e6}, Chosen)
		if ctx.idlePicks != c.picks || ctx.idleMaxTime != c.maxT {
			t.Errorf("decayTime %d: idlePicks %v idleMaxTime %v", c.decay, ctx.idlePicks, ctx.idleMaxTime)
		}
	}
}

func TestFirstSamplePeakOnlyOutOfAStallAndFailuresHold(t *testing.T) {
	ctx := NewContext(DefaultConfig, Chosen)
	l := NewLoad(ctx, 0)
	if l.Cost(0, ctx) != 0 {
		t.Fatal("an unsampled endpoint costs 0")
	}
	l.Started(0)
	if got := l.Cost(5e6, ctx); got != 5e6*2 {
		t.Fatalf("stall-aware cost: %v", got)
	}
	l.Ended(5e6, 5e6, true, false, ctx)
	if l.Estimate != 5e6 || l.Errors != 0 {
		t.Fatalf("the first answer sets the estimate: %+v", l)
	}
	// Two calls in flight; the first answers fast, the second slowly: not quiet, so it blends.
	l.Started(6e6)
	l.Started(6e6)
	l.Ended(7e6, 1e6, true, false, ctx)
	l.Ended(26e6, 20e6, true, false, ctx)
	if l.Estimate >= 20e6 {
		t.Fatalf("a slow answer while the endpoint kept answering should blend: %v", l.Estimate)
	}
	// A slow answer out of a stall is the new peak.
	l.Started(30e6)
	l.Ended(80e6, 50e6, true, false, ctx)
	if l.Estimate != 50e6 {
		t.Fatalf("peak: %v", l.Estimate)
	}
	// A fast failure never lowers it, and raises the share of failures by at least a tenth.
	l.Started(81e6)
	l.Ended(82e6, 1e6, true, true, ctx)
	if l.Estimate != 50e6 || math.Abs(l.Errors-0.1) > 1e-9 {
		t.Fatalf("failure: %+v", l)
	}
	// A cancelled call is no sample.
	before := *l
	l.Started(90e6)
	l.Ended(91e6, 1e6, false, true, ctx)
	if l.Estimate != before.Estimate || l.Errors != before.Errors || l.Outstanding != 0 {
		t.Fatalf("cancelled: %+v", l)
	}
}

type fixed []int

func (f *fixed) Intn(n int) int { i := (*f)[0]; *f = (*f)[1:]; return i }

func TestPickDistinctDrawsCheapestAndTies(t *testing.T) {
	ctx := NewContext(Config{3, 10e9, 30e6}, Chosen)
	loads := []*Load{NewLoad(ctx, 0), NewLoad(ctx, 0), NewLoad(ctx, 0), NewLoad(ctx, 0)}
	loads[1].Started(0)
	draws := fixed{1, 1, 3, 1, 2} // the repeats are redrawn
	if i := Pick(loads, 1, ctx, &draws); i != 3 || len(draws) != 0 || ctx.Picks != 1 {
		t.Fatalf("pick %d, left %v, picks %d", i, draws, ctx.Picks)
	}
	one := fixed{}
	if i := Pick(loads[:1], 1, ctx, &one); i != 0 || ctx.Picks != 2 {
		t.Fatalf("one READY endpoint: %d", i)
	}
	if Pick(nil, 1, ctx, &one) != -1 {
		t.Fatal("nothing READY")
	}
}

// The picker over grpc-go's types: a fresh load on READY, kept across rebuilds; streams not
// counted (see StreamInterceptor); a Done with nothing sent is no sample.
type fakeSC struct{ balancer.SubConn }

func TestPickerKeepsLoadsAcrossRebuilds(t *testing.T) {
	s := &shared{ctx: NewContext(DefaultConfig, Chosen), loads: map[balancer.SubConn]*Load{}, rng: rand.New(rand.NewSource(1))}
	a, b := &fakeSC{}, &fakeSC{}
	info := base.PickerBuildInfo{ReadySCs: map[balancer.SubConn]base.SubConnInfo{
		a: {Address: resolver.Address{Addr: "a"}}, b: {Address: resolver.Address{Addr: "b"}},
	}}
	p := s.Build(info).(*picker)
	r, err := p.Pick(balancer.PickInfo{})
	if err != nil || r.Done == nil {
		t.Fatalf("pick: %v", err)
	}
	r.Done(balancer.DoneInfo{}) // grpc-go's "transport not ready, pick again"
	la := s.loads[a]
	for _, l := range p.loads {
		if l.Sampled || l.Outstanding != 0 {
			t.Fatalf("an unsent call counted: %+v", l)
		}
	}
	r, _ = p.Pick(balancer.PickInfo{})
	r.Done(balancer.DoneInfo{BytesSent: true, BytesReceived: true})
	sampled := 0
	for _, l := range p.loads {
		if l.Sampled {
			sampled++
		}
	}
	if sampled != 1 {
		t.Fatalf("one sample, got %d", sampled)
	}
	// b leaves READY and comes back: a keeps its load, b gets a fresh one.
	s.Build(base.PickerBuildInfo{ReadySCs: map[balancer.SubConn]base.SubConnInfo{a: info.ReadySCs[a]}})
	lb := s.loads[b]
	s.Build(info)
	if s.loads[a] != la || lb != nil || s.loads[b] == nil || s.loads[b].Sampled {
		t.Fatalf("loads across rebuilds: %+v", s.loads)
	}
	if _, err := s.Build(base.PickerBuildInfo{}).Pick(balancer.PickInfo{}); err != balancer.ErrNoSubConnAvailable {
		t.Fatalf("nothing READY should queue: %v", err)
	}
}

// The cost of one pick and its Done through the picker (one mutex per balancer), serial and
// from parallel goroutines: `go test -bench . -run XXX`.
func benchPicker(n int) *picker {
	s := &shared{ctx: NewContext(DefaultConfig, Chosen), loads: map[balancer.SubConn]*Load{}, rng: rand.New(rand.NewSource(1))}
	info := base.PickerBuildInfo{ReadySCs: map[balancer.SubConn]base.SubConnInfo{}}
	for i := 0; i < n; i++ {
		info.ReadySCs[&fakeSC{}] = base.SubConnInfo{Address: resolver.Address{Addr: string(rune('a' + i))}}
	}
	return s.Build(info).(*picker)
}

func BenchmarkPickAndDone(b *testing.B) {
	p := benchPicker(10)
	done := balancer.DoneInfo{BytesSent: true, BytesReceived: true}
	for i := 0; i < b.N; i++ {
		r, _ := p.Pick(balancer.PickInfo{})
		r.Done(done)
	}
}

func BenchmarkPickAndDoneParallel(b *testing.B) {
	p := benchPicker(10)
	done := balancer.DoneInfo{BytesSent: true, BytesReceived: true}
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r, _ := p.Pick(balancer.PickInfo{})
			r.Done(done)
		}
	})
}
