package lblab.peakewma;

import io.grpc.Attributes;
import io.grpc.ClientStreamTracer;
import io.grpc.ConnectivityState;
import io.grpc.ConnectivityStateInfo;
import io.grpc.EquivalentAddressGroup;
import io.grpc.LoadBalancer;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;

/**
 * The grpc-java 1.41 plumbing around PeakEwma: one child per endpoint (one Subchannel per
 * EquivalentAddressGroup, made with {@code Helper.createSubchannel(CreateSubchannelArgs)} and
 * watched with a {@code SubchannelStateListener} given to {@code Subchannel.start}), the
 * aggregate state, and a {@link SubchannelPicker} whose {@code PickResult.withSubchannel(
 * subchannel, streamTracerFactory)} attaches a {@link ClientStreamTracer} that takes the RTT
 * sample from the pick to {@code streamClosed}.
 *
 * <p>Threads: {@code handleResolvedAddresses} and the state listeners run in the channel's
 * SynchronizationContext (one at a time); {@code pickSubchannel} runs on the thread of every call
 * that starts and {@code streamClosed} on a transport thread. The pick clock and the loads are
 * shared among those, so one lock per balancer ({@code mu}) guards every call into PeakEwma.
 */
final class PeakEwmaLoadBalancer extends LoadBalancer {
  /** Tests only: sees each pick's args (method descriptor, headers, call options). */
  static volatile Consumer<PickSubchannelArgs> testHookPick;
  /** Tests only: sees each balancer when it is made. */
  static volatile Consumer<PeakEwmaLoadBalancer> testHookBuilt;

  /** $LBLAB_PEAK_EWMA_TRACE set: every sample to stderr (a diagnostic, off by default). */
  static final boolean TRACE = System.getenv("LBLAB_PEAK_EWMA_TRACE") != null;

  private final Helper helper;
  final Object mu = new Object();
  final PeakEwma.Context ctx = new PeakEwma.Context(PeakEwma.Config.DEFAULT, PeakEwma.Semantics.chosen());
  /** The endpoints in the resolver's order; touched only in the SynchronizationContext. */
  private final Map<EquivalentAddressGroup, Endpoint> endpoints = new LinkedHashMap<>();
  private ConnectivityState aggregate;

  /** One endpoint: its subchannel, its state and its load (a new one on each READY). */
  static final class Endpoint {
    final Subchannel subchannel;
    ConnectivityState state = ConnectivityState.IDLE;
    PeakEwma.Load load;

    Endpoint(Subchannel subchannel) {
      this.subchannel = subchannel;
    }
  }

  PeakEwmaLoadBalancer(Helper helper) {
    this.helper = helper;
    Consumer<PeakEwmaLoadBalancer> hook = testHookBuilt;
    if (hook != null) hook.accept(this);
  }

  @Override
  public void handleResolvedAddresses(ResolvedAddresses resolved) {
    Object cfg = resolved.getLoadBalancingPolicyConfig();
    if (cfg instanceof PeakEwma.Config) {
      synchronized (mu) {
        ctx.setConfig((PeakEwma.Config) cfg);
      }
    }
    // An endpoint is an address group, without the resolver's attributes (as round_robin keys it).
    Map<EquivalentAddressGroup, Endpoint> next = new LinkedHashMap<>();
    for (EquivalentAddressGroup eag : resolved.getAddresses()) {
      EquivalentAddressGroup key = new EquivalentAddressGroup(eag.getAddresses());
      if (next.containsKey(key)) continue;
      Endpoint e = endpoints.remove(key);
      if (e == null) {
        Subchannel sc =
            helper.createSubchannel(
                CreateSubchannelArgs.newBuilder().setAddresses(eag).setAttributes(Attributes.EMPTY).build());
        Endpoint fresh = new Endpoint(sc);
        sc.start(info -> onState(fresh, info));
        sc.requestConnection();
        e = fresh;
      }
      next.put(key, e);
    }
    for (Endpoint gone : endpoints.values()) {
      gone.subchannel.shutdown();
      gone.state = ConnectivityState.SHUTDOWN;
    }
    endpoints.clear();
    endpoints.putAll(next);
    updatePicker();
  }

  private void onState(Endpoint e, ConnectivityStateInfo info) {
    ConnectivityState s = info.getState();
    if (e.state == ConnectivityState.SHUTDOWN || s == ConnectivityState.SHUTDOWN) return;
    if (s == ConnectivityState.READY && e.state != ConnectivityState.READY) {
      synchronized (mu) {
        e.load = new PeakEwma.Load(ctx, System.nanoTime()); // the reset on READY
      }
    }
    e.state = s;
    if (s == ConnectivityState.IDLE) e.subchannel.requestConnection(); // as round_robin
    updatePicker();
  }

  /** lblab's aggregate: READY if any is; else CONNECTING (queue) while any is IDLE or CONNECTING. */
  private void updatePicker() {
    List<Endpoint> ready = new ArrayList<>();
    boolean connecting = false;
    Status lastError = null;
    for (Endpoint e : endpoints.values()) {
      if (e.state == ConnectivityState.READY) ready.add(e);
      connecting |= e.state == ConnectivityState.IDLE || e.state == ConnectivityState.CONNECTING;
    }
    if (!ready.isEmpty()) {
      aggregate = ConnectivityState.READY;
      helper.updateBalancingState(aggregate, new Picker(this, ready));
    } else if (connecting) {
      aggregate = ConnectivityState.CONNECTING;
      helper.updateBalancingState(aggregate, new FixedPicker(PickResult.withNoResult()));
    } else {
      aggregate = ConnectivityState.TRANSIENT_FAILURE;
      helper.updateBalancingState(
          aggregate,
          new FixedPicker(PickResult.withError(Status.UNAVAILABLE.withDescription(
              "peak_ewma_experimental: no endpoint is READY, IDLE or CONNECTING"))));
    }
  }

  @Override
  public void handleNameResolutionError(Status error) {
    if (aggregate != ConnectivityState.READY) {
      helper.updateBalancingState(
          ConnectivityState.TRANSIENT_FAILURE, new FixedPicker(PickResult.withError(error)));
    }
  }

  @Override
  public void shutdown() {
    for (Endpoint e : endpoints.values()) {
      e.subchannel.shutdown();
      e.state = ConnectivityState.SHUTDOWN;
    }
    endpoints.clear();
  }

  private static final class FixedPicker extends SubchannelPicker {
    private final PickResult result;

    FixedPicker(PickResult result) {
      this.result = result;
    }

    @Override
    public PickResult pickSubchannel(PickSubchannelArgs args) {
      return result;
    }
  }

  /** The READY endpoints at the time of the update, each with the load it had then. */
  static final class Picker extends SubchannelPicker {
    private final PeakEwmaLoadBalancer lb;
    private final Subchannel[] subchannels;
    private final PeakEwma.Load[] loads;

    Picker(PeakEwmaLoadBalancer lb, List<Endpoint> ready) {
      this.lb = lb;
      subchannels = new Subchannel[ready.size()];
      loads = new PeakEwma.Load[ready.size()];
      for (int i = 0; i < ready.size(); i++) {
        subchannels[i] = ready.get(i).subchannel;
        loads[i] = ready.get(i).load;
      }
    }

    @Override
    public PickResult pickSubchannel(PickSubchannelArgs args) {
      Consumer<PickSubchannelArgs> hook = testHookPick;
      if (hook != null) hook.accept(args);
      // The call kind is known at pick time in grpc-java: only unary calls are counted.
      boolean unary = args.getMethodDescriptor().getType() == MethodDescriptor.MethodType.UNARY;
      int i;
      PeakEwma.Load load;
      long now;
      synchronized (lb.mu) {
        now = System.nanoTime();
        i = PeakEwma.pick(loads, loads.length, now, lb.ctx, n -> ThreadLocalRandom.current().nextInt(n));
        load = loads[i];
        if (unary) load.started(now);
      }
      if (!unary) return PickResult.withSubchannel(subchannels[i]);
      return PickResult.withSubchannel(subchannels[i], new RttTracerFactory(lb, load, now));
    }
  }

  /**
   * One pick's tracer: grpc-java asks it for a tracer when it opens the stream on the picked
   * subchannel's transport, and calls {@code streamClosed} once the call ends (after the
   * trailers, or on a local or transport failure). The RTT is {@code System.nanoTime()} from the
   * pick to {@code streamClosed}: the whole attempt.
   */
  static final class RttTracerFactory extends ClientStreamTracer.Factory {
    private final PeakEwmaLoadBalancer lb;
    private final PeakEwma.Load load;
    private final long picked;
    private final AtomicBoolean ended = new AtomicBoolean();

    RttTracerFactory(PeakEwmaLoadBalancer lb, PeakEwma.Load load, long picked) {
      this.lb = lb;
      this.load = load;
      this.picked = picked;
    }

    @Override
    public ClientStreamTracer newClientStreamTracer(ClientStreamTracer.StreamInfo info, Metadata headers) {
      return new ClientStreamTracer() {
        @Override
        public void streamClosed(Status status) {
          if (!ended.compareAndSet(false, true)) return;
          long now = System.nanoTime();
          // CANCELLED (by the client) is no sample; every other status but OK is a failure.
          boolean sample = status.getCode() != Status.Code.CANCELLED;
          synchronized (lb.mu) {
            load.ended(now, now - picked, sample, !status.isOk(), lb.ctx);
            if (TRACE) {
              System.err.printf("peak_ewma trace: end %d ms load %08x rtt %.3f ms estimate %.3f ms outstanding %d%n",
                  now / 1_000_000 % 100_000, System.identityHashCode(load), (now - picked) / 1e6, load.estimate / 1e6,
                  load.outstanding);
            }
          }
        }
      };
    }
  }

  /** Tests only: a READY endpoint's subchannel, or null. */
  Subchannel readySubchannelForTest() {
    for (Endpoint e : endpoints.values()) if (e.state == ConnectivityState.READY) return e.subchannel;
    return null;
  }

  /** Tests only: each endpoint's load, by address group. */
  Map<EquivalentAddressGroup, PeakEwma.Load> loadsForTest() {
    Map<EquivalentAddressGroup, PeakEwma.Load> m = new HashMap<>();
    synchronized (mu) {
      for (Map.Entry<EquivalentAddressGroup, Endpoint> e : endpoints.entrySet()) m.put(e.getKey(), e.getValue().load);
    }
    return m;
  }
}
