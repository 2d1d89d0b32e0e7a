// Command client is an open-loop load generator on grpc-go (1.33, Debian's
// golang-google-grpc-dev) against lblab's fleet (`lblab backend`), like interop/node/client.js:
// Poisson arrivals at --rate for --warmup + --duration, latency counted from each call's
// intended send time (the deadline too), the load balancing policy as gRPC service-config JSON,
// each of --clients channels with its own connections. Writes summary.json, summary.csv and
// backends.csv into --out, with the fields client.js writes.
//
//	client --targets 127.0.0.1:5000,127.0.0.1:5001 --policy round_robin \
//	  --rate 200 --duration 10 --warmup 2 --out /tmp/run --slow slow/
//
// --policy takes a name (round_robin, pick_first, peak_ewma_experimental), a policy object
// ('{"round_robin":{}}') or a whole service config ('{"loadBalancingConfig":[...]}').
// peak_ewma_experimental is interop/go/peakewma, registered by importing it.
//
// grpc-go 1.33 has no `ipv4:` resolver for several static addresses (only dns and passthrough,
// one address each), so the addresses go through grpc-go's manual resolver (resolver/manual),
// one per channel. lblab's Echo service is called through ClientConn.Invoke with a hand-written
// codec for its two messages (wire/proto/lblab/v1/echo.proto): no generated code is needed.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
	"google.golang.org/grpc/status"

	"lblab/interop/go/peakewma"
)

const method = "/lblab.v1.Echo/Unary"

// --- lblab.v1.CallRequest / CallReply, by hand -------------------------------------------

type callRequest struct{ id uint64 }

type callReply struct {
	id      uint64
	backend string
}

type echoCodec struct{}

func (echoCodec) Name() string { return "proto" }

func (echoCodec) Marshal(v interface{}) ([]byte, error) {
	r, ok := v.(*callRequest)
	if !ok {
		return nil, fmt.Errorf("cannot marshal %T", v)
	}
	b := []byte{0x08} // field 1, varint
	for x := r.id; ; x >>= 7 {
		if x < 0x80 {
			return append(b, byte(x)), nil
		}
		b = append(b, byte(x)|0x80)
	}
}

func varint(b []byte) (uint64, int) {
	var x uint64
	for i := 0; i < len(b) && i < 10; i++ {
		x |= uint64(b[i]&0x7f) << (7 * uint(i))
		if b[i] < 0x80 {
			return x, i + 1
		}
	}
	return 0, 0
}

func (echoCodec) Unmarshal(data []byte, v interface{}) error {
	r, ok := v.(*callReply)
	if !ok {
		return fmt.Errorf("cannot unmarshal into %T", v)
	}
	for len(data) > 0 {
		key, n := varint(data)
		if n == 0 {
			return errors.New("bad CallReply")
		}
		data = data[n:]
		switch key & 7 {
		case 0:
			x, n := varint(data)
			if n == 0 {
				return errors.New("bad CallReply varint")
			}
			if key>>3 == 1 {
				r.id = x
			}
			data = data[n:]
		case 2:
			l, n := varint(data)
			if n == 0 || uint64(len(data)-n) < l {
				return errors.New("bad CallReply length")
			}
			if key>>3 == 2 {
				r.backend = string(data[n : n+int(l)])
			}
			data = data[n+int(l):]
		case 1:
			data = data[8:]
		case 5:
			data = data[4:]
		default:
			return errors.New("bad CallReply wire type")
		}
	}
	return nil
}

// --- the run ---------------------------------------------------------------------------------

func fail(code int, format string, a ...interface{}) {
	fmt.Fprintf(os.Stderr, "error: "+format+"\n", a...)
	os.Exit(code)
}

// serviceConfig turns --policy into a service config, and checks that its first entry is a
// policy this grpc-go has (grpc-go would silently move on to the next entry) and that it parses.
func serviceConfig(policy string) (string, string) {
	p := strings.TrimSpace(policy)
	var sc map[string]interface{}
	if !strings.HasPrefix(p, "{") {
		sc = map[string]interface{}{"loadBalancingConfig": []interface{}{map[string]interface{}{p: map[string]interface{}{}}}}
	} else {
		var obj map[string]interface{}
		if err := json.Unmarshal([]byte(p), &obj); err != nil {
			fail(2, "--policy is not JSON: %v", err)
		}
		if _, ok := obj["loadBalancingConfig"]; ok {
			sc = obj
		} else {
			sc = map[string]interface{}{"loadBalancingConfig": []interface{}{obj}}
		}
	}
	list, _ := sc["loadBalancingConfig"].([]interface{})
	if len(list) == 0 {
		fail(2, "loadBalancingConfig must be a non-empty list")
	}
	first, _ := list[0].(map[string]interface{})
	if len(first) != 1 {
		fail(2, "loadBalancingConfig[0] must have exactly one policy")
	}
	var name string
	var cfg interface{}
	for name, cfg = range first {
	}
	b := balancer.Get(name)
	if b == nil {
		fail(1, "grpc-go %s has no load balancing policy named %s", grpc.Version, name)
	}
	if parser, ok := b.(balancer.ConfigParser); ok {
		raw, _ := json.Marshal(cfg)
		if _, err := parser.ParseConfig(raw); err != nil {
			fail(1, "invalid service config: loadBalancingConfig[0].%v", err)
		}
	}
	out, _ := json.Marshal(sc)
	return string(out), name
}

func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	if i < 0 {
		i = 0
	}
	if i >= len(sorted) {
		i = len(sorted) - 1
	}
	return sorted[i]
}

func r3(x float64) float64 { return math.Round(x*1000) / 1000 }

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func writeAtomic(file string, data []byte) {
	tmp := fmt.Sprintf("%s.tmp%d", file, os.Getpid())
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		fail(2, "%v", err)
	}
	if err := os.Rename(tmp, file); err != nil {
		fail(2, "%v", err)
	}
}

type backendRow struct {
	Backend string  `json:"backend"`
	Calls   int     `json:"calls"`
	Share   float64 `json:"share"`
}

func main() {
	targets := flag.String("targets", "", "HOST:PORT,... (required)")
	policy := flag.String("policy", "", "NAME or JSON (required)")
	label := flag.String("label", "", "the policy's label in the results (default: its name)")
	rate := flag.Float64("rate", 100, "calls per second")
	duration := flag.Float64("duration", 10, "measured seconds")
	warmup := flag.Float64("warmup", 2, "warm-up seconds")
	deadline := flag.Float64("deadline", 1, "deadline, seconds from the intended send time")
	clients := flag.Int("clients", 1, "channels, each with its own connections")
	seed := flag.Int64("seed", 1, "seed of the arrivals")
	slow := flag.String("slow", "", "backend name prefixes whose share is reported, comma-separated")
	out := flag.String("out", "", "folder for summary.json, summary.csv and backends.csv")
	flag.Parse()
	if *targets == "" || *policy == "" {
		fail(2, "--targets and --policy are required")
	}
	if *rate <= 0 || *duration <= 0 || *deadline <= 0 || *warmup < 0 {
		fail(2, "--rate, --duration and --deadline must be > 0, --warmup >= 0")
	}
	if *clients < 1 {
		*clients = 1
	}
	sc, policyName := serviceConfig(*policy)
	if *label == "" {
		*label = policyName
	}
	var addrs []resolver.Address
	for _, a := range strings.Split(*targets, ",") {
		if a != "" {
			addrs = append(addrs, resolver.Address{Addr: a})
		}
	}
	var slowPrefixes []string
	for _, p := range strings.Split(*slow, ",") {
		if p != "" {
			slowPrefixes = append(slowPrefixes, p)
		}
	}

	conns := make([]*grpc.ClientConn, *clients)
	for c := range conns {
		r := manual.NewBuilderWithScheme(fmt.Sprintf("lblab%d", c))
		r.InitialState(resolver.State{Addresses: addrs})
		cc, err := grpc.Dial(r.Scheme()+":///fleet", grpc.WithInsecure(), grpc.WithResolvers(r),
			grpc.WithDefaultServiceConfig(sc),
			grpc.WithDefaultCallOptions(grpc.ForceCodec(echoCodec{})),
			grpc.WithStreamInterceptor(peakewma.StreamInterceptor))
		if err != nil {
			fail(1, "dial: %v", err)
		}
		conns[c] = cc
	}
	// Wait until each channel can send (at least one READY endpoint).
	wait, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	for _, cc := range conns {
		for s := cc.GetState(); s != connectivity.Ready; s = cc.GetState() {
			if !cc.WaitForStateChange(wait, s) {
				fail(2, "no target accepted a connection within 5s: %s", *targets)
			}
		}
	}
	cancel()

	rng := rand.New(rand.NewSource(*seed))
	warmupNs := int64(*warmup * 1e9)
	endNs := int64((*warmup + *duration) * 1e9)
	meanGap := 1e9 / *rate
	deadlineNs := int64(*deadline * 1e9)

	var mu sync.Mutex
	var latencies, lateness []float64
	perBackend := map[string]int{}
	codesSeen := map[string]int{}
	requests, ok, errs, deadlineExceeded, sent := 0, 0, 0, 0, 0
	var wg sync.WaitGroup

	cpu0 := cpuTime()
	t0 := time.Now()
	next := 0.0
	for c := 0; ; c++ {
		intended := int64(next)
		if intended >= endNs {
			break
		}
		// Sleep through the gap but its last 300 µs (Go's timers wake about a millisecond
		// late at worst), then yield until the call's time.
		for {
			left := time.Duration(intended) - time.Since(t0)
			if left <= 0 {
				break
			}
			if left > time.Millisecond {
				time.Sleep(left - 300*time.Microsecond)
			} else {
				runtime.Gosched()
			}
		}
		dispatched := int64(time.Since(t0))
		measured := intended >= warmupNs
		if measured {
			requests++
			lateness = append(lateness, float64(dispatched-intended)/1e3)
		}
		sent++
		cc := conns[c%len(conns)]
		wg.Add(1)
		go func(id uint64, intended int64, measured bool) {
			defer wg.Done()
			ctx, cancel := context.WithDeadline(context.Background(), t0.Add(time.Duration(intended+deadlineNs)))
			defer cancel()
			var reply callReply
			err := cc.Invoke(ctx, method, &callRequest{id: id}, &reply)
			if !measured {
				return
			}
			ms := float64(int64(time.Since(t0))-intended) / 1e6
			mu.Lock()
			defer mu.Unlock()
			code := status.Code(err)
			codesSeen[code.String()]++
			switch {
			case err == nil:
				ok++
				latencies = append(latencies, ms)
				perBackend[reply.backend]++
			case code == codes.DeadlineExceeded:
				errs++
				deadlineExceeded++
				latencies = append(latencies, ms)
			default:
				errs++
			}
		}(uint64(sent), intended, measured)
		next += -math.Log(1-rng.Float64()) * meanGap
	}
	// Calls in flight end by their deadline.
	wg.Wait()
	cpu := cpuTime() - cpu0
	wall := time.Since(t0).Seconds()
	for _, cc := range conns {
		cc.Close()
	}

	sort.Float64s(latencies)
	sort.Float64s(lateness)
	answered := 0
	for _, n := range perBackend {
		answered += n
	}
	var backends []backendRow
	slowCalls := 0
	for b, n := range perBackend {
		backends = append(backends, backendRow{b, n, float64(n) / float64(answered)})
		for _, p := range slowPrefixes {
			if strings.HasPrefix(b, p) {
				slowCalls += n
				break
			}
		}
	}
	sort.Slice(backends, func(i, j int) bool { return backendLess(backends[i].Backend, backends[j].Backend) })
	mean, maxMs := 0.0, 0.0
	for _, x := range latencies {
		mean += x
	}
	if len(latencies) > 0 {
		mean /= float64(len(latencies))
		maxMs = latencies[len(latencies)-1]
	}
	slowShare := 0.0
	if answered > 0 {
		slowShare = math.Round(float64(slowCalls)/float64(answered)*1e6) / 1e6
	}
	var scObj interface{}
	_ = json.Unmarshal([]byte(sc), &scObj)
	summary := map[string]interface{}{
		"client":                   "grpc-go",
		"grpc_go_version":          grpc.Version,
		"go_version":               runtime.Version(),
		"policy":                   *label,
		"service_config":           scObj,
		"targets":                  *targets,
		"clients":                  *clients,
		"rate":                     *rate,
		"warmup_s":                 *warmup,
		"measured_s":               *duration,
		"deadline_s":               *deadline,
		"seed":                     *seed,
		"requests":                 requests,
		"ok":                       ok,
		"errors":                   errs,
		"deadline_exceeded":        deadlineExceeded,
		"dropped":                  requests - ok - errs,
		"p50_ms":                   r3(quantile(latencies, 0.5)),
		"p90_ms":                   r3(quantile(latencies, 0.9)),
		"p99_ms":                   r3(quantile(latencies, 0.99)),
		"p999_ms":                  r3(quantile(latencies, 0.999)),
		"max_ms":                   r3(maxMs),
		"mean_ms":                  r3(mean),
		"slow_prefixes":            slowPrefixes,
		"slow_share":               slowShare,
		"statuses":                 codesSeen,
		"backends":                 backends,
		"calls_sent":               sent,
		"wall_s":                   r3(wall),
		"cpu_us_per_call":          math.Round(float64(cpu.Microseconds())/float64(sent)*10) / 10,
		"cpu_note":                 "process CPU time (user + system, every thread of the Go process, warm-up included) / calls sent",
		"dispatch_lateness_p99_us": math.Round(quantile(lateness, 0.99)),
	}
	if *out != "" {
		if err := os.MkdirAll(*out, 0o755); err != nil {
			fail(2, "%v", err)
		}
		js, _ := json.MarshalIndent(summary, "", "  ")
		writeAtomic(filepath.Join(*out, "summary.json"), append(js, '\n'))
		cols := []string{"policy", "requests", "ok", "errors", "deadline_exceeded", "dropped", "p50_ms", "p90_ms", "p99_ms",
			"p999_ms", "max_ms", "mean_ms", "slow_share", "cpu_us_per_call", "dispatch_lateness_p99_us"}
		vals := make([]string, len(cols))
		for i, c := range cols {
			vals[i] = fmt.Sprint(summary[c])
		}
		writeAtomic(filepath.Join(*out, "summary.csv"), []byte(strings.Join(cols, ",")+"\n"+strings.Join(vals, ",")+"\n"))
		csv := "policy,backend,calls,share\n"
		for _, b := range backends {
			csv += fmt.Sprintf("%s,%s,%d,%.6f\n", *label, b.Backend, b.Calls, b.Share)
		}
		writeAtomic(filepath.Join(*out, "backends.csv"), []byte(csv))
	}
	fmt.Printf("%s: requests %d ok %d errors %d p50 %v ms p99 %v ms p99.9 %v ms slow_share %v client CPU %v µs per call dispatch lateness p99 %v µs\n",
		*label, requests, ok, errs, summary["p50_ms"], summary["p99_ms"], summary["p999_ms"], slowShare,
		summary["cpu_us_per_call"], summary["dispatch_lateness_p99_us"])
}

// backendLess orders `group/index` names by group, then index as a number.
func backendLess(a, b string) bool {
	ga, ia := splitName(a)
	gb, ib := splitName(b)
	if ga != gb {
		return ga < gb
	}
	return ia < ib
}

func splitName(s string) (string, int) {
	i := strings.LastIndexByte(s, '/')
	n := 0
	if i >= 0 {
		fmt.Sscanf(s[i+1:], "%d", &n)
		return s[:i], n
	}
	return s, 0
}
