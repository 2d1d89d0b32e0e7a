package peakewma

// The port inside grpc-go itself, on loopback: two in-process grpc-go servers with a unary and a
// server-streaming method, a channel with peak_ewma_experimental over grpc-go's manual resolver.
// What it shows about grpc-go 1.33 (measured, not read): PickInfo carries the full method name
// and the call's context; unary calls give samples and leave nothing outstanding; a stream is
// picked like a unary call, and the picker can tell it apart only through the context mark of
// StreamInterceptor: without it, an open stream counts as an outstanding unary call.

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
)

// rawCodec sends []byte as they are.
type rawCodec struct{}

func (rawCodec) Name() string   { return "proto" }
func (rawCodec) String() string { return "proto" }
func (rawCodec) Marshal(v interface{}) ([]byte, error) {
	return *v.(*[]byte), nil
}
func (rawCodec) Unmarshal(data []byte, v interface{}) error {
	*v.(*[]byte) = append([]byte(nil), data...)
	return nil
}

var testService = grpc.ServiceDesc{
	ServiceName: "t.T",
	HandlerType: (*interface{})(nil),
	Methods: []grpc.MethodDesc{{MethodName: "U", Handler: func(_ interface{}, _ context.Context, dec func(interface{}) error, _ grpc.UnaryServerInterceptor) (interface{}, error) {
		var b []byte
		if err := dec(&b); err != nil {
			return nil, err
		}
		return &b, nil
	}}},
	Streams: []grpc.StreamDesc{{StreamName: "S", ServerStreams: true, Handler: func(_ interface{}, st grpc.ServerStream) error {
		var b []byte
		if err := st.RecvMsg(&b); err != nil {
			return err
		}
		if err := st.SendMsg(&b); err != nil {
			return err
		}
		<-st.Context().Done() // held open until the client cancels
		return nil
	}}},
}

var hookMu sync.Mutex

func TestInsideGrpcGo(t *testing.T) {
	hookMu.Lock()
	defer hookMu.Unlock()
	var addrs []resolver.Address
	for i := 0; i < 2; i++ {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := grpc.NewServer(grpc.CustomCodec(rawCodec{}))
		srv.RegisterService(&testService, struct{}{})
		go srv.Serve(lis)
		defer srv.Stop()
		addrs = append(addrs, resolver.Address{Addr: lis.Addr().String()})
	}
	var states []*shared
	var infos []balancer.PickInfo
	var mu sync.Mutex
	testHookBuilt = func(s *shared) { mu.Lock(); states = append(states, s); mu.Unlock() }
	testHookPick = func(i balancer.PickInfo) { mu.Lock(); infos = append(infos, i); mu.Unlock() }
	defer func() { testHookBuilt, testHookPick = nil, nil }()

	dial := func(scheme string, opts ...grpc.DialOption) *grpc.ClientConn {
		r := manual.NewBuilderWithScheme(scheme)
		r.InitialState(resolver.State{Addresses: addrs})
		opts = append(opts, grpc.WithInsecure(), grpc.WithResolvers(r),
			grpc.WithDefaultServiceConfig(`{"loadBalancingConfig":[{"peak_ewma_experimental":{"choiceCount":2}}]}`),
			grpc.WithDefaultCallOptions(grpc.ForceCodec(rawCodec{}), grpc.WaitForReady(true)))
		cc, err := grpc.Dial(scheme+":///t", opts...)
		if err != nil {
			t.Fatal(err)
		}
		return cc
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// outstanding sums the outstanding calls of the balancer built last.
	outstanding := func() (n, sampled int) {
		mu.Lock()
		s := states[len(states)-1]
		mu.Unlock()
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, l := range s.loads {
			n += l.Outstanding
			if l.Sampled {
				sampled++
			}
		}
		return n, sampled
	}

	for _, withInterceptor := range []bool{true, false} {
		var opts []grpc.DialOption
		if withInterceptor {
			opts = append(opts, grpc.WithStreamInterceptor(StreamInterceptor))
		}
		cc := dial(map[bool]string{true: "marked", false: "unmarked"}[withInterceptor], opts...)
		for i := 0; i < 20; i++ {
			in, out := []byte("x"), []byte(nil)
			if err := cc.Invoke(ctx, "/t.T/U", &in, &out); err != nil || string(out) != "x" {
				t.Fatalf("unary call: %v %q", err, out)
			}
		}
		if n, sampled := outstanding(); n != 0 || sampled == 0 {
			t.Fatalf("after unary calls: %d outstanding, %d endpoints sampled", n, sampled)
		}
		mu.Lock()
		last := infos[len(infos)-1]
		mu.Unlock()
		if last.FullMethodName != "/t.T/U" || last.Ctx == nil {
			t.Fatalf("PickInfo: %+v", last)
		}
		sctx, scancel := context.WithCancel(ctx)
		st, err := cc.NewStream(sctx, &testService.Streams[0], "/t.T/S")
		if err != nil {
			t.Fatal(err)
		}
		in, out := []byte("s"), []byte(nil)
		if err := st.SendMsg(&in); err != nil {
			t.Fatal(err)
		}
		_ = st.CloseSend()
		if err := st.RecvMsg(&out); err != nil {
			t.Fatal(err)
		}
		n, _ := outstanding()
		scancel()
		if withInterceptor && n != 0 {
			t.Fatalf("an open stream marked by StreamInterceptor counted as outstanding: %d", n)
		}
		if !withInterceptor && n != 1 {
			t.Fatalf("without the interceptor grpc-go gives the picker no way to tell a stream: want 1 outstanding, got %d", n)
		}
		cc.Close()
	}
}
