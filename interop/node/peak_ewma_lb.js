'use strict';
// peak_ewma_experimental for grpc-js, through its load-balancer registration API
// (`grpc.experimental.registerLoadBalancerType`). A petiole policy in gRFC A61's sense, built
// like grpc-js's own round_robin (src/load-balancer-round-robin.ts): one LeafLoadBalancer (a
// pick_first child) per endpoint, all kept connected; a Picker over the READY children that
// draws choiceCount distinct ones and keeps the cheapest (peak_ewma_core.js); per-call tracking
// through the PickResult's onCallStarted / onCallEnded hooks.
//
// What the picker knows of a call (grpc-js 1.14.7, src/picker.ts `PickArgs`): its outgoing
// metadata and `extraPickInfo` (the ConfigSelector's `pickInformation`, `{}` with the built-in
// resolvers). Not the method, not whether it is unary or streaming, not its deadline. So that
// only unary calls count (the proposal), `rpcKindInterceptor` below tags every call with its kind
// in the metadata key RPC_KIND_KEY, from the client's method definition; the picker reads the tag
// and removes it, so it never goes on the wire (grpc-js passes the picker the very Metadata
// object it then sends: src/load-balancing-call.ts `doPick`). A call without the tag (a client
// that did not install the interceptor) is counted as unary.

const grpc = require('@grpc/grpc-js');
const core = require('./peak_ewma_core');

const {
  LeafLoadBalancer,
  registerLoadBalancerType,
  createChildChannelControlHelper,
  QueuePicker,
  UnavailablePicker,
  PickResultType,
  endpointToString,
} = grpc.experimental;
const { connectivityState: State, status: Status } = grpc;

/** Metadata key the interceptor sets and the picker removes: `unary` or `streaming`. */
const RPC_KIND_KEY = 'lblab-peak-ewma-rpc-kind';

/** The clock: monotonic nanoseconds as a Number. */
const origin = process.hrtime.bigint();
function nowNs() {
  return Number(process.hrtime.bigint() - origin);
}

class PeakEwmaLoadBalancingConfig {
  constructor(parsed) {
    this.parsed = parsed || core.parseConfig({});
  }
  getLoadBalancerName() {
    return core.NAME;
  }
  toJsonObject() {
    return { [core.NAME]: core.configToJson(this.parsed) };
  }
  static createFromJson(obj) {
    return new PeakEwmaLoadBalancingConfig(core.parseConfig(obj));
  }
}

class PeakEwmaPicker {
  /** `ready`: [{ picker, load }] of the READY children; `config`: the parsed config. */
  constructor(ready, ctx, rng) {
    this.ready = ready;
    this.loads = ready.map((r) => r.load);
    this.ctx = ctx;
    this.rng = rng;
  }

  pick(pickArgs) {
    const kinds = pickArgs.metadata.get(RPC_KIND_KEY);
    if (kinds.length > 0) pickArgs.metadata.remove(RPC_KIND_KEY);
    const unary = kinds.length === 0 || kinds[0] === 'unary';
    const ctx = this.ctx;
    const i = core.pick(this.loads, nowNs(), ctx, this.rng);
    const child = this.ready[i];
    const result = child.picker.pick(pickArgs);
    if (result.pickResultType !== PickResultType.COMPLETE || !unary) {
      return result; // streams are neither load nor samples (the proposal)
    }
    const load = child.load; // this connection's load: a reconnect makes a new one
    const started = result.onCallStarted;
    const ended = result.onCallEnded;
    let t0 = 0;
    return {
      ...result,
      onCallStarted: () => {
        t0 = nowNs();
        load.onStart(t0);
        if (started) started();
      },
      onCallEnded: (code, details, metadata) => {
        const t = nowNs();
        // A call cancelled by the client gives no sample; every other status does
        // (DEADLINE_EXCEEDED too), and any but OK counts as a failure for the error-aware cost.
        load.onEnd(t, t - t0, code !== Status.CANCELLED, ctx, code !== Status.OK);
        if (ended) ended(code, details, metadata);
      },
    };
  }
}

class PeakEwmaLoadBalancer {
  constructor(channelControlHelper) {
    this.helper = channelControlHelper;
    /** endpoint string → { leaf, state, load } */
    this.children = new Map();
    this.config = core.parseConfig({});
    // The config, the semantics and the pick clock, shared by every picker of this balancer.
    this.ctx = core.context(this.config);
    this.state = State.IDLE;
    this.updatesPaused = false;
    this.lastError = null;
    this.rng = Math.random;
  }

  childHelper(entry) {
    return createChildChannelControlHelper(this.helper, {
      updateState: (state, picker, errorMessage) => {
        const wasReady = entry.state === State.READY;
        entry.state = state;
        entry.picker = picker;
        if (state === State.READY && !wasReady) {
          // A (re)connected endpoint starts over: no sample, nothing outstanding. Calls of the
          // old connection hold the old load object and no longer count.
          entry.load = new core.EndpointLoad(this.ctx, nowNs());
        }
        if (errorMessage) this.lastError = errorMessage;
        if (this.state === State.READY && state !== State.READY) {
          this.helper.requestReresolution();
        }
        this.update();
      },
    });
  }

  update() {
    if (this.updatesPaused) return;
    const entries = [...this.children.values()];
    const ready = entries.filter((e) => e.state === State.READY);
    // The core's aggregation (replayed against the conformance vectors): READY, else CONNECTING,
    // else IDLE (both queue), else TRANSIENT_FAILURE. Unlike grpc-js's round_robin, an IDLE
    // endpoint beside failed ones queues the RPC rather than failing it, as lblab does.
    const aggregate = core.aggregateState(entries.map((e) => State[e.state]));
    if (aggregate === 'READY') {
      this.setState(
        State.READY,
        new PeakEwmaPicker(
          ready.map((e) => ({ picker: e.picker, load: e.load })),
          this.ctx,
          this.rng,
        ),
        null,
      );
    } else if (aggregate === 'CONNECTING') {
      this.setState(State.CONNECTING, new QueuePicker(this), null);
    } else if (aggregate === 'TRANSIENT_FAILURE') {
      const msg = `${core.NAME}: No connection established. Last error: ${this.lastError}`;
      this.setState(State.TRANSIENT_FAILURE, new UnavailablePicker({ details: msg }), msg);
    } else {
      this.setState(State.IDLE, new QueuePicker(this), null);
    }
    // Keep every endpoint connected, as round_robin does.
    for (const e of entries) {
      if (e.state === State.IDLE) e.leaf.exitIdle();
    }
  }

  setState(state, picker, errorMessage) {
    this.state = state;
    this.helper.updateState(state, picker, errorMessage);
  }

  updateAddressList(endpointList, lbConfig, options, resolutionNote) {
    if (!(lbConfig instanceof PeakEwmaLoadBalancingConfig)) return false;
    if (!endpointList.ok) {
      if (this.children.size === 0) {
        this.setState(
          State.TRANSIENT_FAILURE,
          new UnavailablePicker(endpointList.error),
          endpointList.error.details,
        );
      }
      return true;
    }
    this.config = lbConfig.parsed;
    this.ctx.config = this.config; // the pick count goes on
    const wanted = new Map(endpointList.value.map((e) => [endpointToString(e), e]));
    this.updatesPaused = true;
    for (const [key, entry] of this.children) {
      if (!wanted.has(key)) {
        entry.leaf.destroy();
        this.children.delete(key);
      }
    }
    for (const [key, endpoint] of wanted) {
      const existing = this.children.get(key);
      if (existing) {
        existing.leaf.updateEndpoint(endpoint, options);
        continue;
      }
      const entry = { leaf: null, state: State.IDLE, picker: null, load: null };
      entry.leaf = new LeafLoadBalancer(endpoint, this.childHelper(entry), options, resolutionNote);
      entry.picker = entry.leaf.getPicker();
      this.children.set(key, entry);
      entry.leaf.startConnecting();
    }
    this.updatesPaused = false;
    if (wanted.size === 0) {
      const msg = `No addresses resolved. Resolution note: ${resolutionNote}`;
      this.setState(State.TRANSIENT_FAILURE, new UnavailablePicker({ details: msg }), msg);
      return true;
    }
    this.update();
    return true;
  }

  exitIdle() {
    // Every child is kept connected; nothing more to do.
  }
  resetBackoff() {}
  destroy() {
    for (const e of this.children.values()) e.leaf.destroy();
    this.children.clear();
  }
  getTypeName() {
    return core.NAME;
  }
}

let registered = false;

/** Registers `peak_ewma_experimental` with grpc-js (idempotent). */
function register() {
  if (registered) return;
  registerLoadBalancerType(core.NAME, PeakEwmaLoadBalancer, PeakEwmaLoadBalancingConfig);
  registered = true;
}

/**
 * A client interceptor that tags each call with its kind (from the method definition) for the
 * picker, which removes the tag before the call is sent.
 */
function rpcKindInterceptor(options, nextCall) {
  const def = options.method_definition;
  const kind = def && (def.requestStream || def.responseStream) ? 'streaming' : 'unary';
  return new grpc.InterceptingCall(nextCall(options), {
    start(metadata, listener, next) {
      metadata.set(RPC_KIND_KEY, kind);
      next(metadata, listener);
    },
  });
}

module.exports = {
  register,
  rpcKindInterceptor,
  RPC_KIND_KEY,
  PeakEwmaLoadBalancer,
  PeakEwmaLoadBalancingConfig,
  PeakEwmaPicker,
};
