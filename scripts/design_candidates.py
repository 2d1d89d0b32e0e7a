#!/usr/bin/env python3
"""Writes DIR/README.md, the tables of scripts/design-candidates.sh, from the CSVs in DIR alone:
for every candidate of scenarios/design/candidates.toml, its p99 and p99.9 against the best of the
reference algorithms (tower's, Finagle's, Envoy's) in every canonical scenario and at every point
of the design sets, its time to a fair share after a heal, a join and a cold start, and its failed
calls, and `decayTime` as the trade-off between the heal and the tail. Usage: design_candidates.py
DIR"""
import csv
import glob
import os
import sys

REFERENCES = ["pe_tower", "finagle_peak_ewma", "envoy_peak_ewma"]
CANDIDATES = ["previous", "peak_ewma", "pe_stall", "pe_zero_stall", "pe_ignore", "pe_stalled",
              "pe_refutable", "simple", "simple_jump", "simple_jump_errors", "simple_stalled",
              "simple_no_stall", "simple_pick", "simple_errors", "pe_ratio4", "pe_ratio8",
              "pe_jump_ratio8", "pe_probe", "pe_probe_1s"]
METRICS = [("p99_ms", "p99"), ("p999_ms", "p99.9")]
POINT_KEYS = ["workload.clients", "fleet.main.count", "workload.utilization"]


def intervals(path):
    """policy -> metric -> (median, lo, hi) from an intervals.csv."""
    out = {}
    with open(path) as f:
        for r in csv.DictReader(f):
            out.setdefault(r["policy"], {})[r["metric"]] = (
                float(r["median"]), float(r["lo"]), float(r["hi"]))
    return out


def sweep(path):
    """point (tuple of the varied values) -> policy -> metric -> (median, lo, hi)."""
    out = {}
    with open(path) as f:
        for r in csv.DictReader(f):
            keys = tuple(r[k] for k in POINT_KEYS if k in r)
            metrics = {}
            for m in ["p99_ms", "p999_ms", "time_to_fair_s", "error_share", "slow_share"]:
                if r.get(m):
                    metrics[m] = (float(r[m]), float(r[m + "_lo"]), float(r[m + "_hi"]))
            out.setdefault(keys, {})[r["policy"]] = metrics
    return out


def verdict(by_policy, cand, metric):
    """(ratio of the candidate's median to the best reference's, within): within when the
    candidate's interval reaches down to the best reference's (overlap) or it is lower."""
    refs = [(by_policy[r][metric], r) for r in REFERENCES if r in by_policy and metric in by_policy[r]]
    if cand not in by_policy or metric not in by_policy[cand] or not refs:
        return None
    (best, _) = min(refs, key=lambda x: x[0][0])
    c = by_policy[cand][metric]
    return c[0] / best[0], c[1] <= best[2]


def fmt(x, digits=2):
    return "–" if x is None else f"{x:.{digits}f}"


def score_table(points, title, lines):
    """One row per candidate: points within the best reference's intervals (or lower), of all,
    for p99 and p99.9, and the worst ratio with its point."""
    lines.append(f"| {title} | p99 within | p99 worst × | p99.9 within | p99.9 worst × | worst point (p99.9) |")
    lines.append("|---|---|---|---|---|---|")
    for cand in CANDIDATES:
        cells = []
        worst_point = ""
        for metric, _ in METRICS:
            got = [(verdict(bp, cand, metric), name) for name, bp in points]
            got = [(v, n) for v, n in got if v is not None]
            if not got:
                cells += ["–", "–"]
                continue
            within = sum(1 for (v, _) in got if v[1])
            (worst, wname) = max(got, key=lambda x: x[0][0])
            cells += [f"{within} of {len(got)}", fmt(worst[0])]
            if metric == "p999_ms":
                worst_point = wname
        lines.append(f"| `{cand}` | " + " | ".join(cells) + f" | {worst_point} |")
    lines.append("")


def policy_columns(lines, first, rows, metric):
    """A table of `metric`'s medians, one row per (name, by policy) of `rows`, one column per
    candidate and reference (and the oracle)."""
    columns = CANDIDATES + REFERENCES + ["oracle"]
    lines.append(f"| {first} | " + " | ".join(f"`{c}`" for c in columns) + " |")
    lines.append("|---|" + "---|" * len(columns))
    for name, bp in rows:
        row = [name] + [fmt(bp.get(c, {}).get(metric, (None,))[0], 1) for c in columns]
        lines.append("| " + " | ".join(row) + " |")
    lines.append("")


DECAY_TIME_S = 10.0
ENVELOPE_POLICIES = ["peak_ewma", "pe_stalled", "pe_ratio8", "simple_jump", "simple_pick",
                     "simple_no_stall", "pe_probe"] + REFERENCES


def sweep_rows(path):
    """point (tuple of the varied values) -> policy -> the CSV row, as strings."""
    out = {}
    with open(path) as f:
        for r in csv.DictReader(f):
            out.setdefault(tuple(r[k] for k in POINT_KEYS if k in r), {})[r["policy"]] = r
    return out


def envelope(d, canonical, lines):
    """Where the best-of-the-references target comes from: which reference wins which family of
    points, how the default fares against each reference alone, and at each steady point the
    default loses, how much of its traffic to the slow backend any policy that sees a heal within
    2 x decayTime must send there."""
    families = {}
    for name in ["small-busy", "grid"]:
        path = os.path.join(d, name, "sweep.csv")
        if os.path.exists(path):
            families.setdefault("steady slowness", []).extend(
                (f"{name} {'/'.join(k)}", bp) for k, bp in sorted(sweep(path).items()))
    path = os.path.join(d, "small-busy-gc", "sweep.csv")
    if os.path.exists(path):
        families["pauses"] = [(f"small-busy-gc {'/'.join(k)}", bp)
                              for k, bp in sorted(sweep(path).items())]
        families["pauses"] += [(n, bp) for n, bp in canonical if n in ("gc-pauses", "gc-pauses-busy")]
    methods = []
    for name in [f"{s}{m}" for s in ("methods-mixed", "methods-slow-heavy")
                 for m in ("", "-light", "-heavy")]:
        path = os.path.join(d, name, "sweep.csv")
        if os.path.exists(path):
            methods += [(f"{name} {'/'.join(k)}", bp) for k, bp in sorted(sweep(path).items())]
    if methods:
        families["methods"] = methods
    families["canonical"] = canonical
    if len(families) < 4:
        return
    heal_path = os.path.join(d, "recovery-clients", "sweep.csv")
    heal = sweep(heal_path) if os.path.exists(heal_path) else {}
    counts = sorted(heal, key=lambda k: int(k[0]))

    lines += ["## The envelope: which reference wins where", "",
              "The target *within the best reference's interval at every point* asks for the "
              "lower envelope of three algorithms, and each wins a different family of points. "
              "Envoy's never-probing estimate wins every point with steady slowness (it sends the "
              "slow backend nothing once it has learnt, and never gives a healed backend back); "
              "tower's and Finagle's win the pauses. p99.9 within the best reference's interval, "
              "of the family's points, and the worst ratio of medians; then the heal "
              "(recovery-clients, seconds until a healed backend carries 80 % of its share; – : "
              "not within 168 s). *steady slowness*: small-busy and grid; *pauses*: small-busy-gc, "
              "gc-pauses, gc-pauses-busy.", "",
              "| policy | " + " | ".join(families) + " | "
              + " | ".join(f"heal, {k[0]} ch." for k in counts) + " |",
              "|---|" + "---|" * (len(families) + len(counts))]
    for cand in ENVELOPE_POLICIES:
        row = [f"`{cand}`"]
        for pts in families.values():
            got = [v for v in (verdict(bp, cand, "p999_ms") for _, bp in pts) if v is not None]
            if not got:
                row.append("–")
                continue
            row.append(f"{sum(1 for v in got if v[1])} of {len(got)}, "
                       f"{max(v[0] for v in got):.2f}×")
        for k in counts:
            t = heal[k].get(cand, {}).get("time_to_fair_s")
            row.append("–" if t is None or t[0] == float("inf") else f"{t[0]:.1f}")
        lines.append("| " + " | ".join(row) + " |")
    lines.append("")

    points = {}
    for pts in families.values():
        for n, bp in pts:
            points[n] = bp
    lines += ["Head to head, over every one of these points once "
              f"({len(points)}): at how many the first policy's interval reaches down to the "
              "second's or lies below it, at how many it lies wholly below, and the worst ratio "
              "of its median to the second's.", "",
              "| policy | against | p99 within or lower | p99 wholly lower | p99 worst × "
              "| p99.9 within or lower | p99.9 wholly lower | p99.9 worst × |",
              "|---|---|---|---|---|---|---|---|"]
    for a, b in [(x, y) for r in REFERENCES for (x, y) in (("peak_ewma", r), (r, "peak_ewma"))]:
        row = [f"`{a}`", f"`{b}`"]
        for metric, _ in METRICS:
            pairs = [(bp[a][metric], bp[b][metric], n) for n, bp in points.items()
                     if metric in bp.get(a, {}) and metric in bp.get(b, {})]
            within = sum(1 for x, y, _ in pairs if x[1] <= y[2])
            lower = sum(1 for x, y, _ in pairs if x[2] < y[1])
            worst = max(pairs, key=lambda p: p[0][0] / p[1][0])
            row += [f"{within} of {len(pairs)}", str(lower),
                    f"{worst[0][0] / worst[1][0]:.2f} ({worst[2]})"]
        lines.append("| " + " | ".join(row) + " |")
    lines.append("")

    lines += ["At each steady point where the default's p99.9 is not within Envoy's: the calls "
              "per second of one client channel `r`, the share of its calls that a client must "
              f"send to the slow backend to see it heal within 2 × `decayTime` "
              f"(`1 / (r × {2 * DECAY_TIME_S:.0f} s)`: one call per 20 s, all of them slow "
              "while it is slow), the share the default sent there, and Envoy's. Where the "
              "default's share is near that floor, any policy that gives a healed backend back "
              "in time pays about what it pays; where it is far above, the excess is the healthy "
              "endpoints' own tail read as a stall (design.md, *Where this leaves the done-when "
              "targets*).", "",
              "| point | channels | `r` (calls/s) | floor | `peak_ewma` | `envoy_peak_ewma` "
              "| p99.9 × Envoy's |", "|---|---|---|---|---|---|---|"]
    for name in ["small-busy", "grid"]:
        path = os.path.join(d, name, "sweep.csv")
        if not os.path.exists(path):
            continue
        for k, by in sorted(sweep_rows(path).items()):
            if "peak_ewma" not in by or "envoy_peak_ewma" not in by:
                continue
            pe, env = by["peak_ewma"], by["envoy_peak_ewma"]
            if float(pe["p999_ms_lo"]) <= float(env["p999_ms_hi"]):
                continue
            channels = int(k[0])
            r = float(pe["rate"]) / channels
            floor = 1.0 / (r * 2 * DECAY_TIME_S)
            lines.append(f"| {name} {'/'.join(k)} | {channels} | {r:.0f} | {100 * floor:.3f} % "
                         f"| {100 * float(pe['slow_share']):.3f} % "
                         f"| {100 * float(env['slow_share']):.3f} % "
                         f"| {float(pe['p999_ms']) / float(env['p999_ms']):.2f} |")
    lines.append("")


def main():
    d = sys.argv[1]
    lines = ["# The candidates for a policy a gRFC can specify", "",
             "Generated by `scripts/design_candidates.py` from the CSVs beside it "
             "(`scripts/design-candidates.sh`, policies in `scenarios/design/candidates.toml`); "
             "every number is a median over seeds, with the distribution-free 95 % interval of "
             "the median where given. *Within* means the candidate's interval reaches down to the "
             "best reference's (tower's, Finagle's or Envoy's algorithm, whichever has the lowest "
             "median there) or lies below it; *×* is the ratio of the medians.", ""]

    canonical = []
    for path in sorted(glob.glob(os.path.join(d, "canonical", "*", "intervals.csv"))):
        canonical.append((os.path.basename(os.path.dirname(path)), intervals(path)))
    lines += ["## Against the references", ""]
    score_table(canonical, "canonical scenarios", lines)
    design_points = []
    methods = [f"{s}{m}" for s in ("methods-mixed", "methods-slow-heavy")
               for m in ("", "-light", "-heavy")]
    for name in ["small-busy", "small-busy-gc", "grid"] + methods:
        path = os.path.join(d, name, "sweep.csv")
        if os.path.exists(path):
            pts = [(f"{name} {'/'.join(k)}", bp) for k, bp in sorted(sweep(path).items())]
            score_table(pts, name, lines)
            design_points += pts
    if design_points:
        score_table(design_points, "all design points", lines)

    envelope(d, canonical, lines)

    lines += ["## Per canonical scenario (p99.9, ms)", "",
              "| scenario | best reference | " + " | ".join(f"`{c}`" for c in CANDIDATES) + " |",
              "|---|---|" + "---|" * len(CANDIDATES)]
    for name, bp in canonical:
        refs = [(bp[r]["p999_ms"][0], r) for r in REFERENCES if r in bp]
        best = min(refs)
        row = [name, f"{best[0]:.1f} ({best[1]})"]
        for c in CANDIDATES:
            v = bp.get(c, {}).get("p999_ms")
            row.append("–" if v is None else f"{v[0]:.1f}")
        lines.append("| " + " | ".join(row) + " |")
    lines.append("")

    lines += ["## Time to a fair share (s)", "",
              "Until the healed, joining or restarted backends carry 80 % of their fair share "
              "(`time_to_fair_s`; – : not within the run).", ""]
    rows = []
    for name in ["recovery", "scale-out"]:
        path = os.path.join(d, name, "intervals.csv")
        if os.path.exists(path):
            rows.append((name, intervals(path)))
    path = os.path.join(d, "canonical", "crash-restart", "intervals.csv")
    if os.path.exists(path):
        rows.append(("crash-restart", intervals(path)))
    path = os.path.join(d, "recovery-clients", "sweep.csv")
    if os.path.exists(path):
        for k, bp in sorted(sweep(path).items(), key=lambda x: int(x[0][0])):
            rows.append((f"recovery, {k[0]} channels", bp))
    policy_columns(lines, "scenario", rows, "time_to_fair_s")
    path = os.path.join(d, "recovery-clients", "sweep.csv")
    if os.path.exists(path):
        lines += ["p99.9 (ms) in the same runs, 168 s after the heal:", ""]
        points = sorted(sweep(path).items(), key=lambda x: int(x[0][0]))
        policy_columns(lines, "channels", [(k[0], bp) for k, bp in points], "p999_ms")

    path = os.path.join(d, "cold-four", "intervals.csv")
    if os.path.exists(path):
        bp = intervals(path)
        lines += ["## Cold start (cold-four: the first 10 s count)", "",
                  "| policy | p99 (ms) | × oracle's |", "|---|---|---|"]
        o = bp["oracle"]["p99_ms"][0]
        for c in CANDIDATES + REFERENCES + ["oracle"]:
            if c in bp:
                v = bp[c]["p99_ms"][0]
                lines.append(f"| `{c}` | {v:.2f} | {v / o:.2f} |")
        lines.append("")

    path = os.path.join(d, "canonical", "fail-fast", "intervals.csv")
    if os.path.exists(path):
        bp = intervals(path)
        lines += ["## Failures (fail-fast: one of 20 backends fails 90 % of its calls at once)", "",
                  "| policy | failed calls | interval |", "|---|---|---|"]
        for c in sorted(bp):
            v = bp[c].get("error_share")
            if v:
                lines.append(f"| `{c}` | {100 * v[0]:.3f} % | [{100 * v[1]:.3f}, {100 * v[2]:.3f}] |")
        lines.append("")

    path = os.path.join(d, "decay", "intervals.csv")
    if os.path.exists(path):
        bp = intervals(path)
        lines += ["## `decayTime` acts (recovery: one of 20 backends 10x slower until 30 s)", "",
                  "| policy | decayTime | time to fair share (s) | p99 (ms) | p99.9 (ms) |",
                  "|---|---|---|---|---|"]
        def key(n):
            policy, tau = n.rsplit("_tau_", 1)
            return (policy != "peak_ewma", policy, float(tau.rstrip("s")))
        for c in sorted(bp, key=key):
            m = bp[c]
            policy, tau = c.rsplit("_tau_", 1)
            t = m.get("time_to_fair_s", (None,))[0]
            lines.append(f"| `{policy}` | {tau} | {fmt(t, 1)} | {m['p99_ms'][0]:.2f} | "
                         f"{m['p999_ms'][0]:.2f} |")
        lines.append("")

    clients_path = os.path.join(d, "tradeoff-clients", "sweep.csv")
    tail_path = os.path.join(d, "tradeoff-tail", "intervals.csv")
    if os.path.exists(clients_path) and os.path.exists(tail_path):
        heal = sweep(clients_path)
        counts = sorted(heal, key=lambda k: int(k[0]))
        tail = intervals(tail_path)
        policies = [p for p in tail if p != "oracle"]

        def order(n):
            if "_tau_" in n:
                return (0, float(n.rsplit("_tau_", 1)[1].rstrip("s")))
            return (1, n)
        lines += ["## `decayTime`: the heal against the tail", "",
                  "The default at four values of `decayTime`, beside Finagle's and Envoy's "
                  "algorithms: the time until a healed backend carries 80 % of its fair share "
                  "(recovery-clients: one of 20 backends 10x slower until 30 s, 2,000 req/s in "
                  "all, shared by 1 to 1,000 client channels; – : not within the 168 s after the "
                  "heal), and the tail in many-clients (50 channels at 40 calls/s each, one of 20 "
                  "backends 10x slower for the whole run, where every call sent to it is a loss). "
                  f"The oracle's many-clients p99.9: {tail['oracle']['p999_ms'][0]:.2f} ms.", "",
                  "| policy | " + " | ".join(f"heal, {k[0]} ch. (s)" for k in counts)
                  + " | many-clients p99 (ms) | p99.9 (ms) | interval | calls to the slow backend |",
                  "|---|" + "---|" * (len(counts) + 4)]
        for c in sorted(policies, key=order):
            name = f"`peak_ewma`, {c.rsplit('_tau_', 1)[1]}" if "_tau_" in c else f"`{c}`"
            row = [name]
            for k in counts:
                t = heal[k].get(c, {}).get("time_to_fair_s")
                row.append("–" if t is None or t[0] == float("inf") else f"{t[0]:.1f}")
            m = tail[c]
            row += [f"{m['p99_ms'][0]:.2f}", f"{m['p999_ms'][0]:.2f}",
                    f"[{m['p999_ms'][1]:.2f}, {m['p999_ms'][2]:.2f}]",
                    f"{100 * m['slow_share'][0]:.3f} %"]
            lines.append("| " + " | ".join(row) + " |")
        lines.append("")

    path = os.path.join(d, "most-fail", "sweep.csv")
    if os.path.exists(path):
        points = {}
        with open(path) as f:
            for r in csv.DictReader(f):
                key = (int(r["fleet.broken.count"]), int(r["fleet.main.count"]))
                points.setdefault(key, {})[r["policy"]] = r
        lines += ["## Failures: one or most backends fail every call (most-fail)", "",
                  "The failing backends fail every call fast from 10 s to 40 s, then heal; "
                  "2,000 req/s in all, about 1,600 per backend at most, so one healthy backend "
                  "alone cannot carry the load. Failed calls over the whole run (125 s), p99 of all "
                  "calls, and the time after the heal until the healed backends carry 80 % of "
                  "their fair share (– : not within the 90 s after it).", ""]
        order = list(next(iter(points.values())).keys())
        lines += ["| failing of all | " + " | ".join(f"`{p}`" for p in order) + " |",
                  "|---|" + "---|" * len(order)]
        for (broken, main), by in sorted(points.items()):
            cells = []
            for p in order:
                r = by[p]
                t = float(r["time_to_fair_s"]) if r["time_to_fair_s"] else None
                heal = "–" if t is None or t == float("inf") else f"{t:.1f} s"
                cells.append(f"{100 * float(r['error_share']):.2f} %, "
                             f"{float(r['p99_ms']):.1f} ms, {heal}")
            lines.append(f"| {broken} of {broken + main} | " + " | ".join(cells) + " |")
        lines.append("")

    with open(os.path.join(d, "README.md"), "w") as f:
        f.write("\n".join(lines))


if __name__ == "__main__":
    main()
