"""A gRPC client that lblab did not write: grpcio (gRPC C-core) calling lblab's Echo fleet.

It runs one policy, given as gRPC service-config JSON, the way any grpcio application would get
it (the `grpc.service_config` channel argument), over one channel to every backend at once
(target `ipv4:host:port,host:port,...`), open loop: Poisson arrivals at `--rate` for `--warmup`
plus `--duration` seconds, each call's latency counted from its intended send time (no
coordinated omission). Each reply names the backend that served it, which gives the traffic
share per backend. It prints one JSON object: counts, latency percentiles over the measured
window, calls per backend, how late the sends were, and the process's CPU time per call.

    python echo_client.py --targets 127.0.0.1:5000,127.0.0.1:5001 --rate 300 \
        --duration 10 --warmup 2 --service-config '{"loadBalancingConfig":[{"round_robin":{}}]}'
"""

import argparse
import json
import random
import resource
import sys
import threading
import time

import grpc

import echo_pb2


def percentile(sorted_values, q):
    if not sorted_values:
        return 0.0
    # The smallest value with at least q of the values at or below it (HdrHistogram's rule).
    rank = max(1, int(-(-q * len(sorted_values) // 1)))
    return sorted_values[min(rank, len(sorted_values)) - 1]


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--targets", required=True)
    ap.add_argument("--service-config", required=True)
    ap.add_argument("--rate", type=float, required=True)
    ap.add_argument("--duration", type=float, required=True)
    ap.add_argument("--warmup", type=float, default=0.0)
    ap.add_argument("--deadline", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--connect-wait", type=float, default=5.0)
    ap.add_argument("--clients", type=int, default=1, help="channels, each with its own policy")
    args = ap.parse_args()

    options = [
        ("grpc.service_config", args.service_config),
        # The service config above is the one in use: no resolver-provided one may replace it.
        ("grpc.service_config_disable_resolution", 1),
        # C-core's default :authority for an `ipv4:a,b` target is the address list itself,
        # which is not a valid authority (a port cannot hold commas): hyper's HTTP/2 server (lblab's
        # backend) resets such streams with PROTOCOL_ERROR. A real deployment names its service.
        ("grpc.default_authority", "lblab-fleet"),
    ]
    channels = [
        grpc.insecure_channel("ipv4:" + args.targets, options=options) for _ in range(args.clients)
    ]
    for channel in channels:
        try:
            grpc.channel_ready_future(channel).result(timeout=args.connect_wait)
        except grpc.FutureTimeoutError:
            # C-core rejects a service config naming a policy it lacks: the channel never
            # becomes READY.
            print(json.dumps({"error": "the channel did not become READY (is the policy supported?)"}))
            sys.exit(2)
    stubs = [
        channel.unary_unary(
            "/lblab.v1.Echo/Unary",
            request_serializer=echo_pb2.CallRequest.SerializeToString,
            response_deserializer=echo_pb2.CallReply.FromString,
        )
        for channel in channels
    ]
    # Let the policy see every subchannel connect before the clock starts.
    time.sleep(0.5)

    lock = threading.Lock()
    latencies = []
    per_backend = {}
    codes = {}
    counts = {"requests": 0, "ok": 0, "errors": 0, "deadline_exceeded": 0}
    pending = [0]
    finished = [False]
    all_done = threading.Event()
    lateness = []

    rng = random.Random(args.seed)
    start = time.monotonic() + 0.2
    end = args.warmup + args.duration
    cpu0 = resource.getrusage(resource.RUSAGE_SELF)
    t = 0.0
    sent = 0
    call_id = 0
    while True:
        t += rng.expovariate(args.rate)
        if t >= end:
            break
        intended = start + t
        now = time.monotonic()
        if intended > now:
            time.sleep(intended - now)
        measured = t >= args.warmup
        late = time.monotonic() - intended
        if measured:
            lateness.append(late)
        call_id += 1
        unary = stubs[call_id % len(stubs)]
        fut = unary.future(echo_pb2.CallRequest(id=call_id), timeout=args.deadline)
        with lock:
            pending[0] += 1
        sent += 1

        def done(f, intended=intended, measured=measured):
            elapsed = time.monotonic() - intended
            code = f.code()
            with lock:
                if measured:
                    counts["requests"] += 1
                    codes[code.name] = codes.get(code.name, 0) + 1
                    if code == grpc.StatusCode.OK:
                        counts["ok"] += 1
                        latencies.append(elapsed)
                        backend = f.result().backend
                        per_backend[backend] = per_backend.get(backend, 0) + 1
                    else:
                        counts["errors"] += 1
                        if code == grpc.StatusCode.DEADLINE_EXCEEDED:
                            counts["deadline_exceeded"] += 1
                            latencies.append(args.deadline)
                pending[0] -= 1
                if pending[0] == 0 and finished[0]:
                    all_done.set()

        fut.add_done_callback(done)

    with lock:
        finished[0] = True
        if pending[0] == 0:
            all_done.set()
    all_done.wait(timeout=args.deadline + 5)
    cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    latencies.sort()
    lateness.sort()
    ms = lambda s: round(s * 1000.0, 3)
    print(
        json.dumps(
            {
                "grpcio": grpc.__version__,
                "service_config": json.loads(args.service_config),
                **counts,
                "codes": codes,
                "p50_ms": ms(percentile(latencies, 0.5)),
                "p90_ms": ms(percentile(latencies, 0.9)),
                "p99_ms": ms(percentile(latencies, 0.99)),
                "max_ms": ms(latencies[-1] if latencies else 0.0),
                "per_backend": dict(sorted(per_backend.items())),
                "dispatch_lateness_p99_ms": ms(percentile(lateness, 0.99)),
                "cpu_per_call_us": round(cpu / max(sent, 1) * 1e6, 1),
                "calls": sent,
            }
        )
    )
    for channel in channels:
        channel.close()


if __name__ == "__main__":
    main()
