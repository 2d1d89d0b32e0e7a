package peakewma

// The grpc-go 1.33 plumbing around core.go: a balancer.Builder registered as
// `peak_ewma_experimental` (balancer.Register, in init), its config parsed through
// balancer.ConfigParser, and a balancer.Picker whose PickResult.Done takes the RTT sample.
//
// grpc-go 1.33 has no endpoints (resolver.Address only) and no child policy per address: the
// balancer is grpc-go's base balancer (balancer/base), which makes one SubConn per resolved
// address, connects it, reconnects it when IDLE, aggregates the states (READY if any is READY,
// else CONNECTING if any is, else TRANSIENT_FAILURE) and calls a PickerBuilder with the READY
// SubConns whenever one enters or leaves READY. The builder below keeps one Load per READY
// SubConn across those rebuilds, and gives a SubConn that was not READY at the previous build a
// fresh one (the reset on READY). With nothing READY the base balancer asks for a picker with no
// SubConns while something is CONNECTING (this picker queues the RPC) and installs its own
// error picker in TRANSIENT_FAILURE (the RPC fails with UNAVAILABLE unless wait-for-ready).

import (
	"context"
	"encoding/json"
	"math/rand"
	"sort"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/balancer/base"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/serviceconfig"
	"google.golang.org/grpc/status"
)

func init() { balancer.Register(builder{}) }

type builder struct{}

func (builder) Name() string { return Name }

// lbConfig is the parsed config as grpc-go carries it.
type lbConfig struct {
	serviceconfig.LoadBalancingConfig
	Config Config
}

// ParseConfig implements balancer.ConfigParser. An error makes grpc-go reject the whole service
// config (grpc.Dial with WithDefaultServiceConfig fails; a resolver's config is reported bad).
func (builder) ParseConfig(js json.RawMessage) (serviceconfig.LoadBalancingConfig, error) {
	c, err := ParseConfig(js)
	if err != nil {
		return nil, err
	}
	return &lbConfig{Config: c}, nil
}

func (builder) Build(cc balancer.ClientConn, opts balancer.BuildOptions) balancer.Balancer {
	s := &shared{
		ctx:   NewContext(DefaultConfig, Chosen),
		loads: map[balancer.SubConn]*Load{},
		rng:   rand.New(rand.NewSource(time.Now().UnixNano())),
	}
	if testHookBuilt != nil {
		testHookBuilt(s)
	}
	return &lb{Balancer: base.NewBalancerBuilder(Name, s, base.Config{}).Build(cc, opts), s: s}
}

// Set by tests only: sees each balancer's state, and each PickInfo.
var (
	testHookBuilt func(*shared)
	testHookPick  func(balancer.PickInfo)
)

// lb is the base balancer, told the config first.
type lb struct {
	balancer.Balancer
	s *shared
}

func (b *lb) UpdateClientConnState(st balancer.ClientConnState) error {
	if c, ok := st.BalancerConfig.(*lbConfig); ok {
		b.s.mu.Lock()
		b.s.ctx.SetConfig(c.Config)
		b.s.mu.Unlock()
	}
	return b.Balancer.UpdateClientConnState(st)
}

// shared is one balancer's state, read and written by every pick and every Done under one mutex
// (picks run concurrently on the callers' goroutines).
type shared struct {
	mu    sync.Mutex
	ctx   *Context
	loads map[balancer.SubConn]*Load
	rng   *rand.Rand
}

var origin = time.Now()

// nanotime: the monotonic clock, ns since the package was loaded.
func nanotime() int64 { return int64(time.Since(origin)) }

// Build implements base.PickerBuilder.
func (s *shared) Build(info base.PickerBuildInfo) balancer.Picker {
	if len(info.ReadySCs) == 0 {
		return base.NewErrPicker(balancer.ErrNoSubConnAvailable)
	}
	type entry struct {
		addr string
		sc   balancer.SubConn
	}
	ready := make([]entry, 0, len(info.ReadySCs))
	for sc, i := range info.ReadySCs {
		ready = append(ready, entry{i.Address.Addr, sc})
	}
	sort.Slice(ready, func(a, b int) bool { return ready[a].addr < ready[b].addr })
	p := &picker{s: s}
	now := nanotime()
	s.mu.Lock()
	loads := make(map[balancer.SubConn]*Load, len(ready))
	for _, e := range ready {
		l := s.loads[e.sc]
		if l == nil {
			l = NewLoad(s.ctx, now) // newly READY: fresh state; calls of the old one hold theirs
		}
		loads[e.sc] = l
		p.scs = append(p.scs, e.sc)
		p.loads = append(p.loads, l)
	}
	s.loads = loads
	s.mu.Unlock()
	return p
}

type picker struct {
	s     *shared
	scs   []balancer.SubConn
	loads []*Load
}

// Pick implements balancer.Picker. PickInfo carries FullMethodName and the call's Ctx, not
// whether the call is unary or streaming: that comes from the interceptors below, through Ctx.
func (p *picker) Pick(info balancer.PickInfo) (balancer.PickResult, error) {
	if testHookPick != nil {
		testHookPick(info)
	}
	unary := info.Ctx == nil || info.Ctx.Value(kindKey{}) != streaming
	s := p.s
	start := nanotime()
	s.mu.Lock()
	i := Pick(p.loads, start, s.ctx, s.rng)
	l := p.loads[i]
	if unary {
		l.Started(start)
	}
	s.mu.Unlock()
	if !unary {
		return balancer.PickResult{SubConn: p.scs[i]}, nil
	}
	return balancer.PickResult{SubConn: p.scs[i], Done: func(d balancer.DoneInfo) {
		end := nanotime()
		// grpc-go calls Done with an empty DoneInfo when the picked SubConn had no ready
		// transport and it picks again (picker_wrapper.go): not sent, no sample. A call the
		// client cancelled is no sample either; every other status but OK is a failure.
		sample := (d.Err != nil || d.BytesReceived) && status.Code(d.Err) != codes.Canceled
		s.mu.Lock()
		l.Ended(end, end-start, sample, d.Err != nil, s.ctx)
		s.mu.Unlock()
	}}, nil
}

type kindKey struct{}

type callKind int

const streaming callKind = 1

// UnaryInterceptor marks nothing (a call without a mark counts as unary); it exists so that an
// application can install both interceptors symmetrically.
func UnaryInterceptor(ctx context.Context, method string, req, reply interface{}, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	return invoker(ctx, method, req, reply, cc, opts...)
}

// StreamInterceptor marks a streaming call in its context, where the picker reads it
// (PickInfo.Ctx), so that streams neither count as outstanding nor give RTT samples.
func StreamInterceptor(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	return streamer(context.WithValue(ctx, kindKey{}, streaming), desc, cc, method, opts...)
}
