#!/usr/bin/env python3
"""Each cost goal of issue "performance, round two", met or not, with its ratio, from the files
scripts/bench.sh writes into one folder (default results/bench): prints goals.txt's text.

    python3 scripts/bench-goals.py results/bench > results/bench/goals.txt

A goal whose file is missing is said to be unmeasured, not met.
"""

import csv
import pathlib
import re
import statistics
import sys

folder = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "results/bench")
lines = []


def say(goal, measured, met):
    verdict = "unmeasured" if met is None else ("met" if met else "NOT met")
    lines.append(f"{verdict:10} {goal}: {measured}")


# 1. The default's shared pick + completion beside round_robin and least_request.
pick = folder / "shared-pick.csv"
if pick.exists():
    ns = {}
    for row in csv.DictReader(pick.open()):
        ns[(row["policy"], int(row["threads"]), int(row["endpoints"]))] = float(row["median_ns"])
    sizes = sorted({e for (_, t, e) in ns if t == 1})
    for e in sizes:
        rr, pe = ns.get(("round_robin", 1, e)), ns.get(("peak_ewma", 1, e))
        floor = ns.get(("peak_ewma_floor", 1, e))
        if rr and pe:
            # The yardstick: tower's estimate in three relaxed atomics, the least any peak-EWMA
            # p2c pick does (policy/benches/shared_pick.rs).
            beside = f" (the peak-EWMA floor: {floor / rr:.2f}x)" if floor else ""
            say(f"pick, one thread, {e} endpoints: peak_ewma <= 3x round_robin",
                f"{pe:.1f} / {rr:.1f} ns = {pe / rr:.2f}x{beside}", pe / rr <= 3.0)
    for e in sizes:
        try:
            pe = ns[("peak_ewma", 2, e)] / ns[("peak_ewma", 1, e)]
            lr = ns[("least_request", 2, e)] / ns[("least_request", 1, e)]
        except KeyError:
            continue
        say(f"pick, 1 -> 2 threads, {e} endpoints: peak_ewma grows no more than least_request",
            f"{pe:.2f}x against {lr:.2f}x", pe <= lr)
else:
    say("pick", "no shared-pick.csv", None)

# 2. The simulator against a base commit (BASE=04076bc scripts/bench.sh).
sim = folder / "sim-scaling-vs-base.txt"
if sim.exists():
    text = sim.read_text()
    base_rev = re.search(r"the scaling example, (\S+) \(base\)", text)
    runs = {}
    for m in re.finditer(r"^(base|head) backends=\s*(\d+) clients=\s*(\d+) (\S+)\s+median ([\d.]+) M", text, re.M):
        runs.setdefault((int(m[2]), int(m[3]), m[4]), {}).setdefault(m[1], []).append(float(m[5]))
    for backends in (20, 10_000):
        r = runs.get((backends, 4, "peak_ewma"), {})
        if "base" in r and "head" in r:
            b, h = statistics.median(r["base"]), statistics.median(r["head"])
            say(f"simulator, peak_ewma, {backends} backends, 4 clients: >= 2x "
                f"{base_rev[1] if base_rev else 'the base'}'s requests per CPU-second",
                f"{h:.2f} / {b:.2f} M = {h / b:.2f}x", h / b >= 2.0)
else:
    say("simulator", "no sim-scaling-vs-base.txt (BASE=04076bc scripts/bench.sh)", None)

# 3a. The load generator's CPU per call beside a minimal tonic client's (open loop).
minimal = folder / "loadgen-vs-minimal.txt"
if minimal.exists():
    ratios, with_deadline, paced = {}, {}, {}
    rate = spin = None
    base = None
    for line in minimal.read_text().splitlines():
        if m := re.match(r"rate (\d+)/s", line):
            rate = int(m[1])
        elif "minimal tonic client paced" in line:
            spin = "paced"
        elif "minimal tonic client with" in line:
            spin = "deadline"
        elif "minimal tonic client" in line:
            spin = None
        elif m := re.search(r"lblab loadgen \(round_robin, --spin (\S+)\)", line):
            spin = m[1]
        elif m := re.search(r"\(all threads\)\s+([\d.]+)", line):
            if spin is None:
                base = float(m[1])
            elif spin == "deadline":
                with_deadline[rate] = float(m[1])
            elif spin == "paced":
                paced[rate] = float(m[1])
            elif base:
                ratios.setdefault((rate, spin), []).append(float(m[1]) / base)
                if spin == "0us" and rate in with_deadline:
                    ratios.setdefault((rate, "vs deadline"), []).append(float(m[1]) / with_deadline[rate])
                if spin == "0us" and rate in paced:
                    ratios.setdefault((rate, "vs paced"), []).append(float(m[1]) / paced[rate])
    for (rate, spin), rs in sorted(ratios.items()):
        if spin != "0us":
            continue
        beside = ratios.get((rate, "vs deadline"))
        same_pacing = ratios.get((rate, "vs paced"))
        say(f"load generator, {rate} calls/s (default --spin 0us): CPU per call <= 1.5x a minimal tonic client's",
            "/".join(f"{r:.2f}x" for r in rs)
            + (f" (beside the minimal client with the same deadline: {'/'.join(f'{r:.2f}x' for r in beside)})" if beside else "")
            + (f" (beside it paced per call and with the deadline, as lblab loadgen: {'/'.join(f'{r:.2f}x' for r in same_pacing)})" if same_pacing else ""),
            max(rs) <= 1.5)
else:
    say("load generator CPU", "no loadgen-vs-minimal.txt", None)

# 3b. The load generator's calls per second beside h2load's (closed loop, --no-realtime).
h2 = folder / "loadgen-vs-h2load.txt"
if h2.exists():
    got = {"h2load": [], "minimal tonic": [], "lblab loadgen": []}
    for line in h2.read_text().splitlines():
        if m := re.match(r"\s+(h2load|minimal tonic|lblab loadgen):\s+(\d+) calls/s", line):
            got[m[1]].append(float(m[2]))
    if got["h2load"] and got["lblab loadgen"]:
        pairs = list(zip(got["lblab loadgen"], got["h2load"]))
        rs = [a / b for a, b in pairs]
        tonic = [a / b for a, b in zip(got["minimal tonic"], got["h2load"])]
        say("load generator, closed loop, --no-realtime: >= 0.8x h2load's calls/s",
            "/".join(f"{r:.2f}x" for r in rs)
            + (f" (a minimal tonic client: {'/'.join(f'{r:.2f}x' for r in tonic)})" if tonic else ""),
            statistics.median(rs) >= 0.8)
else:
    say("load generator calls/s", "no loadgen-vs-h2load.txt", None)

print("\n".join(lines))
