"""Writes results/interop/python.md from the raw files of scripts/interop-python.sh.

For each scenario: grpcio's runs (grpcio-<label>.json, from echo_client.py) and lblab's
(lblab/summary.json and lblab/targets.csv, one `lblab loadgen` run of the same configs), with
the fleet's names and addresses from backend.txt. Every number on the page is read from those
files; the wording of each verdict follows the numbers.

    python report.py --dir results/interop/python --out results/interop/python.md one-slow ...
"""

import argparse
import csv
import json
import os

# lblab's agreement rule (record/src/compare.rs): within 20 % of the second, or 1 ms.
RELATIVE = 0.20
ABSOLUTE_MS = 1.0
# Traffic shares agree when no backend's share differs by more than this (absolute).
SHARE_TOLERANCE = 0.03

# The group whose share each scenario's tables report.
SLOW = {"one-slow": "slow/", "gc-pauses": "gc/", "heterogeneous": "old/"}


def agrees(a, b):
    return abs(a - b) <= max(ABSOLUTE_MS, RELATIVE * abs(b))


def fleet(dir):
    """(name, address) of every backend, from the lines `lblab backend` printed."""
    out = []
    with open(os.path.join(dir, "backend.txt")) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 2 and "/" in parts[0] and ":" in parts[1]:
                out.append((parts[0], parts[1]))
    return out


def lblab_runs(dir, backends):
    summary = json.load(open(os.path.join(dir, "lblab", "summary.json")))
    by_addr = {a: n for n, a in backends}
    sends = {}
    with open(os.path.join(dir, "lblab", "targets.csv")) as f:
        for r in csv.DictReader(f):
            name = by_addr.get(r["address"], r["target"])
            sends.setdefault(r["policy"], {})[name] = int(r["sends"])
    notes = dict((k, v) for k, v in summary.get("notes", []))
    runs = {}
    for row in summary["rows"]:
        p = row["policy"]
        runs[p] = {
            "requests": row["requests"],
            "ok": row["ok"],
            "errors": row["errors"],
            "p50_ms": row["p50_ms"],
            "p99_ms": row["p99_ms"],
            "per_backend": sends.get(p, {}),
            "cpu_per_call_us": float(notes.get(f"{p}: client cpu per call us", "nan")),
            "dispatch_lateness_p99_ms": float(notes.get(f"{p}: dispatch lateness p99 us", "nan")) / 1000,
        }
    return runs


def label_of(config):
    """The label lblab loadgen gives a config (its first policy, with the child for wrappers)."""
    (name, body), = config["loadBalancingConfig"][0].items()
    child = body.get("childPolicy") if isinstance(body, dict) else None
    if child:
        (c, _), = child[0].items()
        return f"{name}({c})"
    return name


def shares(per_backend, backends):
    total = sum(per_backend.values())
    return {n: (per_backend.get(n, 0) / total if total else 0.0) for n, _ in backends}


def pct(x):
    return f"{100 * x:.1f} %"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--command", required=True)
    ap.add_argument("--rate", required=True)
    ap.add_argument("--duration", required=True)
    ap.add_argument("--warmup", required=True)
    ap.add_argument("--clients", required=True)
    ap.add_argument("scenarios", nargs="+")
    args = ap.parse_args()

    version = None
    sections = []
    lacks = set()
    verdicts = []
    csv_rows = []
    for scenario in args.scenarios:
        dir = os.path.join(args.dir, scenario)
        backends = fleet(dir)
        slow = SLOW.get(scenario, "slow/")
        slow_count = sum(1 for n, _ in backends if n.startswith(slow))
        lblab = lblab_runs(dir, backends)
        lines = [f"## {scenario}", ""]
        lines.append(
            f"{len(backends)} backends, {slow_count} of them in `{slow.rstrip('/')}` (fair share "
            f"{pct(slow_count / max(len(backends), 1))}). Raw files: [`python/{scenario}/`](python/{scenario}/)."
        )
        lines.append("")
        lines.append(
            f"| client | policy | requests | ok | errors | p50 ms | p99 ms | share to `{slow}` | CPU µs/call | dispatch lateness p99 ms |"
        )
        lines.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        pairs = []
        for name in sorted(os.listdir(dir)):
            if not (name.startswith("grpcio-") and name.endswith(".json")):
                continue
            label = name[len("grpcio-"):-len(".json")]
            text = open(os.path.join(dir, name)).read().strip()
            g = json.loads(text.splitlines()[-1]) if text else {"error": "no output"}
            if "error" in g:
                lacks.add(label)
                lines.append(f"| grpcio | {label} | — | — | — | — | — | — | — | — |")
                continue
            version = g["grpcio"]
            s = shares(g["per_backend"], backends)
            slow_share = sum(v for n, v in s.items() if n.startswith(slow))
            lines.append(
                f"| grpcio {g['grpcio']} | {label} | {g['requests']} | {g['ok']} | {g['errors']} | "
                f"{g['p50_ms']:.2f} | {g['p99_ms']:.2f} | {pct(slow_share)} | {g['cpu_per_call_us']:.0f} | "
                f"{g['dispatch_lateness_p99_ms']:.2f} |"
            )
            lb = lblab.get(label_of(g["service_config"]))
            if lb:
                pairs.append((label, g, s, lb))
        for label, lb in lblab.items():
            s = shares(lb["per_backend"], backends)
            slow_share = sum(v for n, v in s.items() if n.startswith(slow))
            lines.append(
                f"| lblab (tonic) | {label} | {lb['requests']} | {lb['ok']} | {lb['errors']} | "
                f"{lb['p50_ms']:.2f} | {lb['p99_ms']:.2f} | {pct(slow_share)} | {lb['cpu_per_call_us']:.0f} | "
                f"{lb['dispatch_lateness_p99_ms']:.2f} |"
            )
        lines.append("")
        lines.append("| policy | p50 ms grpcio vs lblab | agree | p99 ms grpcio vs lblab | agree | largest per-backend share difference | shares agree |")
        lines.append("|---|---|---|---|---|---|---|")
        for label, g, s, lb in pairs:
            ls = shares(lb["per_backend"], backends)
            diff, worst = max(((abs(s[n] - ls[n]), n) for n, _ in backends), default=(0.0, "-"))
            a50, a99, ash = agrees(g["p50_ms"], lb["p50_ms"]), agrees(g["p99_ms"], lb["p99_ms"]), diff <= SHARE_TOLERANCE
            verdicts.append((scenario, label, a50, a99, ash))
            slow_g = sum(v for n, v in s.items() if n.startswith(slow))
            slow_l = sum(v for n, v in ls.items() if n.startswith(slow))
            csv_rows.append(
                ["grpcio", g["grpcio"], scenario, label, label_of(g["service_config"]), slow,
                 f"{slow_g:.4f}", f"{slow_l:.4f}", f"{g['p50_ms']:.2f}", f"{lb['p50_ms']:.2f}",
                 f"{g['p99_ms']:.2f}", f"{lb['p99_ms']:.2f}", str(a50).lower(), str(a99).lower(),
                 str(abs(slow_g - slow_l) <= SHARE_TOLERANCE).lower()]
            )
            yes = lambda b: "yes" if b else "**no**"
            lines.append(
                f"| {label} | {g['p50_ms']:.2f} vs {lb['p50_ms']:.2f} | {yes(a50)} | {g['p99_ms']:.2f} vs "
                f"{lb['p99_ms']:.2f} | {yes(a99)} | {100 * diff:.1f} points (`{worst}`) | {yes(ash)} |"
            )
        lines.append("")
        sections.append("\n".join(lines))

    n = len(verdicts)
    share_ok = sum(1 for v in verdicts if v[4])
    p50_ok = sum(1 for v in verdicts if v[2])
    p99_ok = sum(1 for v in verdicts if v[3])
    head = [
        "# grpcio beside lblab on the same fleet",
        "",
        "<!-- Generated by scripts/interop-python.sh (interop/python/report.py); do not edit by hand. -->",
        "",
        f"Each scenario's fleet is one `lblab backend` process (tonic servers on loopback). Against it, one "
        f"after the other, Python [grpcio](https://pypi.org/project/grpcio/) {version} (gRPC C-core; "
        f"[`interop/python/echo_client.py`](../../interop/python/echo_client.py)) runs each policy from its "
        f"service config, then `lblab loadgen` runs lblab's implementation of the very same configs. Every "
        f"run: open loop, Poisson arrivals at {args.rate}/s over {args.clients} clients (each its own "
        f"channel), {args.warmup} s warm-up then {args.duration} s measured, latency from the intended send "
        f"time. grpcio's weighted_round_robin takes its weights from the per-call ORCA reports in lblab's "
        f"`endpoint-load-metrics-bin` trailers, as lblab's does.",
        "",
        "Regenerate:",
        "",
        "```sh",
        args.command.strip(),
        "```",
        "",
        "**Agreement rules.** Two p50s (or p99s) agree when they are within ±20 % of the second or within "
        "1 ms (lblab's sim-vs-real rule). Traffic shares agree when no backend's share differs by more than "
        f"{100 * SHARE_TOLERANCE:.0f} points. *Share* counts, for grpcio, the OK replies each backend "
        "answered (each reply names its backend); for lblab, the calls sent to it after the warm-up "
        "(`targets.csv`).",
        "",
        f"**Verdict.** Traffic shares agree in {share_ok} of {n} policy-and-scenario pairs; p50s in "
        f"{p50_ok} of {n}; p99s in {p99_ok} of {n}."
        + (
            f" grpcio lacks {', '.join(sorted(lacks))}: C-core does not implement it, and a channel "
            "whose service config names it never becomes READY."
            if lacks
            else ""
        ),
        "",
        "**Why latencies may differ where shares agree.** The client is part of every latency: grpcio's "
        "Python client spends several times lblab's CPU per call (the table's CPU column, the whole "
        "process over its calls) and dispatches later (its dispatch-lateness column) than lblab's, and "
        "both share two cores with the fleet. The shares are the policy's doing; the latencies are the "
        "policy's plus each client's own cost. Runs are seconds long, so p99s rest on a few dozen calls.",
        "",
        "**An interop finding.** C-core's default `:authority` for a target `ipv4:a:p,b:q` is the address "
        "list itself, which is not a valid authority (a port cannot hold a comma); hyper's HTTP/2 server, "
        "lblab's backend, resets every such stream (RST_STREAM PROTOCOL_ERROR, seen by grpcio as INTERNAL). "
        "The client sets `grpc.default_authority`, as a deployment naming its service would.",
        "",
    ]
    with open(args.out, "w") as f:
        f.write("\n".join(head + sections))
    # One row per compared pair, for the evidence document (the slow group's shares compared).
    with open(args.out[: -len(".md")] + ".csv", "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["client", "version", "scenario", "policy", "lblab_policy", "slow_group", "share",
                    "lblab_share", "p50_ms", "lblab_p50_ms", "p99_ms", "lblab_p99_ms", "p50_agrees",
                    "p99_agrees", "shares_agree"])
        w.writerows(csv_rows)


if __name__ == "__main__":
    main()
