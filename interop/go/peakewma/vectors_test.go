package peakewma

// Replays lblab's conformance vectors (conformance/vectors/peak_ewma_experimental.json, format in
// conformance/README.md), read at test time (or from $LBLAB_VECTORS), against the port: every
// config case through ParseConfig, every sequence through core.go's Load, Pick (fed the file's
// draws by a scripted source that fails if the core asks for one more or one fewer) doing what
// balancer.go does:
//   - an endpoint that becomes READY (from any other state) gets a fresh Load; READY to READY
//     keeps it; a new endpoint gets one at set_endpoints (as lblab; unobservable in grpc-go,
//     where the first READY makes it);
//   - a pick sees the READY endpoints in list order; a unary call holds the Load it was picked
//     with, so a call of an old connection or of a removed endpoint changes nothing anyone reads;
//   - only unary calls count (Started at the pick, Ended at completion, a sample unless
//     CANCELLED); streaming calls are picked the same way and touch nothing.
// After every step: the pick and, per endpoint, id, state, outstanding, estimate_ns and cost_ns.
// A config case with an unknown field is accepted, the field ignored, as grpc-go's parsers and
// lblab do. Skipped, and said so: a sequence whose lblabAblation pins a variation this port does
// not implement (none in the file as of this writing).

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

type vectorFile struct {
	Format    string `json:"format"`
	Version   int    `json:"version"`
	Policy    string `json:"policy"`
	Tolerance struct {
		Relative   float64 `json:"relative"`
		AbsoluteNs float64 `json:"absolute_ns"`
	} `json:"tolerance"`
	ConfigCases []struct {
		Input      json.RawMessage            `json:"input"`
		Accepted   bool                       `json:"accepted"`
		Normalized map[string]json.RawMessage `json:"normalized"`
		Error      struct {
			Field string `json:"field"`
		} `json:"error"`
	} `json:"config_cases"`
	Sequences []sequence `json:"sequences"`
}

type sequence struct {
	Name   string                     `json:"name"`
	Config map[string]json.RawMessage `json:"config"`
	Steps  []struct {
		Op        string `json:"op"`
		AtNs      int64  `json:"at_ns"`
		Endpoints []int  `json:"endpoints"`
		Endpoint  int    `json:"endpoint"`
		State     string `json:"state"`
		Kind      string `json:"kind"`
		Draws     []int  `json:"draws"`
		Drawn     []int  `json:"drawn"`
		Call      *int   `json:"call"`
		Status    string `json:"status"`
		ElapsedNs int64  `json:"elapsed_ns"`
		Expect    struct {
			Pick *struct {
				Result   string `json:"result"`
				Endpoint *int   `json:"endpoint"`
			} `json:"pick"`
			Endpoints []struct {
				Endpoint    int     `json:"endpoint"`
				State       string  `json:"state"`
				Outstanding int     `json:"outstanding"`
				EstimateNs  float64 `json:"estimate_ns"`
				CostNs      float64 `json:"cost_ns"`
			} `json:"endpoints"`
		} `json:"expect"`
	} `json:"steps"`
}

func loadVectors(t *testing.T) *vectorFile {
	path := os.Getenv("LBLAB_VECTORS")
	if path == "" {
		path = filepath.Join("..", "..", "..", "conformance", "vectors", "peak_ewma_experimental.json")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the conformance vectors: %v", err)
	}
	var v vectorFile
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if v.Format != "lblab-conformance-vectors" || v.Version != 1 || v.Policy != Name {
		t.Fatalf("%s: not version 1 vectors for %s", path, Name)
	}
	if len(v.ConfigCases) == 0 || len(v.Sequences) == 0 {
		t.Fatalf("%s: no cases", path)
	}
	return &v
}

// withoutLblabOnly drops lblab's lab-only `lblabAblation`.
func withoutLblabOnly(m map[string]json.RawMessage) []byte {
	out := map[string]json.RawMessage{}
	for k, v := range m {
		if k != "lblabAblation" {
			out[k] = v
		}
	}
	b, _ := json.Marshal(out)
	return b
}

func TestVectorConfigCases(t *testing.T) {
	v := loadVectors(t)
	replayed := 0
	for n, c := range v.ConfigCases {
		where := fmt.Sprintf("config case #%d %s", n, c.Input)
		got, err := ParseConfig(c.Input)
		if c.Accepted {
			if err != nil {
				t.Errorf("%s: rejected: %v", where, err)
				continue
			}
			wantJSON := withoutLblabOnly(c.Normalized)
			want, err := ParseConfig(wantJSON)
			if err != nil || got != want {
				t.Errorf("%s: got %+v, the normalized form parses to %+v (%v)", where, got, want, err)
			}
			var wantMap, gotMap map[string]interface{}
			_ = json.Unmarshal(wantJSON, &wantMap)
			b, _ := json.Marshal(got.JSON())
			_ = json.Unmarshal(b, &gotMap)
			if !reflect.DeepEqual(gotMap, wantMap) {
				t.Errorf("%s: normalized %v, want %v", where, gotMap, wantMap)
			}
			replayed++
			continue
		}
		ce, ok := err.(*ConfigError)
		if !ok {
			t.Errorf("%s: accepted (%+v) or not a ConfigError (%v)", where, got, err)
			continue
		}
		if ce.Field != c.Error.Field {
			t.Errorf("%s: the error names %q, want %q: %v", where, ce.Field, c.Error.Field, ce)
		}
		replayed++
	}
	t.Logf("config cases: %d replayed", replayed)
	fmt.Printf("vectors: config cases %d replayed\n", replayed)
}

// semanticsOf is the semantics a sequence encodes: Chosen, or what its lblabAblation pins; ""
// and a reason when it pins one this port does not implement.
func semanticsOf(seq *sequence) (Semantics, string) {
	a := map[string]json.RawMessage{}
	if raw, ok := seq.Config["lblabAblation"]; ok {
		_ = json.Unmarshal(raw, &a)
	}
	s := Chosen
	str := func(k string, to *string) {
		if raw, ok := a[k]; ok {
			_ = json.Unmarshal(raw, to)
		}
	}
	str("initial", &s.Initial)
	str("idle", &s.Idle)
	str("failures", &s.Failures)
	str("peak", &s.Peak)
	if raw, ok := a["idlePicks"]; ok {
		_ = json.Unmarshal(raw, &s.IdlePicks)
	}
	if raw, ok := a["errorPenalty"]; ok {
		_ = json.Unmarshal(raw, &s.ErrorPenalty)
	}
	if raw, ok := a["errorSamples"]; ok {
		_ = json.Unmarshal(raw, &s.ErrorSamples)
	}
	if raw, ok := a["stall"]; ok {
		_ = json.Unmarshal(raw, &s.Stall)
	}
	if raw, ok := a["idleMaxTime"]; ok {
		var d string
		_ = json.Unmarshal(raw, &d)
		ns, err := ParseDuration(d)
		if err != nil {
			return s, "idleMaxTime " + d + ": " + err.Error()
		}
		s.IdleMaxTime = ns
	} else if s.Idle != "pick_clock" {
		s.IdleMaxTime = 0 // as lblab: only the pick clock has a bound by default
	}
	// As lblab: the semantics as first written have none of the later rules unless told.
	if s.Initial == "prior" {
		for k, set := range map[string]func(){
			"errorPenalty": func() { s.ErrorPenalty = FirstWritten.ErrorPenalty },
			"failures":     func() { s.Failures = FirstWritten.Failures },
			"errorSamples": func() { s.ErrorSamples = FirstWritten.ErrorSamples },
			"peak":         func() { s.Peak = FirstWritten.Peak },
			"stall":        func() { s.Stall = FirstWritten.Stall },
		} {
			if _, ok := a[k]; !ok {
				set()
			}
		}
	}
	// Variations this port does not implement, unless at lblab's default.
	defaults := map[string]string{"decay": `"time_weighted"`, "sampling": `"distinct"`, "streams": `"ignore"`, "probes": `"many"`}
	for k, raw := range a {
		switch k {
		case "initial", "idle", "idlePicks", "idleMaxTime", "errorPenalty", "failures", "errorSamples", "peak", "stall":
		default:
			if d, ok := defaults[k]; !ok || string(raw) != d {
				return s, fmt.Sprintf("lblabAblation.%s = %s", k, raw)
			}
		}
	}
	okInitial := s.Initial == "zero" || s.Initial == "prior"
	okIdle := s.Idle == "pick_clock" || s.Idle == "to_zero"
	okPeak := s.Peak == "stalled" || s.Peak == "jump"
	okFail := s.Failures == "hold" || s.Failures == "sample" || s.Failures == "ignore"
	if !okInitial || !okIdle || !okPeak || !okFail {
		return s, fmt.Sprintf("lblabAblation %s", seq.Config["lblabAblation"])
	}
	return s, ""
}

// scripted returns one pick's draws in order and checks the count it is asked for.
type scripted struct {
	draws []int
	n     int
	used  int
	err   error
}

func (r *scripted) Intn(n int) int {
	if n != r.n {
		r.err = fmt.Errorf("drew among %d, the vector among %d", n, r.n)
	}
	if r.used >= len(r.draws) {
		r.err = fmt.Errorf("the core asked for draw %d, the vector gives %d", r.used+1, len(r.draws))
		return r.used % n // a new index, so that the rejection sampling ends
	}
	i := r.draws[r.used]
	r.used++
	return i
}

func closeTo(got, want float64, tol *vectorFile) bool {
	return math.Abs(got-want) <= math.Max(tol.Tolerance.AbsoluteNs, tol.Tolerance.Relative*math.Abs(want))
}

func TestVectorSequences(t *testing.T) {
	v := loadVectors(t)
	steps, replayed, skipped := 0, 0, 0
	for i := range v.Sequences {
		seq := &v.Sequences[i]
		sem, why := semanticsOf(seq)
		if why != "" {
			t.Logf("skipped %s: it pins %s, a lab-only variation this port does not implement", seq.Name, why)
			skipped++
			continue
		}
		ok := t.Run(seq.Name, func(t *testing.T) { steps += replay(t, v, seq, sem) })
		if ok {
			replayed++
		}
	}
	t.Logf("sequences: %d passed, %d skipped, %d steps", replayed, skipped, steps)
	fmt.Printf("vectors: sequences %d of %d passed, %d skipped, %d steps\n", replayed, len(v.Sequences), skipped, steps)
}

type endpoint struct {
	state string
	load  *Load
}

type call struct {
	load  *Load
	unary bool
}

func replay(t *testing.T, v *vectorFile, seq *sequence, sem Semantics) int {
	cfg, err := ParseConfig(withoutLblabOnly(seq.Config))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	ctx := NewContext(cfg, sem)
	endpoints := map[int]*endpoint{}
	var order []int
	calls := map[int]call{}
	for n, st := range seq.Steps {
		where := fmt.Sprintf("step %d (%s at %d ns)", n, st.Op, st.AtNs)
		now := st.AtNs
		switch st.Op {
		case "set_endpoints":
			next := map[int]*endpoint{}
			for _, id := range st.Endpoints {
				if e, ok := endpoints[id]; ok {
					next[id] = e
				} else {
					next[id] = &endpoint{state: "IDLE", load: NewLoad(ctx, now)}
				}
			}
			endpoints = next
			order = append([]int(nil), st.Endpoints...)
		case "connectivity":
			e, ok := endpoints[st.Endpoint]
			if !ok {
				t.Fatalf("%s: endpoint %d is not in the list", where, st.Endpoint)
			}
			if st.State == "READY" && e.state != "READY" {
				e.load = NewLoad(ctx, now)
			}
			e.state = st.State
		case "pick":
			var readyIDs []int
			var ready []*Load
			agg := "TRANSIENT_FAILURE"
			for _, want := range []string{"IDLE", "CONNECTING", "READY"} {
				for _, id := range order {
					if endpoints[id].state == want {
						agg = want
					}
				}
			}
			for _, id := range order {
				if endpoints[id].state == "READY" {
					readyIDs = append(readyIDs, id)
					ready = append(ready, endpoints[id].load)
				}
			}
			var result string
			gotID := -1
			if agg == "READY" {
				rng := &scripted{draws: st.Draws, n: len(ready)}
				i := Pick(ready, now, ctx, rng)
				if rng.err != nil || rng.used != len(st.Draws) {
					t.Fatalf("%s: draws: used %d of %d: %v", where, rng.used, len(st.Draws), rng.err)
				}
				result, gotID = "endpoint", readyIDs[i]
				unary := st.Kind == "unary"
				if unary {
					ready[i].Started(now)
				}
				if st.Call != nil {
					calls[*st.Call] = call{ready[i], unary}
				}
			} else {
				if len(st.Draws) != 0 {
					t.Fatalf("%s: draws without a READY endpoint", where)
				}
				result = "queue"
				if agg == "TRANSIENT_FAILURE" {
					result = "fail"
				}
			}
			want := st.Expect.Pick
			if want == nil || want.Result != result || (result == "endpoint" && (want.Endpoint == nil || *want.Endpoint != gotID)) {
				t.Fatalf("%s: pick %s %d, want %+v", where, result, gotID, want)
			}
		case "done":
			c, ok := calls[*st.Call]
			if !ok {
				t.Fatalf("%s: unknown call %d", where, *st.Call)
			}
			delete(calls, *st.Call)
			if c.unary != (st.Kind == "unary") {
				t.Fatalf("%s: kind differs from the pick's", where)
			}
			if c.unary {
				c.load.Ended(now, st.ElapsedNs, st.Status != "CANCELLED", st.Status != "OK", ctx)
			}
		case "check":
		default:
			t.Fatalf("%s: op %s is not one of peak_ewma_experimental's", where, st.Op)
		}
		if len(st.Expect.Endpoints) != len(order) {
			t.Fatalf("%s: %d endpoints, want %d", where, len(order), len(st.Expect.Endpoints))
		}
		for k, want := range st.Expect.Endpoints {
			id := order[k]
			e := endpoints[id]
			w := fmt.Sprintf("%s, endpoint #%d", where, k)
			if id != want.Endpoint || e.state != want.State || e.load.Outstanding != want.Outstanding {
				t.Fatalf("%s: id %d state %s outstanding %d, want %+v", w, id, e.state, e.load.Outstanding, want)
			}
			if got := e.load.Decayed(now, ctx); !closeTo(got, want.EstimateNs, v) {
				t.Fatalf("%s: estimate_ns %v, want %v", w, got, want.EstimateNs)
			}
			if got := e.load.Cost(now, ctx); !closeTo(got, want.CostNs, v) {
				t.Fatalf("%s: cost_ns %v, want %v", w, got, want.CostNs)
			}
		}
	}
	return len(seq.Steps)
}
