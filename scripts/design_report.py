#!/usr/bin/env python3
"""Writes results/design/README.md from the files scripts/design-search.sh wrote: every number on
the page is read from them. Usage: design_report.py DIR"""
import csv
import os
import sys

# The variations and references, in table order, with what each is.
POLICIES = [
    ("pe_as_first_written", "proposal as first written: defaultRtt prior, decay to 0 on the wall clock"),
    ("pe_first_sample", "first sample replaces the prior; decay to 0"),
    ("pe_penalty", "Finagle's first estimate (cost 0, penalty while the first call is pending); decay to 0"),
    ("pe_penalty_frozen", "penalty; no decay without samples (Envoy's)"),
    ("pe_penalty_pick1k", "penalty; decay on the pick clock, idlePicks 1000"),
    ("pe_penalty_pick2k", "penalty; pick clock, idlePicks 2000"),
    ("pe_penalty_pick3k", "penalty; pick clock, idlePicks 3000"),
    ("pe_penalty_pick5k", "penalty; pick clock, idlePicks 5000"),
    ("pe_penalty_pick10k", "penalty; pick clock, idlePicks 10000"),
    ("pe_penalty_one", "penalty; decay to 0; one probe at a time (`probes: one`)"),
    ("pe_penalty_pick1k_one", "penalty; pick clock, idlePicks 1000; one probe at a time"),
    ("pe_penalty_pick5k_one", "penalty; pick clock, idlePicks 5000; one probe at a time"),
    ("pe_penalty_pick5k_blend", "penalty; pick clock, idlePicks 5000; no peak jump (`peak: blend`, Envoy's plain EWMA)"),
    ("pe_blend_5s", "the default with `peak: blend` and `blendTime` 5 s: samples blend into the stored estimate with weight `1 − e^(−Δt/5 s)`, the idle decay keeps `decayTime`"),
    ("pe_blend_2500ms", "as `pe_blend_5s` with `blendTime` 2.5 s"),
    ("pe_peak_1s", "the default with `peak: decaying`: a plain EWMA plus a separate peak that decays with `peakDecayTime` 1 s"),
    ("pe_idle_5s", "the default with `idleDecayTime` 5 s: an avoided estimate decays twice as fast as samples blend"),
    ("pe_no_errors", "the default without its error-aware cost (`errorPenalty` 0)"),
    ("pe_failures_sample", "the default before this change: `failures: sample` (a failed call's time is an RTT sample like any other, so a backend that fails fast looks fast) and `errorSamples` 0 (an answer weighs only its time in the share of failures)"),
    ("pe_error_samples_0", "the default with `errorSamples` 0: failures hold the estimate, but an answer weighs only its time in the share of failures, so one OK probe can wipe it out"),
    ("pe_samples_100", "the default with `blendSamples` 100: a decay adapted to the endpoint's rate of answers, a sample weighs at least 1/100"),
    ("pe_samples_1000", "the default with `blendSamples` 1000"),
    ("pe_no_idle_max", "the default without its wall-clock bound on the idle decay (`idleMaxTime` 0s: the pick clock alone): the default before it"),
    ("pe_idle_max_20s", "the default with `idleMaxTime` 20 s (a tighter bound than its 60 s)"),
    ("pe_idle_max_120s", "the default with `idleMaxTime` 120 s (a looser bound)"),
    ("peak_ewma", "`peak_ewma_experimental` with its defaults in this build"),
    ("finagle_peak_ewma", "reference: Finagle"),
    ("envoy_peak_ewma", "reference: Envoy (contrib, as shipped)"),
    ("least_request", "reference: A48 least_request"),
    ("oracle", "simulator only: true queues, least expected completion"),
]
REFERENCES = ["finagle_peak_ewma", "envoy_peak_ewma"]
FAIR = 0.8  # "carries its fair share": 80 % of 1/n, averaged over 3 s


def coverage(n, confidence=0.95):
    """The true confidence of the simulator's interval of a median over n values (its rule:
    the narrowest pair of order statistics with at least `confidence`)."""
    from math import comb
    best = 1 - 2 * 0.5**n
    tail = 0.0
    for j in range(0, n // 2):
        tail += comb(n, j) / 2**n
        c = 1 - 2 * tail
        if c < confidence:
            break
        best = c
    return best


def intervals(path):
    """{(policy, metric): (median, lo, hi)} of an intervals.csv."""
    out = {}
    with open(path) as f:
        for r in csv.DictReader(f):
            out[(r["policy"], r["metric"])] = tuple(float(r[k] or "nan") for k in ("median", "lo", "hi"))
    return out


def sweep(path):
    """{(x, policy): row} of a sweep.csv, x = workload.clients."""
    out = {}
    with open(path) as f:
        for r in csv.DictReader(f):
            out[(int(r["workload.clients"]), r["policy"])] = r
    return out


def time_to_fair(path, prefix, start, n):
    """{policy: seconds from `start` until the backends whose names start with `prefix` carry
    FAIR × 1/n each on a 3-s average, or None if never within the run}: the simulator's
    `time_to_fair_s` (stats/src/lib.rs, `time_to_fair_share`), for the real runs, whose
    summaries do not carry that column; `start` is the end of the last fault window."""
    series = {}
    with open(path) as f:
        for r in csv.DictReader(f):
            cols = [k for k in r if k.startswith("share_" + prefix)]
            share = sum(float(r[k]) for k in cols) / len(cols)
            series.setdefault(r["policy"], []).append((int(r["second"]), share))
    out = {}
    for policy, s in series.items():
        s.sort()
        # The last second is cut short by the drain.
        s = s[:-1]
        out[policy] = None
        for i, (sec, _) in enumerate(s):
            window = [v for _, v in s[i : i + 3]]
            if sec >= start and len(window) == 3 and sum(window) / 3 >= FAIR / n:
                out[policy] = sec - start
                break
    return out


RECOVERY_CLIENTS = ["peak_ewma", "pe_no_idle_max", "pe_idle_max_20s", "pe_idle_max_120s", "pe_penalty",
                    "finagle_peak_ewma", "envoy_peak_ewma"]


def recovery_clients_section(d, sw):
    """Recovery time against the number of clients (recovery-clients sweep), beside the p99.9 and
    the probe share of one-slow at the same numbers of clients (the clients sweep)."""
    path = os.path.join(d, "recovery-clients", "sweep.csv")
    rc = sweep(path)
    clients = sorted({x for x, _ in rc})
    L = ["## Recovery against the number of clients\n"]
    L.append(
        "A client learns that a backend healed only by sending it a call, and each client (channel) "
        "learns for itself. On the pick clock alone an avoided backend's estimate decays per pick, so a "
        "client that picks rarely waits long: the fewer picks each client makes, the later the healed "
        "backend is back. `idleMaxTime` bounds that wait with a wall-clock decay of its own. The bound is "
        "not free: recovering within a time T takes at least one call per client per T to a backend "
        "that may still be slow, so the share of such calls is at least 1 / (T × each client's rate), "
        "and those calls are the slowest. `recovery-clients` ([`scenarios/design/recovery-clients.toml`]"
        "(../../scenarios/design/recovery-clients.toml)): the recovery scenario (the slow backend heals "
        "at 30 s) run for 168 s after the heal, 2,000 req/s in all, swept over the number of client "
        "channels: `time_to_fair_s`, median [interval] over seeds (`never`: not within the 168 s). "
        "Below each, from the *clients* sweep (one-slow, the slow backend never heals): p99.9 ms and the "
        "share of calls sent to the slow backend.\n"
    )
    L.append("| policy | " + " | ".join(f"{c} clients" for c in clients) + " |")
    L.append("|" + "---|" * (1 + len(clients)))
    for p in RECOVERY_CLIENTS:
        cells = [f"`{p}`"]
        for c in clients:
            r = rc.get((c, p))
            if r is None:
                cells.append("–")
                continue
            iv = tuple(float(r[k] or "nan") for k in ("time_to_fair_s", "time_to_fair_s_lo", "time_to_fair_s_hi"))
            cell = fmt_time(iv)
            o = sw.get((c, p))
            if o is not None:
                cell += f" · {float(o['p999_ms']):.1f} ms · {100 * float(o['slow_share']):.3f} %"
            cells.append(cell)
        L.append("| " + " | ".join(cells) + " |")
    L.append("")
    return L


def fmt_time(iv):
    """A time_to_fair_s interval (median, lo, hi) of the simulator; inf: never within the run."""
    def one(x):
        return "never" if x == float("inf") else f"{x:.0f}"
    med, lo, hi = iv
    if med == float("inf"):
        return f"never [{one(lo)}, {one(hi)}]"
    return f"{one(med)} s [{one(lo)}, {one(hi)}]"


# The real runs of scripts/design-real.sh: (folder, what, faulty group and time from which it
# should carry its share, or None).
REAL = [
    ("one-slow", "one-slow (20 backends, one 10× slower), 4 clients, 20 s measured", None),
    ("cold-four", "cold-four, no warm-up, 10 s measured", None),
    ("recovery", "recovery: the slow backend heals at 30 s", ("slow", 30)),
    ("recovery-c1", "recovery at 1 client channel (scripts/recovery-real.sh; 90 s after the heal)", ("slow", 30)),
    ("recovery-c10", "recovery at 10 client channels", ("slow", 30)),
    ("recovery-c50", "recovery at 50 client channels", ("slow", 30)),
    ("many-clients", "many-clients: 50 client channels at 40 req/s each", None),
    ("crash-restart", "crash-restart: 2 of 20 crash at 20 s, back at 30 s, cold until 40 s", ("crashy", 40)),
    ("fail-fast", "fail-fast: 1 of 20 answers 90 % of its calls at once with an error, 20 s measured", None),
]


def real_section(d):
    """The real-gRPC table, if scripts/design-real.sh has run."""
    base = os.path.join(d, "real")
    if not os.path.isdir(base):
        return []
    L = ["## Over real gRPC\n"]
    L.append(
        "`scripts/design-real.sh`: the same policies over real gRPC (a tonic fleet and an open-loop tonic "
        "client on loopback, one policy at a time, one run each; `results/design/real/`). p99 and p99.9 of "
        "the measured calls, the share that failed, the share sent to a backend while it was faulty, and where a backend heals or "
        "comes back, the seconds from the end of its last fault window until it carries 80 % of its fair "
        "share.\n"
    )
    L.append("| scenario | policy | p99 ms | p99.9 ms | failed | to faulty | back to its share |")
    L.append("|---|---|---|---|---|---|---|")
    for folder, what, back in REAL:
        path = os.path.join(base, folder, "summary.csv")
        if not os.path.exists(path):
            continue
        with open(path) as f:
            rows = list(csv.DictReader(f))
        times = {}
        if back:
            n = len(next(iter(csv.reader(open(os.path.join(base, folder, "timeseries.csv")))))) - 5
            times = time_to_fair(os.path.join(base, folder, "timeseries.csv"), back[0], back[1], n)
        for k, r in enumerate(rows):
            t = times.get(r["policy"], "") if back else ""
            t = "never" if back and t is None else (f"{t} s" if t != "" else "–")
            failed = (int(r["errors"]) + int(r["dropped"])) / max(1, int(r["requests"]))
            L.append(
                f"| {what if k == 0 else ''} | `{r['policy']}` | {float(r['p99_ms']):.2f} | "
                f"{float(r['p999_ms']):.2f} | {100 * failed:.2f} % | {100 * float(r['slow_share']):.2f} % | {t} |"
            )
    L.append("")
    return L


# The canonical comparison (scenarios/design/variants.toml in every canonical scenario): the
# variations and the references, in column order, with their short names.
VARIANTS = [
    ("peak_ewma", "default"),
    ("pe_blend", "blend"),
    ("pe_blend_5s", "blend 5 s"),
    ("pe_blend_2500ms", "blend 2.5 s"),
    ("pe_peak_1s", "peak 1 s"),
    ("pe_idle_5s", "idle 5 s"),
    ("pe_no_errors", "no errors"),
    ("pe_failures_sample", "failures sample"),
    ("pe_error_samples_0", "errorSamples 0"),
    ("pe_samples_100", "samples 100"),
    ("pe_samples_1000", "samples 1000"),
    ("pe_as_first_written", "first written"),
]
# Where failures are the fault: the share of calls that failed, with and without outlier detection.
FAIL_FAST = [
    "round_robin",
    "peak_ewma",
    "pe_no_errors",
    "pe_failures_sample",
    "pe_error_samples_0",
    "od(peak_ewma)",
    "od(pe_failures_sample)",
    "od(pe_no_errors)",
    "od(least_request)",
    "weighted_round_robin",
    "finagle_peak_ewma",
    "envoy_peak_ewma",
    "oracle",
]
CANON_REFS = [("pe_tower", "tower"), ("finagle_peak_ewma", "Finagle"), ("envoy_peak_ewma", "Envoy")]


def canonical_section(d, seeds):
    """Every canonical scenario under the same variations and references: p99.9 (and the time to
    fair share where a backend comes back), with each variation marked where the best reference's
    interval lies wholly below its own, and a count per variation."""
    base = os.path.join(d, "canonical")
    if not os.path.isdir(base):
        return []
    names = sorted(n for n in os.listdir(base) if os.path.exists(os.path.join(base, n, "intervals.csv")))
    data = {n: intervals(os.path.join(base, n, "intervals.csv")) for n in names}
    cols = VARIANTS + CANON_REFS + [("oracle", "oracle")]
    L = ["## Every canonical scenario\n"]
    L.append(
        "Each canonical scenario (`scenarios/*.toml`) with the policies of "
        "[`scenarios/design/variants.toml`](../../scenarios/design/variants.toml) in place of its own "
        f"(`results/design/canonical/`), {seeds} seeds: p99.9 in ms, median over seeds. `pe_tower` is tower's "
        "semantics as an lblab variation (defaultRtt prior, decay on every read). A variation's cell is "
        "**bold** where it is beaten beyond the intervals: the interval of the best of tower's, Finagle's and "
        "Envoy's p99.9 (lowest median) lies wholly below its own. Below the p99.9, `↺` gives `time_to_fair_s` "
        "where a backend heals or comes back (`never`: not within the run).\n"
    )
    L.append("| scenario | " + " | ".join(short for _, short in cols) + " |")
    L.append("|" + "---|" * (1 + len(cols)))
    lost = {p: [] for p, _ in VARIANTS}
    won = {p: [] for p, _ in VARIANTS}
    worst = {p: (0.0, "") for p, _ in VARIANTS}
    for n in names:
        iv = data[n]
        refs = [r for r, _ in CANON_REFS if (r, "p999_ms") in iv]
        best = min(refs, key=lambda r: iv[(r, "p999_ms")][0])
        cells = [n]
        for p, _ in cols:
            if (p, "p999_ms") not in iv:
                cells.append("–")
                continue
            m, lo, hi = iv[(p, "p999_ms")]
            cell = f"{m:.2f}"
            if p in lost:
                ratio = m / iv[(best, "p999_ms")][0]
                if ratio > worst[p][0]:
                    worst[p] = (ratio, n)
                if iv[(best, "p999_ms")][2] < lo:
                    cell = f"**{cell}**"
                    lost[p].append(n)
                elif all(iv[(r, "p999_ms")][1] > hi for r in refs):
                    won[p].append(n)
            t = iv.get((p, "time_to_fair_s"))
            if t and t[0] == t[0]:  # NaN where no backend comes back
                cell += " ↺" + ("never" if t[0] == float("inf") else f"{t[0]:.0f} s")
            cells.append(cell)
        L.append("| " + " | ".join(cells) + " |")
    L.append("")
    L.append(
        "Per variation: the scenarios where the best reference beats it beyond the intervals at p99.9, "
        "those where it beats every reference beyond the intervals, and its worst p99.9 as a multiple of the "
        "best reference's (medians), with the scenario.\n"
    )
    L.append("| variation | beaten by the best reference | beats every reference | worst p99.9 / best reference |")
    L.append("|---|---|---|---|")
    for p, _ in VARIANTS:
        L.append(
            f"| `{p}` | {len(lost[p])}: {', '.join(lost[p]) or '–'} | {len(won[p])}: {', '.join(won[p]) or '–'} "
            f"| {worst[p][0]:.2f}× ({worst[p][1]}) |"
        )
    L.append("")
    ff = data.get("fail-fast")
    if ff:
        L.append("### A backend that fails fast\n")
        L.append(
            "`fail-fast`: one backend of 20 answers 90 % of its calls at once with an error, so it looks fast. "
            f"The share of measured calls that failed, median [{100 * coverage(seeds):.1f} % interval] over the "
            "seeds, and the share "
            "sent to that backend. The default has the error-aware cost (`errorPenalty` 1: cost "
            "`rtt / (1 − e)`, `e` the share of failures, the expected time to a success if failures were "
            "retried), in which each answer weighs at least 1/10 (`errorSamples` 10), and a failure never "
            "lowers the RTT estimate (`failures: hold`); `pe_no_errors` is the default without the error-aware "
            "cost (`errorPenalty` 0), `pe_failures_sample` the default before the two failure rules, "
            "`pe_error_samples_0` the default without `errorSamples`; `od(...)` wraps a policy in outlier "
            "detection as the scenario configures it.\n"
        )
        L.append("| policy | failed | to the failing backend | p99.9 ms |")
        L.append("|---|---|---|---|")
        for p in FAIL_FAST:
            if (p, "error_share") not in ff:
                continue
            e, s_, t = ff[(p, "error_share")], ff[(p, "slow_share")], ff[(p, "p999_ms")]
            L.append(
                f"| `{p}` | {100 * e[0]:.3f} % [{100 * e[1]:.3f}, {100 * e[2]:.3f}] | {100 * s_[0]:.2f} % | {t[0]:.2f} |"
            )
        L.append("")
    return L


# The grid's policies: the variations, then the references a variation is compared with.
GRID_VARIANTS = ["peak_ewma", "pe_tau_5s", "pe_tau_20s", "pe_choices_3", "pe_blend", "pe_blend_5s",
                 "pe_samples_100", "pe_samples_1000",
                 "pe_as_first_written", "pe_first_written_rtt_1ms", "pe_first_written_rtt_100ms"]
GRID_REFS = [("pe_tower", "tower"), ("finagle_peak_ewma", "Finagle"), ("envoy_peak_ewma", "Envoy")]


def read_points(path):
    """A sweep over client channels, fleet size and load: its rows by (point, policy), the points
    in file order and the seeds."""
    rows, points, seeds = {}, [], 0
    with open(path) as f:
        for r in csv.DictReader(f):
            key = (int(r["workload.clients"]), int(r["backends"]), float(r["workload.utilization"]))
            if key not in points:
                points.append(key)
            rows[(key, r["policy"])] = r
            seeds = int(r["seeds"])
    return rows, points, seeds


def verdict_table(rows, points, variants):
    """Per variation and metric: the points where the best reference (lowest median) is lower
    beyond the intervals, the points where the variation is lower than every reference beyond the
    intervals, the worst ratio to the best reference, and the range of its share to the faulty
    backend. Returns the table's lines and, per variation, the points it loses at p99.9."""
    L = ["| variation | p99: beaten / beats all / worst | p99.9: beaten / beats all / worst | share to the faulty backend, range |"]
    L.append("|---|---|---|---|")
    lost_at = {}
    for p in variants:
        cells = [f"`{p}`"]
        for m in ("p99_ms", "p999_ms"):
            beaten, beats, worst = [], 0, (0.0, None)
            for k in points:
                if (k, p) not in rows:
                    continue
                r = rows[(k, p)]
                refs = [rows[(k, ref)] for ref, _ in GRID_REFS if (k, ref) in rows]
                best = min(refs, key=lambda x: float(x[m]))
                ratio = float(r[m]) / float(best[m])
                if ratio > worst[0]:
                    worst = (ratio, k)
                if float(best[m + "_hi"]) < float(r[m + "_lo"]):
                    beaten.append(k)
                elif all(float(x[m + "_lo"]) > float(r[m + "_hi"]) for x in refs):
                    beats += 1
            if m == "p999_ms":
                lost_at[p] = beaten
            where = f" ({worst[1][0]} ch., {worst[1][1]} b., {100 * worst[1][2]:.0f} %)" if worst[1] else ""
            cells.append(f"{len(beaten)} / {beats} / {worst[0]:.2f}×{where}")
        shares = [100 * float(rows[(k, p)]["slow_share"]) for k in points if (k, p) in rows]
        cells.append(f"{min(shares):.2f}–{max(shares):.2f} %" if shares else "–")
        L.append("| " + " | ".join(cells) + " |")
    L.append("")
    return L, lost_at


def point_name(k):
    return f"{k[0]} ch./{k[1]} b./{100 * k[2]:.0f} %"


def grid_section(d):
    """The grid: per variation, at how many points the best reference's p99 or p99.9 interval lies
    wholly below its own, at how many it beats every reference, and its worst p99.9 ratio."""
    path = os.path.join(d, "grid", "sweep.csv")
    if not os.path.exists(path):
        return []
    rows, points, seeds = read_points(path)
    L = ["## The grid: client channels × fleet size × load × parameters\n"]
    L.append(
        "`scenarios/design/grid.toml`: one-slow (one backend 10× slower) over 1, 20 and 200 client "
        "channels × 5 and 20 backends × 5 % and 50 % of the fleet's capacity (12 points), 10 s of warm-up "
        f"and 20 s measured, {seeds} seeds per point ({100 * coverage(seeds):.1f} % intervals). The default "
        "at `decayTime` 5, 10 (its default) and 20 s and at `choiceCount` 3; the semantics as first "
        "written at `defaultRtt` 1, 30 and 100 ms (no other semantics reads it); a plain EWMA "
        "(`pe_blend`, and `pe_blend_5s` blending over 5 s); the default with a decay adapted to each "
        "endpoint's rate of answers (`pe_samples_100`, `pe_samples_1000`: `blendSamples`); tower's "
        "(`pe_tower`), Finagle's and Envoy's algorithms. Per variation and metric: "
        "the points where the best reference (lowest median) is lower beyond the intervals, the points "
        "where the variation is lower than every reference beyond the intervals, and the worst ratio of "
        "its median to the best reference's.\n"
    )
    table, lost_at = verdict_table(rows, points, GRID_VARIANTS)
    L += table
    L.append(
        "Where the default (`peak_ewma`) is beaten at p99.9: "
        + (", ".join(point_name(k) for k in lost_at.get("peak_ewma", [])) or "nowhere")
        + ".\n"
    )
    return L


# The small, busy fleets: the variations held against the references there.
SMALL_BUSY_VARIANTS = ["peak_ewma", "pe_blend", "pe_blend_5s", "pe_samples_100", "pe_samples_1000"]
SMALL_BUSY = [
    ("small-busy", "one backend 10× slower for the whole run (steady slowness)"),
    ("small-busy-gc", "one backend pausing 150 ms every 2 s (GC pauses: intermittent slowness)"),
]


def small_busy_section(d):
    """Small, busy fleets with steady and with intermittent slowness: where the peak jump, a plain
    EWMA and the rate-adapted decay each lose to the best reference."""
    found = [(n, what) for n, what in SMALL_BUSY if os.path.exists(os.path.join(d, n, "sweep.csv"))]
    if not found:
        return []
    L = ["## Small, busy fleets: the jump, the blend and a rate-adapted decay\n"]
    for name, what in found:
        rows, points, seeds = read_points(os.path.join(d, name, "sweep.csv"))
        backends = sorted({k[1] for k in points})
        utils = sorted({k[2] for k in points})
        clients = sorted({k[0] for k in points})
        L.append(
            f"**{name}** ([`scenarios/design/{name}.toml`](../../scenarios/design/{name}.toml)): {what}; "
            f"{', '.join(map(str, clients))} client channels × {', '.join(map(str, backends))} backends × "
            f"{', '.join(f'{100 * u:.0f}' for u in utils)} % of the fleet's capacity ({len(points)} points), "
            f"{seeds} seeds per point. Columns as in the grid.\n"
        )
        table, lost_at = verdict_table(rows, points, SMALL_BUSY_VARIANTS)
        L += table
        for p in SMALL_BUSY_VARIANTS:
            if lost_at.get(p):
                L.append(f"- `{p}` is beaten at p99.9 at " + ", ".join(point_name(k) for k in lost_at[p]) + ".")
        L.append("")
    return L


# The recovery scenario's label of a canonical variation, where it differs.
RECOVERY_LABEL = {"pe_blend": "pe_penalty_pick5k_blend", "pe_tower": None, "pe_no_errors": None}


def tradeoff_section(d, rec):
    """The trade-off chart: worst p99.9 over the canonical scenarios (as a multiple of the best of
    tower's, Finagle's and Envoy's, per scenario) against the recovery time, per variation and
    reference."""
    base = os.path.join(d, "canonical")
    if not os.path.isdir(base):
        return []
    names = [n for n in sorted(os.listdir(base)) if os.path.exists(os.path.join(base, n, "intervals.csv"))]
    data = [intervals(os.path.join(base, n, "intervals.csv")) for n in names]
    pts = []
    for p, _ in VARIANTS + [("finagle_peak_ewma", ""), ("envoy_peak_ewma", "")]:
        label = RECOVERY_LABEL.get(p, p)
        if label is None or (label, "time_to_fair_s") not in rec:
            continue
        worst = 0.0
        for iv in data:
            refs = [r for r, _ in CANON_REFS if (r, "p999_ms") in iv]
            if (p, "p999_ms") not in iv or not refs:
                continue
            best = min(iv[(r, "p999_ms")][0] for r in refs)
            worst = max(worst, iv[(p, "p999_ms")][0] / best)
        pts.append((p, rec[(label, "time_to_fair_s")][0], worst))
    if not pts:
        return []
    tradeoff_svg(d, pts)
    L = ["## The trade-off\n"]
    L.append(
        "![worst p99.9 against recovery](tradeoff.svg)\n\n"
        "Per variation and reference: its worst p99.9 over the canonical scenarios as a multiple of the best "
        "of tower's, Finagle's and Envoy's in that scenario (section *Every canonical scenario*; a reference "
        "is compared with the best of the others and itself), against the seconds a healed backend takes to "
        "carry 80 % of its share again in `recovery` (median over seeds). Down and left is better; the "
        "default is red. A plain EWMA steadies the estimate only by forgetting slowly (far right) or loses "
        "stalls (high); Envoy's never gives a healed backend back.\n"
    )
    L.append("| policy | recovery s | worst p99.9 / best reference |\n|---|---|---|")
    for p, x, y in pts:
        L.append(f"| `{p}` | {'never' if x == float('inf') else f'{x:.0f}'} | {y:.2f}× |")
    L.append("")
    return L


def tradeoff_svg(d, points):
    """A scatter of the trade-off, as plain SVG (no plotting library): per variation, the seconds
    a healed backend takes to get its share back (`recovery`) against its worst p99.9 over the
    canonical scenarios as a multiple of the best reference's. `points`: (label, x, y); x may be
    inf (never back within the run), drawn at the right edge."""
    W, H, ml, mr, mt, mb = 720, 420, 70, 170, 40, 50
    xs = [x for _, x, _ in points if x != float("inf")]
    xmax = max(xs + [1.0]) * 1.15
    ymax = max(y for _, _, y in points) * 1.1
    ymin = min(1.0, min(y for _, _, y in points)) * 0.95
    sx = lambda x: ml + (W - ml - mr) * (min(x, xmax) / xmax)
    sy = lambda y: mt + (H - mt - mb) * (1 - (y - ymin) / (ymax - ymin))
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="{W / 2}" y="20" text-anchor="middle" font-size="14">The trade-off: worst p99.9 against the return of a healed backend</text>',
           f'<line x1="{ml}" y1="{H - mb}" x2="{W - mr}" y2="{H - mb}" stroke="black"/>',
           f'<line x1="{ml}" y1="{mt}" x2="{ml}" y2="{H - mb}" stroke="black"/>',
           f'<text x="{(ml + W - mr) / 2}" y="{H - 12}" text-anchor="middle">recovery: seconds until a healed backend carries 80 % of its share (right edge: never)</text>',
           f'<text x="16" y="{(mt + H - mb) / 2}" text-anchor="middle" transform="rotate(-90 16 {(mt + H - mb) / 2})">worst p99.9 / best reference</text>']
    for k in range(6):
        x = xmax * k / 5
        out.append(f'<text x="{sx(x):.1f}" y="{H - mb + 16}" text-anchor="middle">{x:.0f}</text>')
        y = ymin + (ymax - ymin) * k / 5
        out.append(f'<text x="{ml - 6}" y="{sy(y) + 4:.1f}" text-anchor="end">{y:.2f}</text>')
        out.append(f'<line x1="{ml}" y1="{sy(y):.1f}" x2="{W - mr}" y2="{sy(y):.1f}" stroke="#eee"/>')
    for label, x, y in points:
        cx, cy = sx(x), sy(y)
        colour = "#d62728" if label == "peak_ewma" else "#1f77b4"
        out.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="5" fill="{colour}"/>')
        out.append(f'<text x="{cx + 8:.1f}" y="{cy + 4:.1f}">{label}</text>')
    out.append("</svg>")
    with open(os.path.join(d, "tradeoff.svg"), "w") as f:
        f.write("\n".join(out) + "\n")


# Point 5 of the issue: the minimal policy against per-method estimates.
METHOD_POLICIES = ["peak_ewma", "pe_per_method", "pe_samples_100", "finagle_peak_ewma", "envoy_peak_ewma",
                   "least_request", "round_robin", "oracle"]
# Each methods scenario is measured three ways: all calls, then one method's calls alone.
METHOD_MEASURES = [("", "all calls"), ("-light", "light calls alone"), ("-heavy", "heavy calls alone")]
# The variations held against the default in the verdicts.
METHOD_VARIANTS = [("pe_per_method", "per-method estimates", "are"),
                   ("pe_samples_100", "the rate-adapted decay (`blendSamples` 100)", "is")]


def methods_section(d):
    """The methods scenarios: p99 and p99.9 per utilization for all calls and for each method's
    calls alone, the share of calls sent to the backend that is slow on the heavy method, and where
    per-method estimates or the rate-adapted decay beat the default (or lose to it) beyond the
    intervals."""
    L = ["## What the minimal policy gives up: per-method estimates and an adaptive decay\n"]
    L.append(
        "The proposal's author ran a superset with per-method scoring and adaptive decay, and proposes the "
        "minimal policy. Here 90 % of the calls are a light method (half the backend's service time) and 10 % a "
        "heavy one (ten times it); `pe_per_method` is the default with `lblabAblation.perMethod`: one estimate "
        "and one outstanding count per endpoint and method, as if each method had its own channel; "
        "`pe_samples_100` is the default with a decay adapted to each endpoint's rate of answers "
        "(`blendSamples` 100: a sample weighs at least 1/100, so a busy endpoint forgets a heavy answer "
        "within about 100 newer ones). "
        "**methods-mixed**: 20 equal backends, no fault. **methods-slow-heavy**: one backend is 10× slower on "
        "the heavy method only (a slow dependency behind it), its light calls as fast as anywhere. Each at "
        "10, 40 and 60 % of the fleet's capacity, measured three times: all calls, the light calls alone and "
        "the heavy calls alone (`workload.measured_method`; the other method still loads the fleet). Cells: "
        "p99 · p99.9 ms [interval of the p99.9]; with the fault, also the share of the measured calls sent to "
        "the backend with the slow method (its fair share is 5 %; the oracle sends it light calls only).\n"
    )
    for name in ("methods-mixed", "methods-slow-heavy"):
        for suffix, label in METHOD_MEASURES:
            path = os.path.join(d, name + suffix, "sweep.csv")
            if not os.path.exists(path):
                continue
            rows = {}
            with open(path) as f:
                for r in csv.DictReader(f):
                    rows[(float(r["workload.utilization"]), r["policy"])] = r
            utils = sorted({u for u, _ in rows})
            L.append(f"**{name}, {label}**\n")
            L.append("| policy | " + " | ".join(f"{100 * u:.0f} % of capacity" for u in utils) + " |")
            L.append("|" + "---|" * (1 + len(utils)))
            for p in METHOD_POLICIES:
                cells = [f"`{p}`"]
                for u in utils:
                    r = rows.get((u, p))
                    if r is None:
                        cells.append("")
                        continue
                    cell = (
                        f"{float(r['p99_ms']):.1f} · {float(r['p999_ms']):.1f} "
                        f"[{float(r['p999_ms_lo']):.1f}, {float(r['p999_ms_hi']):.1f}]"
                    )
                    if name != "methods-mixed":
                        cell += f" · {100 * float(r['slow_share']):.2f} %"
                    cells.append(cell)
                L.append("| " + " | ".join(cells) + " |")
            L.append("")
            for variant, vlabel, verb in METHOD_VARIANTS:
                verdicts = []
                for u in utils:
                    a, b = rows.get((u, "peak_ewma")), rows.get((u, variant))
                    if a is None or b is None:
                        continue
                    for m, mlabel in (("p99_ms", "p99"), ("p999_ms", "p99.9")):
                        if float(b[m + "_hi"]) < float(a[m + "_lo"]):
                            verdicts.append(
                                f"at {100 * u:.0f} % {vlabel} {verb} lower at {mlabel} beyond the intervals "
                                f"({float(b[m]):.1f} against {float(a[m]):.1f} ms, {float(a[m]) / float(b[m]):.3f}×)"
                            )
                        elif float(a[m + "_hi"]) < float(b[m + "_lo"]):
                            verdicts.append(
                                f"at {100 * u:.0f} % the default is lower than {vlabel} at {mlabel} beyond the "
                                f"intervals ({float(a[m]):.1f} against {float(b[m]):.1f} ms)"
                            )
                L.append(
                    f"- {vlabel}: "
                    + ("; ".join(verdicts) if verdicts else "the default and they agree within the intervals at every load")
                    + ".\n"
                )
    return L


def main():
    d = sys.argv[1]
    cold = intervals(os.path.join(d, "cold-four", "intervals.csv"))
    sw = sweep(os.path.join(d, "clients", "sweep.csv"))
    clients = sorted({x for x, _ in sw})
    rec = intervals(os.path.join(d, "recovery", "intervals.csv"))
    scale = intervals(os.path.join(d, "scale-out", "intervals.csv"))
    with open(os.path.join(d, "cold-four", "intervals.csv")) as f:
        seeds = int(next(csv.DictReader(f))["seeds"])
    L = []
    L.append("# The design search: peak_ewma_experimental's semantics decided by measurement\n")
    L.append(
        "Generated by `scripts/design-search.sh` (scenarios in [`scenarios/design/`](../../scenarios/design/)), "
        f"{seeds} seeds per scenario, simulated. Medians over seeds, with the {100 * coverage(seeds):.1f} % "
        "interval of the median (distribution-free) in brackets where the simulator computes one. "
        "τ = `decayTime` = 10 s throughout.\n"
    )
    L.append(
        "**The decision** ([`docs/design.md`](../../docs/design.md#the-semantics-decided-by-measurement)): "
        "`peak_ewma_experimental`'s default is `pe_penalty_pick5k`, Finagle's first estimate with the idle "
        "decay on the pick clock (`idlePicks` 5000) and the peak jump, with the error-aware cost "
        "(`errorPenalty` 1, section *A backend that fails fast*) and a wall-clock bound on the idle decay "
        "(`idleMaxTime` 60 s, section *Recovery against the number of clients*), the row `peak_ewma` below. "
        "It learns a cold start and a joining backend from one call each, keeps its p99.9 within a millisecond "
        "of Envoy's up to 50 client channels, gives a healed backend its traffic back within 2 × `decayTime` "
        "when each client picks hundreds of times a second and within about two minutes however many clients "
        "share the load, and "
        "of the variations that do all of that it has the smallest worst-case loss to the "
        "best reference over every canonical scenario (section *Every canonical scenario*). A plain EWMA "
        "(`peak: blend`) has the same worst case but never gives a healed, restarted or cold backend its share "
        "back within the runs; one that blends fast enough to do so (`blendTime` 2.5 s) forgets GC pauses "
        "and loses them by 3×. Envoy's frozen estimate never gives a healed backend back, and that is where "
        "its lower p99.9 at 1 to 200 channels and in the steady scenarios comes from.\n"
    )
    L.append(
        "These are the first two rounds, measured with the default they decided (the row `peak_ewma`, "
        "and every `lblabAblation` label a variation of it). The third round "
        "([`candidates/`](candidates/README.md)) changed the default: the first estimate 0 with a "
        "stall-aware cost in place of Finagle's penalty, and a peak only out of a stall; "
        "`previous` there is the default measured here.\n"
    )
    L.append("| label | what it is |\n|---|---|")
    for p, what in POLICIES:
        L.append(f"| `{p}` | {what} |")
    L.append("")
    L.append("## Cold start, many clients, recovery, scale-out\n")
    L.append(
        "- **cold-four**: 3 backends at ~1.2 ms, one at ~21 ms, 1 client at 200 req/s, no warm-up: p99 and "
        "p99.9 of the first 10 s.\n"
        f"- **clients N**: one-slow (20 backends, one 10× slower for the whole run, 2,000 req/s in all) with N "
        "client channels, each its own policy instance: p99.9, and the share of calls sent to the slow backend.\n"
        "- **recovery**: one-slow whose slow backend heals at 30 s (4 clients): `time_to_fair_s`, the seconds "
        "until it carries 80 % of its fair share (3-s average), median [interval] over seeds; `never` = not "
        "within the remaining 48 s.\n"
        f"- **scale-out**: 4 of 20 backends join at 20 s (their connections come up after gRPC's reconnect "
        "backoff, a few seconds): seconds until they carry their share. The oracle's time is the floor.\n"
    )
    head = "| policy | cold p99 ms | cold p99.9 ms | " + " | ".join(f"p99.9 ms, {c} clients" for c in clients)
    head += " | recovery | scale-out |"
    L.append(head)
    L.append("|" + "---|" * (5 + len(clients)))
    for p, _ in POLICIES:
        if (p, "p99_ms") not in cold:
            continue
        c99, c999 = cold[(p, "p99_ms")], cold[(p, "p999_ms")]
        cells = [f"`{p}`", f"{c99[0]:.2f} [{c99[1]:.2f}, {c99[2]:.2f}]", f"{c999[0]:.2f} [{c999[1]:.2f}, {c999[2]:.2f}]"]
        for c in clients:
            r = sw[(c, p)]
            cells.append(
                f"{float(r['p999_ms']):.1f} [{float(r['p999_ms_lo']):.1f}, {float(r['p999_ms_hi']):.1f}]"
                f" · {100 * float(r['slow_share']):.3f} %"
            )
        cells += [fmt_time(rec[(p, "time_to_fair_s")]), fmt_time(scale[(p, "time_to_fair_s")])]
        L.append("| " + " | ".join(cells) + " |")
    L.append("")
    L.append("## Where each variation is beaten by a reference beyond the intervals\n")
    L.append(
        "A cell lists the references (Finagle, Envoy) whose interval of p99 or p99.9 lies wholly below the "
        "variation's at that point; `–` means none does.\n"
    )
    L.append("| policy | cold-four | " + " | ".join(f"{c} clients" for c in clients) + " |")
    L.append("|" + "---|" * (2 + len(clients)))
    short = {"finagle_peak_ewma": "Finagle", "envoy_peak_ewma": "Envoy"}
    for p, _ in POLICIES:
        if p in REFERENCES or p in ("oracle", "least_request") or (p, "p99_ms") not in cold:
            continue
        cells = [f"`{p}`"]
        lost = [
            f"{short[ref]} {m[:-3].replace('p999', 'p99.9')}"
            for ref in REFERENCES
            for m in ("p99_ms", "p999_ms")
            if cold[(ref, m)][2] < cold[(p, m)][1]
        ]
        cells.append(", ".join(lost) or "–")
        for c in clients:
            r = sw[(c, p)]
            lost = [
                f"{short[ref]} {m[:-3].replace('p999', 'p99.9')}"
                for ref in REFERENCES
                for m in ("p99_ms", "p999_ms")
                if float(sw[(c, ref)][m + "_hi"]) < float(r[m + "_lo"])
            ]
            cells.append(", ".join(lost) or "–")
        L.append("| " + " | ".join(cells) + " |")
    L.append("")
    L += recovery_clients_section(d, sw)
    L += methods_section(d)
    L += grid_section(d)
    L += small_busy_section(d)
    L += tradeoff_section(d, rec)
    L += canonical_section(d, seeds)
    L += real_section(d)
    with open(os.path.join(sys.argv[1], "README.md"), "w") as f:
        f.write("\n".join(L))


if __name__ == "__main__":
    main()
