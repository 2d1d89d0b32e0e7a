package lblab.client;

import io.grpc.CallOptions;
import io.grpc.ConnectivityState;
import io.grpc.Deadline;
import io.grpc.LoadBalancerProvider;
import io.grpc.LoadBalancerRegistry;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.NameResolver.ConfigOrError;
import io.grpc.Status;
import io.grpc.internal.JsonParser;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.StreamObserver;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * An open-loop load generator on grpc-java (1.41, Debian's libgrpc-java, Netty transport) against
 * lblab's fleet ({@code lblab backend}), like interop/go/client and interop/node/client.js: Poisson
 * arrivals at --rate for --warmup + --duration, latency counted from each call's intended send
 * time (the deadline too), the load balancing policy as gRPC service-config JSON, each of
 * --clients channels with its own connections. Writes summary.json, summary.csv and backends.csv
 * into --out, with the fields client.js and the grpc-go client write.
 *
 * <pre>
 * java -cp ... lblab.client.Client --targets 127.0.0.1:5000,127.0.0.1:5001 --policy round_robin \
 *   --rate 200 --duration 10 --warmup 2 --out /tmp/run --slow slow/
 * </pre>
 *
 * --policy takes a name (round_robin, pick_first, peak_ewma_experimental), a policy object
 * ('{"round_robin":{}}') or a whole service config ('{"loadBalancingConfig":[...]}').
 * peak_ewma_experimental is interop/java's port, found by grpc-java's LoadBalancerRegistry through
 * META-INF/services. The addresses go through StaticResolverProvider (one EquivalentAddressGroup
 * each); lblab's Echo service is called with a hand-written MethodDescriptor and marshaller for
 * its two messages (wire/proto/lblab/v1/echo.proto): no generated code is needed.
 */
public final class Client {
  private Client() {}

  /** lblab.v1.CallRequest {uint64 id = 1} and CallReply {uint64 id = 1; string backend = 2}. */
  static final class Reply {
    long id;
    String backend = "";
  }

  static final MethodDescriptor.Marshaller<Long> REQUEST =
      new MethodDescriptor.Marshaller<Long>() {
        @Override
        public InputStream stream(Long id) {
          ByteArrayOutputStream b = new ByteArrayOutputStream(11);
          b.write(0x08);
          long x = id;
          while ((x & ~0x7fL) != 0) {
            b.write((int) (x & 0x7f) | 0x80);
            x >>>= 7;
          }
          b.write((int) x);
          return new ByteArrayInputStream(b.toByteArray());
        }

        @Override
        public Long parse(InputStream stream) {
          throw new UnsupportedOperationException("client only");
        }
      };

  static final MethodDescriptor.Marshaller<Reply> REPLY =
      new MethodDescriptor.Marshaller<Reply>() {
        @Override
        public InputStream stream(Reply r) {
          throw new UnsupportedOperationException("client only");
        }

        @Override
        public Reply parse(InputStream stream) {
          try {
            return decode(stream.readAllBytes());
          } catch (IOException e) {
            throw Status.INTERNAL.withDescription("reading CallReply").withCause(e).asRuntimeException();
          }
        }
      };

  static Reply decode(byte[] d) {
    Reply r = new Reply();
    int[] at = {0};
    while (at[0] < d.length) {
      long key = varint(d, at);
      switch ((int) (key & 7)) {
        case 0: {
          long x = varint(d, at);
          if (key >>> 3 == 1) r.id = x;
          break;
        }
        case 2: {
          int len = (int) varint(d, at);
          if (len < 0 || at[0] + len > d.length) throw Status.INTERNAL.withDescription("bad CallReply length").asRuntimeException();
          if (key >>> 3 == 2) r.backend = new String(d, at[0], len, StandardCharsets.UTF_8);
          at[0] += len;
          break;
        }
        case 1:
          at[0] += 8;
          break;
        case 5:
          at[0] += 4;
          break;
        default:
          throw Status.INTERNAL.withDescription("bad CallReply wire type").asRuntimeException();
      }
    }
    return r;
  }

  static long varint(byte[] d, int[] at) {
    long x = 0;
    for (int i = 0; i < 10 && at[0] < d.length; i++) {
      byte b = d[at[0]++];
      x |= (long) (b & 0x7f) << (7 * i);
      if ((b & 0x80) == 0) return x;
    }
    throw Status.INTERNAL.withDescription("bad CallReply varint").asRuntimeException();
  }

  static final MethodDescriptor<Long, Reply> UNARY =
      MethodDescriptor.<Long, Reply>newBuilder()
          .setType(MethodDescriptor.MethodType.UNARY)
          .setFullMethodName("lblab.v1.Echo/Unary")
          .setRequestMarshaller(REQUEST)
          .setResponseMarshaller(REPLY)
          .build();

  static void fail(int code, String message) {
    System.err.println("error: " + message);
    System.exit(code);
  }

  /** --policy as a service config; checks its first entry is registered and parses. */
  @SuppressWarnings("unchecked")
  static Map<String, ?> serviceConfig(String policy, String[] name) {
    String p = policy.trim();
    Map<String, Object> sc;
    if (!p.startsWith("{")) {
      sc = Map.of("loadBalancingConfig", List.of(Map.of(p, Map.of())));
    } else {
      Object obj;
      try {
        obj = JsonParser.parse(p);
      } catch (IOException | RuntimeException e) {
        fail(2, "--policy is not JSON: " + e.getMessage());
        return null;
      }
      Map<String, Object> m = (Map<String, Object>) obj;
      sc = m.containsKey("loadBalancingConfig") ? m : Map.of("loadBalancingConfig", List.of(m));
    }
    List<?> list = sc.get("loadBalancingConfig") instanceof List ? (List<?>) sc.get("loadBalancingConfig") : List.of();
    if (list.isEmpty()) fail(2, "loadBalancingConfig must be a non-empty list");
    Map<String, ?> first = (Map<String, ?>) list.get(0);
    if (first.size() != 1) fail(2, "loadBalancingConfig[0] must have exactly one policy");
    name[0] = first.keySet().iterator().next();
    LoadBalancerProvider provider = LoadBalancerRegistry.getDefaultRegistry().getProvider(name[0]);
    // grpc-java would silently move on to the next entry.
    if (provider == null) fail(1, "grpc-java 1.41 has no load balancing policy named " + name[0]);
    ConfigOrError c = provider.parseLoadBalancingPolicyConfig((Map<String, ?>) first.get(name[0]));
    if (c.getError() != null) fail(1, "invalid service config: loadBalancingConfig[0]." + c.getError().getDescription());
    return sc;
  }

  static double quantile(List<Double> sorted, double q) {
    if (sorted.isEmpty()) return 0;
    int i = (int) Math.ceil(q * sorted.size()) - 1;
    return sorted.get(Math.max(0, Math.min(sorted.size() - 1, i)));
  }

  static double r3(double x) {
    return Math.round(x * 1000) / 1000.0;
  }

  static long cpuNanos() {
    return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
  }

  public static void main(String[] argv) throws Exception {
    Map<String, String> a = new LinkedHashMap<>();
    a.put("rate", "100");
    a.put("duration", "10");
    a.put("warmup", "2");
    a.put("deadline", "1");
    a.put("clients", "1");
    a.put("seed", "1");
    a.put("slow", "");
    for (int i = 0; i < argv.length; i++) {
      if (!argv[i].startsWith("--") || i + 1 >= argv.length) fail(2, "usage: --flag VALUE ... (at " + argv[i] + ")");
      String k = argv[i].substring(2);
      if (!List.of("targets", "policy", "label", "rate", "duration", "warmup", "deadline", "clients", "seed", "slow", "out").contains(k)) {
        fail(2, "unknown flag --" + k);
      }
      a.put(k, argv[++i]);
    }
    String targets = a.get("targets");
    if (targets == null || a.get("policy") == null) fail(2, "--targets and --policy are required");
    double rate = Double.parseDouble(a.get("rate"));
    double duration = Double.parseDouble(a.get("duration"));
    double warmup = Double.parseDouble(a.get("warmup"));
    double deadline = Double.parseDouble(a.get("deadline"));
    int clients = Math.max(1, Integer.parseInt(a.get("clients")));
    long seed = Long.parseLong(a.get("seed"));
    if (rate <= 0 || duration <= 0 || deadline <= 0 || warmup < 0) fail(2, "--rate, --duration and --deadline must be > 0, --warmup >= 0");
    String[] name = new String[1];
    Map<String, ?> sc = serviceConfig(a.get("policy"), name);
    String label = a.getOrDefault("label", name[0]);
    List<String> slowPrefixes = new ArrayList<>();
    for (String s : a.get("slow").split(",")) if (!s.isEmpty()) slowPrefixes.add(s);

    StaticResolverProvider.register();
    ManagedChannel[] channels = new ManagedChannel[clients];
    for (int c = 0; c < clients; c++) {
      channels[c] = NettyChannelBuilder.forTarget(StaticResolverProvider.target(targets))
          .usePlaintext()
          .defaultServiceConfig(sc)
          .build();
    }
    // Wait until each channel can send (at least one READY endpoint).
    long waitUntil = System.nanoTime() + 5_000_000_000L;
    for (ManagedChannel ch : channels) {
      for (ConnectivityState s = ch.getState(true); s != ConnectivityState.READY; s = ch.getState(true)) {
        CountDownLatch changed = new CountDownLatch(1);
        ch.notifyWhenStateChanged(s, changed::countDown);
        long left = waitUntil - System.nanoTime();
        if (left <= 0 || !changed.await(left, TimeUnit.NANOSECONDS)) fail(2, "no target accepted a connection within 5s: " + targets);
      }
    }

    Random rng = new Random(seed);
    long warmupNs = (long) (warmup * 1e9);
    long endNs = (long) ((warmup + duration) * 1e9);
    double meanGap = 1e9 / rate;
    long deadlineNs = (long) (deadline * 1e9);
    Object mu = new Object();
    List<Double> latencies = new ArrayList<>();
    List<Double> lateness = new ArrayList<>();
    Map<String, Integer> perBackend = new TreeMap<>();
    Map<String, Integer> codes = new TreeMap<>();
    int[] counts = new int[3]; // ok, errors, deadline exceeded
    int requests = 0;
    int sent = 0;
    AtomicInteger inflight = new AtomicInteger();

    long cpu0 = cpuNanos();
    long t0 = System.nanoTime();
    double next = 0;
    for (int c = 0; ; c++) {
      long intended = (long) next;
      if (intended >= endNs) break;
      // Park through the gap but its last 300 µs, then spin until the call's time.
      for (long left = intended - (System.nanoTime() - t0); left > 0; left = intended - (System.nanoTime() - t0)) {
        if (left > 1_000_000) LockSupport.parkNanos(left - 300_000);
        else Thread.onSpinWait();
      }
      long dispatched = System.nanoTime() - t0;
      boolean measured = intended >= warmupNs;
      if (measured) {
        requests++;
        lateness.add((dispatched - intended) / 1e3);
      }
      sent++;
      ManagedChannel ch = channels[c % channels.length];
      long callDeadline = intended + deadlineNs - dispatched;
      inflight.incrementAndGet();
      final long intendedF = intended;
      ClientCalls.asyncUnaryCall(
          ch.newCall(UNARY, CallOptions.DEFAULT.withDeadline(Deadline.after(Math.max(1, callDeadline), TimeUnit.NANOSECONDS))),
          (long) sent,
          new StreamObserver<Reply>() {
            Reply reply;

            @Override
            public void onNext(Reply r) {
              reply = r;
            }

            @Override
            public void onError(Throwable t) {
              end(Status.fromThrowable(t));
            }

            @Override
            public void onCompleted() {
              end(Status.OK);
            }

            void end(Status st) {
              double ms = (System.nanoTime() - t0 - intendedF) / 1e6;
              if (measured) {
                synchronized (mu) {
                  codes.merge(st.getCode().name(), 1, Integer::sum);
                  if (st.isOk()) {
                    counts[0]++;
                    latencies.add(ms);
                    perBackend.merge(reply == null ? "" : reply.backend, 1, Integer::sum);
                  } else if (st.getCode() == Status.Code.DEADLINE_EXCEEDED) {
                    counts[1]++;
                    counts[2]++;
                    latencies.add(ms);
                  } else {
                    counts[1]++;
                  }
                }
              }
              inflight.decrementAndGet();
            }
          });
      next += -Math.log(1 - rng.nextDouble()) * meanGap;
    }
    // Calls in flight end by their deadline.
    long stopWaiting = System.nanoTime() + deadlineNs + 2_000_000_000L;
    while (inflight.get() > 0 && System.nanoTime() < stopWaiting) Thread.sleep(5);
    long cpu = cpuNanos() - cpu0;
    double wall = (System.nanoTime() - t0) / 1e9;
    for (ManagedChannel ch : channels) ch.shutdownNow();

    Map<String, Object> summary;
    synchronized (mu) {
      Collections.sort(latencies);
      Collections.sort(lateness);
      int answered = 0;
      for (int n : perBackend.values()) answered += n;
      List<Map<String, Object>> backends = new ArrayList<>();
      List<String> names = new ArrayList<>(perBackend.keySet());
      names.sort(Client::backendCompare);
      int slowCalls = 0;
      for (String b : names) {
        int n = perBackend.get(b);
        Map<String, Object> row = new LinkedHashMap<>();
        row.put("backend", b);
        row.put("calls", n);
        row.put("share", (double) n / answered);
        backends.add(row);
        for (String p : slowPrefixes) {
          if (b.startsWith(p)) {
            slowCalls += n;
            break;
          }
        }
      }
      double mean = 0;
      for (double x : latencies) mean += x;
      if (!latencies.isEmpty()) mean /= latencies.size();
      double slowShare = answered > 0 ? Math.round((double) slowCalls / answered * 1e6) / 1e6 : 0;
      summary = new LinkedHashMap<>();
      summary.put("client", "grpc-java");
      summary.put("grpc_java_version", grpcVersion());
      summary.put("java_version", System.getProperty("java.version"));
      summary.put("jvm_options", new ArrayList<Object>(ManagementFactory.getRuntimeMXBean().getInputArguments()));
      summary.put("policy", label);
      summary.put("service_config", sc);
      summary.put("targets", targets);
      summary.put("clients", clients);
      summary.put("rate", rate);
      summary.put("warmup_s", warmup);
      summary.put("measured_s", duration);
      summary.put("deadline_s", deadline);
      summary.put("seed", seed);
      summary.put("requests", requests);
      summary.put("ok", counts[0]);
      summary.put("errors", counts[1]);
      summary.put("deadline_exceeded", counts[2]);
      summary.put("dropped", requests - counts[0] - counts[1]);
      summary.put("p50_ms", r3(quantile(latencies, 0.5)));
      summary.put("p90_ms", r3(quantile(latencies, 0.9)));
      summary.put("p99_ms", r3(quantile(latencies, 0.99)));
      summary.put("p999_ms", r3(quantile(latencies, 0.999)));
      summary.put("max_ms", r3(latencies.isEmpty() ? 0 : latencies.get(latencies.size() - 1)));
      summary.put("mean_ms", r3(mean));
      summary.put("slow_prefixes", slowPrefixes);
      summary.put("slow_share", slowShare);
      summary.put("statuses", codes);
      summary.put("backends", backends);
      summary.put("calls_sent", sent);
      summary.put("wall_s", r3(wall));
      summary.put("cpu_us_per_call", Math.round(cpu / 1e3 / sent * 10) / 10.0);
      summary.put("cpu_note", "process CPU time (user + system, every thread of the JVM: the JIT and GC too, warm-up included) / calls sent");
      summary.put("dispatch_lateness_p99_us", (double) Math.round(quantile(lateness, 0.99)));
    }
    String out = a.get("out");
    if (out != null) {
      Path dir = Paths.get(out);
      Files.createDirectories(dir);
      writeAtomic(dir.resolve("summary.json"), toJson(summary, "") + "\n");
      String[] cols = {"policy", "requests", "ok", "errors", "deadline_exceeded", "dropped", "p50_ms", "p90_ms", "p99_ms",
          "p999_ms", "max_ms", "mean_ms", "slow_share", "cpu_us_per_call", "dispatch_lateness_p99_us"};
      List<String> vals = new ArrayList<>();
      for (String col : cols) vals.add(String.valueOf(summary.get(col)));
      writeAtomic(dir.resolve("summary.csv"), String.join(",", cols) + "\n" + String.join(",", vals) + "\n");
      StringBuilder csv = new StringBuilder("policy,backend,calls,share\n");
      for (Object o : (List<?>) summary.get("backends")) {
        Map<?, ?> b = (Map<?, ?>) o;
        csv.append(String.format("%s,%s,%d,%.6f%n", label, b.get("backend"), b.get("calls"), b.get("share")));
      }
      writeAtomic(dir.resolve("backends.csv"), csv.toString());
    }
    System.out.printf("%s: requests %d ok %d errors %d p50 %s ms p99 %s ms p99.9 %s ms slow_share %s client CPU %s µs per call dispatch lateness p99 %s µs%n",
        label, requests, counts[0], counts[1], summary.get("p50_ms"), summary.get("p99_ms"), summary.get("p999_ms"),
        summary.get("slow_share"), summary.get("cpu_us_per_call"), summary.get("dispatch_lateness_p99_us"));
    System.exit(0);
  }

  static String grpcVersion() {
    // Debian's jars carry no Implementation-Version; the jar's file name does.
    String where = String.valueOf(io.grpc.LoadBalancer.class.getProtectionDomain().getCodeSource().getLocation());
    java.util.regex.Matcher m = java.util.regex.Pattern.compile("grpc-api-([0-9.]+)\\.jar").matcher(where);
    Package p = io.grpc.LoadBalancer.class.getPackage();
    if (p != null && p.getImplementationVersion() != null) return p.getImplementationVersion();
    return m.find() ? m.group(1) : "unknown (" + where + ")";
  }

  static void writeAtomic(Path file, String text) throws IOException {
    Path tmp = file.resolveSibling(file.getFileName() + ".tmp" + ProcessHandle.current().pid());
    Files.write(tmp, text.getBytes(StandardCharsets.UTF_8));
    Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
  }

  static String toJson(Object v, String indent) {
    if (v == null) return "null";
    if (v instanceof String) {
      StringBuilder b = new StringBuilder("\"");
      for (char ch : ((String) v).toCharArray()) {
        if (ch == '"' || ch == '\\') b.append('\\').append(ch);
        else if (ch < 0x20) b.append(String.format("\\u%04x", (int) ch));
        else b.append(ch);
      }
      return b.append('"').toString();
    }
    if (v instanceof Double) {
      double d = (Double) v;
      if (d == Math.rint(d) && Math.abs(d) < 1e15) return String.valueOf((long) d);
      return String.valueOf(d);
    }
    if (v instanceof Number || v instanceof Boolean) return String.valueOf(v);
    String in = indent + "  ";
    if (v instanceof Map) {
      Map<?, ?> m = (Map<?, ?>) v;
      if (m.isEmpty()) return "{}";
      List<String> parts = new ArrayList<>();
      for (Map.Entry<?, ?> e : m.entrySet()) parts.add(in + toJson(String.valueOf(e.getKey()), in) + ": " + toJson(e.getValue(), in));
      return "{\n" + String.join(",\n", parts) + "\n" + indent + "}";
    }
    if (v instanceof List) {
      List<?> l = (List<?>) v;
      if (l.isEmpty()) return "[]";
      List<String> parts = new ArrayList<>();
      for (Object o : l) parts.add(in + toJson(o, in));
      return "[\n" + String.join(",\n", parts) + "\n" + indent + "]";
    }
    return toJson(String.valueOf(v), indent);
  }

  /** Orders `group/index` names by group, then index as a number. */
  static int backendCompare(String a, String b) {
    int ia = a.lastIndexOf('/');
    int ib = b.lastIndexOf('/');
    String ga = ia >= 0 ? a.substring(0, ia) : a;
    String gb = ib >= 0 ? b.substring(0, ib) : b;
    if (!ga.equals(gb)) return ga.compareTo(gb);
    return Long.compare(num(ia >= 0 ? a.substring(ia + 1) : ""), num(ib >= 0 ? b.substring(ib + 1) : ""));
  }

  static long num(String s) {
    try {
      return Long.parseLong(s);
    } catch (NumberFormatException e) {
      return 0;
    }
  }
}
