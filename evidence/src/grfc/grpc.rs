//! The draft's sections that gRPC's own gRFCs (A48, A58) have beside the algorithm: the config as
//! a `service_config.proto` message, the environment variable, config updates, endpoints and
//! their weights, concurrency, metrics, each stack's implementation plan and testing. What each
//! stack's API gives is what lblab's ports compiled against and ran (`interop/go`, `interop/java`,
//! `interop/node`); C-core's is read in its sources, not run.

use std::fmt::Write as _;

use serde_json::Value;

macro_rules! w {
    ($out:expr, $($arg:tt)*) => { let _ = writeln!($out, $($arg)*); };
}

/// The config as a message of gRPC's `service_config.proto`, as A48 and A58 state theirs.
pub(super) fn proto(out: &mut String) {
    w!(
        out,
        "As a message of gRPC's `service_config.proto` (a new case of `LoadBalancingConfig`'s \
         `oneof policy`, named `peak_ewma_experimental` until the policy leaves experimental \
         status, as `least_request_experimental` was):\n"
    );
    w!(
        out,
        "```proto\n\
         message PeakEwmaLoadBalancingConfig {{\n\
         \x20 // How many distinct READY endpoints a pick draws; the cheapest wins.\n\
         \x20 // Default 2. Fewer than 2 is a config error; more than 10 is treated as 10.\n\
         \x20 google.protobuf.UInt32Value choice_count = 1;\n\
         \x20 // The time constant of the estimate's decay while an endpoint gives no samples,\n\
         \x20 // and of the blend of its samples. Default 10s. Must be greater than 0.\n\
         \x20 google.protobuf.Duration decay_time = 2;\n\
         }}\n\
         ```\n"
    );
}

/// The sections between the algorithm and xDS: updates, endpoints, concurrency.
pub(super) fn behaviour(out: &mut String) {
    w!(out, "### Config and address updates\n");
    w!(
        out,
        "A new config (a new `choiceCount` or `decayTime`) applies from the next pick; every \
         endpoint keeps its estimate, its share of failures and its calls in flight, which are \
         stored in nanoseconds and counts, not in units of `decayTime`. An address update keeps \
         the state of every endpoint still listed, drops that of endpoints no longer listed (their \
         calls in flight end without effect), and starts a new endpoint at step 1. An endpoint \
         that leaves READY and comes back starts at step 1 again: a restarted backend is learnt \
         from its first answers, not judged by its last life. The conformance sequences \
         `endpoint_list_updates` and `reconnect_resets_and_stale_calls_are_ignored` hold these \
         rules.\n"
    );
    w!(out, "### Duplicate addresses and endpoint weights\n");
    w!(
        out,
        "Following A61, state is per endpoint: an endpoint listed twice is one endpoint (the \
         second listing is ignored), and an endpoint with several addresses has one estimate \
         whichever address its pick_first child connects to. The policy ignores endpoint \
         weights (EDS `load_balancing_weight` and the resolver's weight attribute), as \
         least_request does: what it routes by is observed latency, and a weight would fight \
         the measurement it exists to act on. A user who needs weights with latency awareness \
         wraps the policy in `WrrLocality` (below), which weighs localities and leaves the \
         endpoints of each to this policy.\n"
    );
    w!(out, "### Concurrency and per-language state\n");
    w!(
        out,
        "The picker runs on many threads at once while calls end on others. Per endpoint it \
         needs the estimate, the share of failures, the times `t` and `p`, the pick count `k` \
         and `outstanding`; per policy instance the pick count `K`. As in least_request, \
         `outstanding` and `K` are atomic counters, and races between a pick and a completion \
         are benign: a pick may read an estimate or a count one completion old, which changes \
         which of two close candidates wins, never correctness. Completions of one endpoint \
         must update its estimate and share of failures as one step (a lock per endpoint, or a \
         sequence lock that readers retry, as lblab's shared picker does); `p` only moves \
         forward (a compare-and-swap maximum). A picker must not allocate per pick. A new \
         picker, made when the READY set changes, takes over the same per-endpoint state: the \
         state belongs to the endpoint, not to the picker.\n"
    );
}

/// The environment variable that guards the policy, as A48 and A58 did.
pub(super) fn guard(out: &mut String) {
    w!(
        out,
        "Under A52 a cluster's endpoint-picking policy arrives wrapped in Envoy's `WrrLocality` \
         (`envoy.extensions.load_balancing_policies.wrr_locality.v3.WrrLocality`); gRPC's \
         `xds_wrr_locality` then picks a locality by its weight and this policy an endpoint in \
         it, with nothing specific to this policy. The converter NACKs a `PeakEwma` whose \
         `decay_time` is zero or negative (lblab's converter also refuses malformed values of \
         the four fields it ignores, so a broken cluster is not half-read).\n"
    );
    w!(out, "### Environment variable\n");
    w!(
        out,
        "The policy is registered under its experimental name in every build and is used only \
         when a service config names it. Its xDS conversion (below) is guarded by \
         `GRPC_EXPERIMENTAL_ENABLE_PEAK_EWMA`, off by default, as A48 guarded least_request's: \
         with the variable unset, a cluster whose policy is `PeakEwma` is treated as an \
         unsupported policy (the next in its list is tried, and the cluster is NACKed if none is \
         supported). The guard is removed once the policy has been in production use in two \
         languages.\n"
    );
}

/// Metrics in A78's style.
pub(super) fn metrics(out: &mut String) {
    w!(out, "### Metrics\n");
    w!(
        out,
        "In the style of A78 (weighted_round_robin's metrics), off by default, each with the \
         labels `grpc.target` and, under xDS, `grpc.lb.locality`:\n"
    );
    w!(out, "| name | type | unit | what it shows |");
    w!(out, "|---|---|---|---|");
    for (name, kind, unit, what) in [
        (
            "grpc.lb.peak_ewma.endpoint_cost",
            "histogram",
            "s",
            "the decayed estimate of each READY endpoint, recorded when a picker is made: a wide spread means the policy is steering",
        ),
        (
            "grpc.lb.peak_ewma.endpoint_unsampled",
            "counter",
            "{endpoint}",
            "endpoints made READY that had no answer yet when a picker was made (cold starts, reconnects)",
        ),
        (
            "grpc.lb.peak_ewma.stalled_picks",
            "counter",
            "{pick}",
            "picks where a drawn endpoint's stall term (the age of its silence with calls waiting) exceeded its estimate: stalls seen while they happen",
        ),
    ] {
        w!(out, "| `{name}` | {kind} | {unit} | {what} |");
    }
    out.push('\n');
}

/// The per-language plan, from what the ports met in each stack.
pub(super) fn plan(out: &mut String) {
    w!(out, "## Implementation\n");
    w!(
        out,
        "The algorithm is a few hundred lines free of any stack (a pick among explicit candidates \
         at explicit times, and a completion); each port keeps it in one file beside the \
         stack's plumbing. What each stack's load-balancing API gives, as lblab's ports met it:\n"
    );
    w!(
        out,
        "- **grpc-java** (ported on 1.41, `interop/java`): a `LoadBalancerProvider` found \
         through `ServiceLoader`; the RTT from a `ClientStreamTracer` attached to the pick \
         with `PickResult.withSubchannel(subchannel, factory)`, from the pick to \
         `streamClosed(Status)`; the call kind at pick time from \
         `PickSubchannelArgs.getMethodDescriptor().getType()`, so only unary calls count with \
         no help from the application. Each retry attempt picks again and gets its own tracer. \
         A pick whose subchannel lost its transport is dropped without a tracer, so its \
         `outstanding` is never taken back; the endpoint's state restarts at its next READY. \
         Current releases build petiole policies over per-endpoint pick_first children (A61); \
         1.41 has one subchannel per address group.\n\
         - **grpc-go** (ported on 1.33, `interop/go`): a `balancer.Builder` with \
         `balancer.Register` and a `ConfigParser`; the RTT measured by the picker from `Pick` to \
         `PickResult.Done`, whose `DoneInfo` carries the error and trailers but no time and no \
         call kind. An empty `DoneInfo` also means \"not sent\" (the SubConn had no transport), \
         which must not count as a sample. `PickInfo` carries the full method name and the call's \
         context but not its kind: this gRFC asks grpc-go to add the kind to `PickInfo` (the port \
         uses a stream interceptor that marks the context, which depends on the application \
         installing it).\n\
         - **grpc-js** (`interop/node`): `registerLoadBalancerType`, one `LeafLoadBalancer` per \
         endpoint, and per-call hooks on the pick result (`onCallStarted`, `onCallEnded` with the \
         final status); `PickArgs` carry only the outgoing metadata, so the call kind must be \
         given to the picker (the port's interceptor writes it into a metadata key that the \
         picker removes before the call goes on the wire); this gRFC asks grpc-js to add it to \
         `PickArgs`.\n\
         - **C-core** (read in its sources, not ported): a pick returns a \
         `SubchannelCallTrackerInterface` whose `Start()` and `Finish(FinishArgs)` give the \
         timing and the status; `PickArgs` carry the method path and the initial metadata but not \
         the call kind, so C-core needs the kind added to its pick arguments as grpc-go and \
         grpc-js do, or counts every call.\n"
    );
}

/// Testing through the conformance vectors.
pub(super) fn testing(out: &mut String) {
    let (cases, sequences) = vector_counts();
    w!(out, "### Testing\n");
    w!(
        out,
        "Language-neutral conformance vectors (`conformance/vectors/peak_ewma_experimental.json`, \
         generated by the reference implementation) give {cases} config cases and {sequences} \
         sequences of READY changes, picks with their random draws, and completions with their \
         times and statuses, each followed by the expected estimate, share of failures, cost and \
         choice. An implementation replays them with its random source replaced by the recorded \
         draws and its clock by the recorded times; the grpc-java, grpc-go and grpc-js ports \
         replay every one. Interop tests then run each stack's policy against a fleet with one \
         slow backend and check that it sends that backend less than round_robin does.\n"
    );
}

/// The peak_ewma vector file's numbers of config cases and sequences.
fn vector_counts() -> (usize, usize) {
    let file = lblab_policy::vectors::files()
        .into_iter()
        .find(|f| f.name == "peak_ewma_experimental.json");
    let v: Value = file
        .and_then(|f| serde_json::from_str(&f.text).ok())
        .unwrap_or(Value::Null);
    let len = |key: &str| v[key].as_array().map_or(0, Vec::len);
    (len("config_cases"), len("sequences"))
}
