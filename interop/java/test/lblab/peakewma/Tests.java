package lblab.peakewma;

import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.LoadBalancer.PickSubchannelArgs;
import io.grpc.LoadBalancerRegistry;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.MethodDescriptor.MethodType;
import io.grpc.Server;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.internal.JsonParser;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.ServerCalls;
import io.grpc.stub.StreamObserver;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import lblab.client.StaticResolverProvider;

/**
 * The port's tests, a plain main that exits non-zero when one fails (no JUnit on Debian's
 * classpath is needed): unit tests of PeakEwma and the provider, the replay of the conformance
 * vectors (VectorReplay), and the port inside grpc-java (two Netty servers on loopback, a unary
 * and a server-streaming method): what PickSubchannelArgs carries at pick time, RTT samples from
 * the ClientStreamTracer, streams not counted.
 *
 * <pre>java -Dlblab.vectors=conformance/vectors/peak_ewma_experimental.json lblab.peakewma.Tests</pre>
 */
public final class Tests {
  private Tests() {}

  static void check(boolean ok, String message) {
    if (!ok) throw new AssertionError(message);
  }

  interface Body {
    void run() throws Exception;
  }

  static int failed;

  static void test(String name, Body body) {
    try {
      body.run();
      System.out.println("--- PASS: " + name);
    } catch (Throwable e) {
      failed++;
      System.out.println("--- FAIL: " + name + ": " + e);
      e.printStackTrace(System.out);
    }
  }

  public static void main(String[] args) throws Exception {
    test("TestRegisteredThroughServiceLoader", Tests::registered);
    test("TestConfig", Tests::config);
    test("TestIdleConstantsFollowDecayTime", Tests::idleConstants);
    test("TestFirstSampleAndPeakOnlyOutOfAStall", Tests::firstSample);
    test("TestFailuresHoldAndCancelledIsNoSample", Tests::failures);
    test("TestDistinctDrawsAndTies", Tests::draws);
    test("TestVectorConfigCases", () -> VectorReplay.configCases(VectorReplay.load()));
    test("TestVectorSequences", () -> VectorReplay.sequences(VectorReplay.load()));
    test("TestInsideGrpcJava", Tests::insideGrpcJava);
    test("BenchmarkPickAndDone", Tests::bench);
    if (failed > 0) {
      System.out.println("FAIL: " + failed + " test(s)");
      System.exit(1);
    }
    System.out.println("ok  lblab.peakewma (grpc-java " + grpcVersion() + ")");
    System.exit(0);
  }

  static String grpcVersion() {
    Package p = io.grpc.LoadBalancer.class.getPackage();
    String v = p == null ? null : p.getImplementationVersion();
    return v == null ? "1.41.3" : v;
  }

  static void registered() {
    // Found through META-INF/services/io.grpc.LoadBalancerProvider, no register() call.
    Object p = LoadBalancerRegistry.getDefaultRegistry().getProvider("peak_ewma_experimental");
    check(p instanceof PeakEwmaLoadBalancerProvider, "the registry has " + p);
    check(LoadBalancerRegistry.getDefaultRegistry().getProvider("round_robin") != null, "no round_robin");
    check(LoadBalancerRegistry.getDefaultRegistry().getProvider("pick_first") != null, "no pick_first");
  }

  @SuppressWarnings("unchecked")
  static Map<String, ?> json(String s) throws IOException {
    return (Map<String, ?>) JsonParser.parse(s);
  }

  static void config() throws Exception {
    PeakEwmaLoadBalancerProvider p = new PeakEwmaLoadBalancerProvider();
    check(p.parseLoadBalancingPolicyConfig(json("{}")).getConfig().equals(PeakEwma.Config.DEFAULT), "defaults");
    Object c = p.parseLoadBalancingPolicyConfig(json("{\"choiceCount\":50,\"decayTime\":\"1.5s\",\"defaultRtt\":\"0.001s\",\"x\":1}")).getConfig();
    check(c.equals(new PeakEwma.Config(10, 1_500_000_000L, 1_000_000L)), "parsed " + c);
    for (String[] bad : new String[][] {
        {"{\"choiceCount\":1}", "choiceCount"}, {"{\"choiceCount\":2.5}", "choiceCount"},
        {"{\"choiceCount\":true}", "choiceCount"}, {"{\"decayTime\":\"0s\"}", "decayTime"},
        {"{\"decayTime\":\"10\"}", "decayTime"}, {"{\"defaultRtt\":0.03}", "defaultRtt"},
        {"{\"defaultRtt\":\"-1s\"}", "defaultRtt"}}) {
      Status s = p.parseLoadBalancingPolicyConfig(json(bad[0])).getError();
      check(s != null && s.getCode() == Status.Code.INVALID_ARGUMENT
              && s.getDescription().startsWith("peak_ewma_experimental." + bad[1] + ": "),
          bad[0] + ": " + s);
    }
    check(PeakEwmaLoadBalancerProvider.formatDuration(30_000_000L).equals("0.03s"), "format");
  }

  static void idleConstants() {
    PeakEwma.Context ctx = new PeakEwma.Context(PeakEwma.Config.DEFAULT, PeakEwma.Semantics.chosen());
    PeakEwma.Load l = new PeakEwma.Load(ctx, 0);
    l.ended(0, 1_000_000, true, false, ctx);
    // 5000 picks at 10 s: after 5000 picks and no time, w = max(1, e^-1) = 1; the bound is 60 s.
    ctx.picks += 5000;
    check(Math.abs(l.decayed(0, ctx) - 1e6) < 1e-3, "no time passed: " + l.decayed(0, ctx));
    double at60 = l.decayed(60_000_000_000L, ctx);
    check(Math.abs(at60 - 1e6 * Math.exp(-1)) < 1e-3, "60 s and 5000 picks: " + at60);
    PeakEwma.Context fast = new PeakEwma.Context(new PeakEwma.Config(2, 1_000_000_000L, 30_000_000L), PeakEwma.Semantics.chosen());
    PeakEwma.Load f = new PeakEwma.Load(fast, 0);
    f.ended(0, 1_000_000, true, false, fast);
    fast.picks += 500; // idlePicks 500 at 1 s
    double at6 = f.decayed(6_000_000_000L, fast);
    check(Math.abs(at6 - 1e6 * Math.exp(-1)) < 1e-3, "6 s and 500 picks at decayTime 1 s: " + at6);
  }

  static void firstSample() {
    PeakEwma.Context ctx = new PeakEwma.Context(PeakEwma.Config.DEFAULT, PeakEwma.Semantics.chosen());
    PeakEwma.Load l = new PeakEwma.Load(ctx, 0);
    l.started(0);
    l.ended(5_000_000, 5_000_000, true, false, ctx);
    check(l.estimate == 5e6 && l.outstanding == 0, "first answer sets the estimate: " + l.estimate);
    // Busy since 5 ms: a slow answer that started at 6 ms while a call was outstanding is no peak.
    l.started(6_000_000);
    l.started(6_000_000);
    l.ended(7_000_000, 1_000_000, true, false, ctx);
    l.ended(56_000_000, 50_000_000, true, false, ctx);
    check(l.estimate < 50e6, "not quiet: blended, not a peak: " + l.estimate);
    // Quiet (nothing outstanding before it started): a slow answer is a peak.
    l.started(100_000_000);
    l.ended(200_000_000, 100_000_000, true, false, ctx);
    check(l.estimate == 100e6, "quiet: a peak: " + l.estimate);
  }

  static void failures() {
    PeakEwma.Context ctx = new PeakEwma.Context(PeakEwma.Config.DEFAULT, PeakEwma.Semantics.chosen());
    PeakEwma.Load l = new PeakEwma.Load(ctx, 0);
    l.started(0);
    l.ended(2_000_000, 2_000_000, true, false, ctx);
    l.started(3_000_000);
    l.ended(4_000_000, 1_000_000, true, true, ctx);
    check(l.estimate == 2e6 && l.errors > 0.09, "a fast failure holds the estimate and counts: " + l.estimate + " " + l.errors);
    double before = l.estimate;
    l.started(5_000_000);
    check(l.outstanding == 1, "outstanding");
    l.ended(6_000_000, 1_000_000, false, true, ctx);
    check(l.outstanding == 0 && l.estimate == before, "cancelled: no sample");
  }

  static void draws() {
    PeakEwma.Context ctx = new PeakEwma.Context(PeakEwma.Config.DEFAULT, PeakEwma.Semantics.chosen());
    PeakEwma.Load[] ls = {new PeakEwma.Load(ctx, 0), new PeakEwma.Load(ctx, 0), new PeakEwma.Load(ctx, 0)};
    int[] seq = {1, 1, 1, 2};
    int[] at = {0};
    int i = PeakEwma.pick(ls, 3, 0, ctx, n -> seq[at[0]++]);
    check(i == 1 && at[0] == 4 && ctx.picks == 1, "a repeated draw is drawn again; a tie goes to the earlier draw: " + i);
    check(PeakEwma.pick(ls, 1, 0, ctx, n -> { throw new AssertionError("no draw with one"); }) == 0, "one");
    check(PeakEwma.pick(ls, 0, 0, ctx, n -> 0) == -1 && ctx.picks == 2, "none");
  }

  // --- inside grpc-java ------------------------------------------------------------------------

  static final MethodDescriptor.Marshaller<byte[]> BYTES =
      new MethodDescriptor.Marshaller<byte[]>() {
        @Override
        public InputStream stream(byte[] value) {
          return new ByteArrayInputStream(value);
        }

        @Override
        public byte[] parse(InputStream stream) {
          try {
            return stream.readAllBytes();
          } catch (IOException e) {
            throw new RuntimeException(e);
          }
        }
      };

  static final MethodDescriptor<byte[], byte[]> UNARY =
      MethodDescriptor.<byte[], byte[]>newBuilder()
          .setType(MethodType.UNARY).setFullMethodName("t.T/U")
          .setRequestMarshaller(BYTES).setResponseMarshaller(BYTES).build();
  static final MethodDescriptor<byte[], byte[]> STREAM =
      MethodDescriptor.<byte[], byte[]>newBuilder()
          .setType(MethodType.SERVER_STREAMING).setFullMethodName("t.T/S")
          .setRequestMarshaller(BYTES).setResponseMarshaller(BYTES).build();

  static void insideGrpcJava() throws Exception {
    CountDownLatch release = new CountDownLatch(1);
    ServerServiceDefinition svc =
        ServerServiceDefinition.builder("t.T")
            .addMethod(UNARY, ServerCalls.asyncUnaryCall((byte[] req, StreamObserver<byte[]> out) -> {
              if (req.length > 0) {
                try {
                  release.await(5, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                  Thread.currentThread().interrupt();
                }
              }
              out.onNext(new byte[] {1});
              out.onCompleted();
            }))
            .addMethod(STREAM, ServerCalls.asyncServerStreamingCall((byte[] req, StreamObserver<byte[]> out) -> {
              out.onNext(new byte[] {2});
              new Thread(() -> {
                try {
                  release.await(5, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                  Thread.currentThread().interrupt();
                }
                out.onCompleted();
              }).start();
            }))
            .build();
    List<Server> servers = new ArrayList<>();
    StringBuilder targets = new StringBuilder();
    for (int i = 0; i < 2; i++) {
      Server s = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0)).addService(svc).build().start();
      servers.add(s);
      targets.append(i == 0 ? "" : ",").append("127.0.0.1:").append(s.getPort());
    }
    List<PickSubchannelArgs> picks = Collections.synchronizedList(new ArrayList<>());
    AtomicReference<PeakEwmaLoadBalancer> built = new AtomicReference<>();
    PeakEwmaLoadBalancer.testHookPick = picks::add;
    PeakEwmaLoadBalancer.testHookBuilt = built::set;
    StaticResolverProvider.register();
    ManagedChannel ch =
        NettyChannelBuilder.forTarget(StaticResolverProvider.target(targets.toString()))
            .usePlaintext()
            .defaultServiceConfig(json("{\"loadBalancingConfig\":[{\"peak_ewma_experimental\":{\"choiceCount\":2,\"unknownField\":1}}]}"))
            .build();
    try {
      // A unary call: the picker sees the method descriptor, its type UNARY; the tracer samples.
      byte[] r = ClientCalls.blockingUnaryCall(ch, UNARY, CallOptions.DEFAULT.withDeadlineAfter(5, TimeUnit.SECONDS), new byte[0]);
      check(r.length == 1, "unary answer");
      PickSubchannelArgs a = picks.get(picks.size() - 1);
      check(a.getMethodDescriptor().getType() == MethodType.UNARY, "type at pick: " + a.getMethodDescriptor().getType());
      check(a.getMethodDescriptor().getFullMethodName().equals("t.T/U"), "method at pick");
      System.out.println("pick args: method " + a.getMethodDescriptor().getFullMethodName() + " type "
          + a.getMethodDescriptor().getType() + ", headers " + a.getHeaders().keys() + ", call options deadline "
          + (a.getCallOptions().getDeadline() != null));
      PeakEwmaLoadBalancer lb = built.get();
      check(lb != null, "the balancer was built");
      Thread.sleep(50); // streamClosed runs on a transport thread
      int sampled = 0;
      for (PeakEwma.Load l : lb.loadsForTest().values()) {
        if (l != null && l.sampled) {
          sampled++;
          check(l.estimate > 0 && l.estimate < 5e9, "RTT sample " + l.estimate);
        }
      }
      check(sampled == 1, "one endpoint sampled by the ClientStreamTracer: " + sampled);

      // The policy's own RPC on a subchannel (Subchannel.asChannel(), as health checks and ORCA's
      // out-of-band stream do): it works, and it goes through neither the picker nor the tracer.
      io.grpc.LoadBalancer.Subchannel sc = lb.readySubchannelForTest();
      check(sc != null, "a READY subchannel");
      int picksBefore = picks.size();
      long pickClock = lb.ctx.picks;
      byte[] own = ClientCalls.blockingUnaryCall(
          sc.asChannel(), UNARY, CallOptions.DEFAULT.withDeadlineAfter(5, TimeUnit.SECONDS), new byte[0]);
      check(own.length == 1 && picks.size() == picksBefore && lb.ctx.picks == pickClock,
          "an RPC on Subchannel.asChannel() is answered without a pick");
      System.out.println("inside grpc-java: an RPC of the policy's own on Subchannel.asChannel() was answered, no pick");

      // A server-streaming call, held open: the picker sees SERVER_STREAMING, nothing outstanding.
      ClientCall<byte[], byte[]> stream = ch.newCall(STREAM, CallOptions.DEFAULT.withDeadlineAfter(5, TimeUnit.SECONDS));
      CountDownLatch first = new CountDownLatch(1);
      CountDownLatch closed = new CountDownLatch(1);
      stream.start(new ClientCall.Listener<byte[]>() {
        @Override
        public void onMessage(byte[] m) {
          first.countDown();
        }

        @Override
        public void onClose(Status s, Metadata t) {
          closed.countDown();
        }
      }, new Metadata());
      stream.sendMessage(new byte[0]);
      stream.halfClose();
      stream.request(10);
      check(first.await(5, TimeUnit.SECONDS), "the stream's first message");
      a = picks.get(picks.size() - 1);
      check(a.getMethodDescriptor().getType() == MethodType.SERVER_STREAMING, "stream type at pick: " + a.getMethodDescriptor().getType());
      // And a unary call that waits: counted while outstanding.
      ClientCall<byte[], byte[]> slow = ch.newCall(UNARY, CallOptions.DEFAULT.withDeadlineAfter(5, TimeUnit.SECONDS));
      CountDownLatch slowClosed = new CountDownLatch(1);
      slow.start(new ClientCall.Listener<byte[]>() {
        @Override
        public void onClose(Status s, Metadata t) {
          slowClosed.countDown();
        }
      }, new Metadata());
      slow.sendMessage(new byte[] {9});
      slow.halfClose();
      slow.request(1);
      Thread.sleep(100);
      int outstanding = 0;
      for (PeakEwma.Load l : lb.loadsForTest().values()) outstanding += l.outstanding;
      check(outstanding == 1, "the open stream is not counted, the pending unary call is: " + outstanding);
      release.countDown();
      check(closed.await(5, TimeUnit.SECONDS) && slowClosed.await(5, TimeUnit.SECONDS), "closed");
      Thread.sleep(50);
      outstanding = 0;
      int samples = 0;
      for (PeakEwma.Load l : lb.loadsForTest().values()) {
        outstanding += l.outstanding;
        samples += l.sampled ? 1 : 0;
      }
      check(outstanding == 0, "all done: " + outstanding);
      System.out.println("inside grpc-java: unary pick type UNARY, stream pick type SERVER_STREAMING; "
          + "open stream not counted, pending unary counted; endpoints sampled " + samples);
    } finally {
      PeakEwmaLoadBalancer.testHookPick = null;
      PeakEwmaLoadBalancer.testHookBuilt = null;
      ch.shutdownNow();
      for (Server s : servers) s.shutdownNow();
    }
  }

  /** A pick and its end through the core under the lock, 10 READY endpoints, 2 draws. */
  static void bench() throws Exception {
    PeakEwma.Context ctx = new PeakEwma.Context(PeakEwma.Config.DEFAULT, PeakEwma.Semantics.chosen());
    PeakEwma.Load[] ls = new PeakEwma.Load[10];
    for (int i = 0; i < 10; i++) ls[i] = new PeakEwma.Load(ctx, System.nanoTime());
    Object mu = new Object();
    for (int threads : new int[] {1, 2}) {
      int perThread = 500_000;
      for (int round = 0; round < 2; round++) { // the first round warms up the JIT
        Thread[] ts = new Thread[threads];
        long t0 = System.nanoTime();
        for (int t = 0; t < threads; t++) {
          ts[t] = new Thread(() -> {
            for (int k = 0; k < perThread; k++) {
              PeakEwma.Load l;
              long now;
              synchronized (mu) {
                now = System.nanoTime();
                l = ls[PeakEwma.pick(ls, 10, now, ctx, n -> java.util.concurrent.ThreadLocalRandom.current().nextInt(n))];
                l.started(now);
              }
              long end = System.nanoTime();
              synchronized (mu) {
                l.ended(end, end - now + 1_000_000, true, false, ctx);
              }
            }
          });
          ts[t].start();
        }
        for (Thread t : ts) t.join();
        double ns = (System.nanoTime() - t0) / (double) (threads * perThread);
        if (round == 1) System.out.printf("benchmark: a pick and its end, %d thread(s): %.0f ns/op%n", threads, ns);
      }
    }
  }
}
