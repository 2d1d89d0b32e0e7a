// Command report writes results/interop/go.md and go.csv from the files scripts/interop-go.sh
// leaves in <dir>/<scenario>/: grpc-go-<policy>/summary.json (interop/go/client),
// lblab/summary.json and lblab/targets.csv (`lblab loadgen`), backend.txt (`lblab backend`'s
// names and addresses). The same tables and agreement rule as interop/node/report.js, with p99.9.
//
//	report --dir results/interop/go --out results/interop/go.md --command '...' one-slow ...
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// agree is lblab's agreement rule (record/src/compare.rs): within ±20 %, or within 1 ms.
func agree(a, b float64) bool { return math.Abs(a-b) <= 1 || math.Abs(a-b) <= 0.2*math.Abs(b) }

// shareTolerance: shares agree when the slow group's shares differ by at most this (absolute).
const shareTolerance = 0.03

type row struct {
	client, policy                   string
	requests, ok, errors             int
	p50, p99, p999, share, cpu, late float64
}

func readJSON(path string, v interface{}) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

var backendLine = regexp.MustCompile(`^(\S+/\d+)\s+(\S+:\d+)$`)

func backendNames(file string) map[string]string {
	names := map[string]string{}
	b, _ := os.ReadFile(file)
	for _, l := range strings.Split(string(b), "\n") {
		if m := backendLine.FindStringSubmatch(strings.TrimSpace(l)); m != nil {
			names[m[2]] = m[1]
		}
	}
	return names
}

var order = []string{"round_robin", "pick_first", "peak_ewma_experimental"}

func goRows(dir string) []row {
	var rows []row
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "grpc-go-") {
			continue
		}
		var s struct {
			Version  string  `json:"grpc_go_version"`
			Policy   string  `json:"policy"`
			Requests int     `json:"requests"`
			OK       int     `json:"ok"`
			Errors   int     `json:"errors"`
			P50      float64 `json:"p50_ms"`
			P99      float64 `json:"p99_ms"`
			P999     float64 `json:"p999_ms"`
			Share    float64 `json:"slow_share"`
			CPU      float64 `json:"cpu_us_per_call"`
			Late     float64 `json:"dispatch_lateness_p99_us"`
		}
		if err := readJSON(filepath.Join(dir, e.Name(), "summary.json"), &s); err != nil {
			fmt.Fprintln(os.Stderr, "warning:", err)
			continue
		}
		rows = append(rows, row{"grpc-go " + s.Version, s.Policy, s.Requests, s.OK, s.Errors, s.P50, s.P99, s.P999, s.Share, s.CPU, s.Late})
	}
	rank := func(p string) int {
		for i, o := range order {
			if o == p {
				return i
			}
		}
		return len(order)
	}
	sort.SliceStable(rows, func(i, j int) bool { return rank(rows[i].policy) < rank(rows[j].policy) })
	return rows
}

func lblabRows(dir string, names map[string]string, slow string) []row {
	var s struct {
		Rows []struct {
			Policy   string  `json:"policy"`
			Requests int     `json:"requests"`
			OK       int     `json:"ok"`
			Errors   int     `json:"errors"`
			P50      float64 `json:"p50_ms"`
			P99      float64 `json:"p99_ms"`
			P999     float64 `json:"p999_ms"`
		} `json:"rows"`
		Notes [][2]string `json:"notes"`
	}
	if err := readJSON(filepath.Join(dir, "lblab", "summary.json"), &s); err != nil {
		return nil
	}
	notes := map[string]string{}
	for _, n := range s.Notes {
		notes[n[0]] = n[1]
	}
	type tally struct{ total, slow float64 }
	shares := map[string]*tally{}
	b, _ := os.ReadFile(filepath.Join(dir, "lblab", "targets.csv"))
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	col := map[string]int{}
	for i, h := range strings.Split(lines[0], ",") {
		col[h] = i
	}
	for _, l := range lines[1:] {
		f := strings.Split(l, ",")
		name := names[f[col["address"]]]
		if name == "" {
			name = names[f[col["target"]]]
		}
		t := shares[f[col["policy"]]]
		if t == nil {
			t = &tally{}
			shares[f[col["policy"]]] = t
		}
		n, _ := strconv.ParseFloat(f[col["sends"]], 64)
		t.total += n
		if strings.HasPrefix(name, slow) {
			t.slow += n
		}
	}
	var rows []row
	for _, r := range s.Rows {
		share := 0.0
		if t := shares[r.Policy]; t != nil && t.total > 0 {
			share = t.slow / t.total
		}
		num := func(k string) float64 {
			x, err := strconv.ParseFloat(notes[r.Policy+": "+k], 64)
			if err != nil {
				return math.NaN()
			}
			return x
		}
		rows = append(rows, row{"lblab (tonic)", r.Policy, r.Requests, r.OK, r.Errors, r.P50, r.P99, r.P999, share,
			num("client cpu per call us"), num("dispatch lateness p99 us")})
	}
	return rows
}

func f2(x float64) string {
	if math.IsNaN(x) {
		return "–"
	}
	return fmt.Sprintf("%.2f", x)
}

func pct(x float64) string { return fmt.Sprintf("%.1f %%", 100*x) }

func yn(ok bool) string {
	if ok {
		return "yes"
	}
	return "**no**"
}

func main() {
	dir := flag.String("dir", "", "the runs' folder")
	out := flag.String("out", "", "the markdown file to write (and .csv beside it)")
	command := flag.String("command", "scripts/interop-go.sh", "the command to show")
	rate := flag.String("rate", "?", "")
	duration := flag.String("duration", "?", "")
	warmup := flag.String("warmup", "?", "")
	clients := flag.String("clients", "?", "")
	flag.Parse()
	var doc []string
	add := func(s ...string) { doc = append(doc, s...) }
	var csv [][]string
	version := "?"
	for _, s := range flag.Args() {
		var v struct {
			Version string `json:"grpc_go_version"`
			Go      string `json:"go_version"`
		}
		if readJSON(filepath.Join(*dir, s, "grpc-go-round_robin", "summary.json"), &v) == nil {
			version = v.Version + " on " + v.Go
			break
		}
	}
	add("# grpc-go beside lblab on the same fleet", "",
		"<!-- Generated by scripts/interop-go.sh (interop/go/report); do not edit by hand. -->", "",
		fmt.Sprintf("Each scenario's fleet is one `lblab backend` process (tonic servers on loopback); against it, one after the other, "+
			"grpc-go %s ([`interop/go/client`](../../interop/go/client/main.go), Debian's `golang-google-grpc-dev`) runs its own "+
			"`round_robin` and `pick_first` and `peak_ewma_experimental` (the port in [`interop/go/`](../../interop/go/README.md)), "+
			"then `lblab loadgen` runs lblab's `round_robin`, `peak_ewma` (`peak_ewma_experimental`) and `tower_p2c_peak_ewma`. "+
			"Every run: open loop, Poisson arrivals at %s/s over %s clients (each its own channel and connections), %s s warm-up "+
			"then %s s measured, deadline 1 s, latency from the intended send time.", version, *rate, *clients, *warmup, *duration),
		"", "Regenerate:", "", "```sh", strings.TrimSpace(*command), "```", "",
		"**Agreement rule** (lblab's sim-vs-real rule, `record/src/compare.rs`): two p50s (or p99s) agree when they are within "+
			"±20 % of the second or within 1 ms; shares agree within 3 points. *Share*: for grpc-go from each reply's `backend` field "+
			"(OK calls), for lblab from `targets.csv` (calls sent after the warm-up). *CPU µs/call*: for grpc-go the whole Go "+
			"process's CPU time (user + system, warm-up included) over the calls it sent; for lblab the client runtime's, as "+
			"`lblab loadgen` prints it. "+tailNote(*rate, *duration), "")
	for _, scenario := range flag.Args() {
		d := filepath.Join(*dir, scenario)
		if _, err := os.Stat(d); err != nil {
			continue
		}
		names := backendNames(filepath.Join(d, "backend.txt"))
		slow := "slow/"
		var rr struct {
			Slow []string `json:"slow_prefixes"`
		}
		if readJSON(filepath.Join(d, "grpc-go-round_robin", "summary.json"), &rr) == nil && len(rr.Slow) > 0 {
			slow = rr.Slow[0]
		}
		nslow := 0
		for _, n := range names {
			if strings.HasPrefix(n, slow) {
				nslow++
			}
		}
		rows := append(goRows(d), lblabRows(d, names, slow)...)
		fair := 0.0
		if len(names) > 0 {
			fair = float64(nslow) / float64(len(names))
		}
		add("## "+scenario, "",
			fmt.Sprintf("%d backends, %d of them in `%s` (fair share %s). Raw files: [`go/%s/`](go/%s/).",
				len(names), nslow, strings.TrimSuffix(slow, "/"), pct(fair), scenario, scenario), "",
			fmt.Sprintf("| client | policy | requests | ok | errors | p50 ms | p99 ms | p99.9 ms | share to `%s` | CPU µs/call | dispatch lateness p99 µs |", slow),
			"|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
		for _, r := range rows {
			add(fmt.Sprintf("| %s | %s | %d | %d | %d | %s | %s | %s | %s | %s | %s |", r.client, r.policy, r.requests, r.ok, r.errors,
				f2(r.p50), f2(r.p99), f2(r.p999), pct(r.share), f2(r.cpu), strings.TrimSuffix(f2(r.late), ".00")))
		}
		add("")
		find := func(client, policy string) *row {
			for i := range rows {
				if strings.HasPrefix(rows[i].client, client) && rows[i].policy == policy {
					return &rows[i]
				}
			}
			return nil
		}
		pairs := []struct {
			label string
			a, b  *row
		}{
			{"grpc-go round_robin vs lblab round_robin", find("grpc-go", "round_robin"), find("lblab", "round_robin")},
			{"grpc-go peak_ewma (port) vs lblab peak_ewma", find("grpc-go", "peak_ewma_experimental"), find("lblab", "peak_ewma")},
			{"grpc-go peak_ewma (port) vs tower_p2c_peak_ewma", find("grpc-go", "peak_ewma_experimental"), find("lblab", "tower_p2c_peak_ewma")},
		}
		add("| pair | p50 ms | agree | p99 ms | agree | p99.9 ms | share | agree |", "|---|---|---|---|---|---|---|---|")
		for _, p := range pairs {
			if p.a == nil || p.b == nil {
				continue
			}
			shareOK := math.Abs(p.a.share-p.b.share) <= shareTolerance
			policy := p.a.policy
			if policy == "peak_ewma_experimental" {
				policy += " (port)"
			}
			csv = append(csv, []string{"grpc-go", strings.TrimPrefix(p.a.client, "grpc-go "), scenario, policy, p.b.policy, slow,
				fmt.Sprintf("%.4f", p.a.share), fmt.Sprintf("%.4f", p.b.share), f2(p.a.p50), f2(p.b.p50), f2(p.a.p99), f2(p.b.p99),
				f2(p.a.p999), f2(p.b.p999), strconv.FormatBool(agree(p.a.p50, p.b.p50)), strconv.FormatBool(agree(p.a.p99, p.b.p99)),
				strconv.FormatBool(shareOK)})
			add(fmt.Sprintf("| %s | %s vs %s | %s | %s vs %s | %s | %s vs %s | %s vs %s | %s |", p.label, f2(p.a.p50), f2(p.b.p50),
				yn(agree(p.a.p50, p.b.p50)), f2(p.a.p99), f2(p.b.p99), yn(agree(p.a.p99, p.b.p99)), f2(p.a.p999), f2(p.b.p999),
				pct(p.a.share), pct(p.b.share), yn(shareOK)))
		}
		add("")
	}
	if err := os.WriteFile(*out, []byte(strings.Join(doc, "\n")), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(2)
	}
	lines := []string{"client,version,scenario,policy,lblab_policy,slow_group,share,lblab_share,p50_ms,lblab_p50_ms,p99_ms,lblab_p99_ms,p999_ms,lblab_p999_ms,p50_agrees,p99_agrees,shares_agree"}
	for _, r := range csv {
		lines = append(lines, strings.Join(r, ","))
	}
	_ = os.WriteFile(strings.TrimSuffix(*out, ".md")+".csv", []byte(strings.Join(lines, "\n")+"\n"), 0o644)
}

// tailNote says how many calls a run's p99 and p99.9 rest on, from its rate and measured seconds.
func tailNote(rate, duration string) string {
	r, err1 := strconv.ParseFloat(rate, 64)
	d, err2 := strconv.ParseFloat(duration, 64)
	if err1 != nil || err2 != nil || r*d < 1 {
		return "A run's p99.9 rests on a thousandth of its calls."
	}
	calls := r * d
	return fmt.Sprintf("A run measures about %.0f calls, so its p99 rests on the slowest %.0f and its p99.9 on the slowest %.0f: "+
		"read p99.9 differences of a few milliseconds as noise.", calls, calls/100, calls/1000)
}
