package lblab.peakewma;

import io.grpc.LoadBalancerRegistry;
import io.grpc.NameResolver.ConfigOrError;
import io.grpc.internal.JsonParser;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * Replays lblab's conformance vectors (conformance/vectors/peak_ewma_experimental.json, format in
 * conformance/README.md), read at test time (from $LBLAB_VECTORS, or the path given), parsed with
 * grpc-java's own JsonParser (the parser a service config goes through, so the config cases reach
 * the provider as grpc-java would hand them over), against the port: every config case through
 * {@code PeakEwmaLoadBalancerProvider.parseLoadBalancingPolicyConfig}, every sequence through
 * PeakEwma's Load and pick (fed the file's draws by a scripted source that fails if the core asks
 * for one more or one fewer), doing what PeakEwmaLoadBalancer does:
 *
 * <ul>
 *   <li>an endpoint that becomes READY (from any other state) gets a fresh Load; READY to READY
 *       keeps it; a new endpoint gets one at set_endpoints (as lblab);
 *   <li>a pick sees the READY endpoints in list order; a unary call holds the Load it was picked
 *       with;
 *   <li>only unary calls count (started at the pick, ended at completion, a sample unless
 *       CANCELLED); streaming calls are picked the same way and touch nothing.
 * </ul>
 *
 * After every step: the pick and, per endpoint, id, state, outstanding, estimate_ns and cost_ns.
 * A config case with an unknown field is accepted, the field ignored, as grpc-java's providers
 * and lblab do. Skipped, and said so: a sequence whose lblabAblation pins a variation this port
 * does not implement.
 */
final class VectorReplay {
  private VectorReplay() {}

  static int configReplayed, sequencesPassed, sequencesSkipped, steps, sequences;

  @SuppressWarnings("unchecked")
  static Map<String, ?> load() throws Exception {
    String p = System.getenv("LBLAB_VECTORS");
    if (p == null || p.isEmpty()) p = System.getProperty("lblab.vectors");
    Path path = Paths.get(p);
    Map<String, ?> v =
        (Map<String, ?>) JsonParser.parse(new String(Files.readAllBytes(path), StandardCharsets.UTF_8));
    Tests.check(
        "lblab-conformance-vectors".equals(v.get("format"))
            && Objects.equals(v.get("version"), 1.0)
            && PeakEwmaLoadBalancerProvider.NAME.equals(v.get("policy")),
        path + ": not version 1 vectors for " + PeakEwmaLoadBalancerProvider.NAME);
    return v;
  }

  static Map<String, ?> withoutLblabOnly(Map<String, ?> m) {
    Map<String, Object> out = new LinkedHashMap<>(m);
    out.remove("lblabAblation");
    return out;
  }

  @SuppressWarnings("unchecked")
  static void configCases(Map<String, ?> v) throws Exception {
    PeakEwmaLoadBalancerProvider provider =
        (PeakEwmaLoadBalancerProvider)
            LoadBalancerRegistry.getDefaultRegistry().getProvider(PeakEwmaLoadBalancerProvider.NAME);
    List<Map<String, ?>> cases = (List<Map<String, ?>>) v.get("config_cases");
    Tests.check(!cases.isEmpty(), "no config cases");
    int n = 0;
    for (Map<String, ?> c : cases) {
      String where = "config case #" + n++ + " " + c.get("input");
      Map<String, ?> input = (Map<String, ?>) c.get("input");
      ConfigOrError got = provider.parseLoadBalancingPolicyConfig(input);
      if (Boolean.TRUE.equals(c.get("accepted"))) {
        Tests.check(got.getError() == null, where + ": rejected: " + got.getError());
        Map<String, ?> norm = withoutLblabOnly((Map<String, ?>) c.get("normalized"));
        Object want = provider.parseLoadBalancingPolicyConfig(norm).getConfig();
        Tests.check(
            got.getConfig().equals(want),
            where + ": got " + got.getConfig() + ", the normalized form parses to " + want);
        Object gotJson = JsonParser.parse(PeakEwmaLoadBalancerProvider.toJson((PeakEwma.Config) got.getConfig()));
        Tests.check(gotJson.equals(norm), where + ": normalized " + gotJson + ", want " + norm);
        configReplayed++;
        continue;
      }
      String field = (String) ((Map<String, ?>) c.get("error")).get("field");
      Tests.check(got.getError() != null, where + ": accepted as " + got.getConfig());
      String desc = got.getError().getDescription();
      Tests.check(
          desc.startsWith(PeakEwmaLoadBalancerProvider.NAME + "." + field + ": "),
          where + ": the error does not name " + field + ": " + desc);
      configReplayed++;
    }
    System.out.println("vectors: config cases " + configReplayed + " replayed");
  }

  /** The semantics a sequence encodes: CHOSEN, or what its lblabAblation pins; null and a reason in why[0] otherwise. */
  @SuppressWarnings("unchecked")
  static PeakEwma.Semantics semanticsOf(Map<String, ?> config, String[] why) throws Exception {
    Map<String, ?> a = (Map<String, ?>) config.get("lblabAblation");
    if (a == null) a = new HashMap<>();
    PeakEwma.Semantics s = PeakEwma.Semantics.chosen();
    if (a.containsKey("initial")) s.initial = (String) a.get("initial");
    if (a.containsKey("idle")) s.idle = (String) a.get("idle");
    if (a.containsKey("failures")) s.failures = (String) a.get("failures");
    if (a.containsKey("peak")) s.peak = (String) a.get("peak");
    if (a.containsKey("idlePicks")) s.idlePicks = (Double) a.get("idlePicks");
    if (a.containsKey("errorPenalty")) s.errorPenalty = (Double) a.get("errorPenalty");
    if (a.containsKey("errorSamples")) s.errorSamples = ((Double) a.get("errorSamples")).intValue();
    if (a.containsKey("stall")) s.stall = (Boolean) a.get("stall");
    if (a.containsKey("idleMaxTime")) {
      Map<String, Object> m = new HashMap<>();
      m.put("d", a.get("idleMaxTime"));
      s.idleMaxTime = io.grpc.internal.JsonUtil.getStringAsDuration(m, "d");
    } else if (!s.idle.equals("pick_clock")) {
      s.idleMaxTime = 0; // as lblab: only the pick clock has a bound by default
    }
    // As lblab: the semantics as first written have none of the later rules unless told.
    if (s.initial.equals("prior")) {
      PeakEwma.Semantics fw = PeakEwma.Semantics.firstWritten();
      if (!a.containsKey("errorPenalty")) s.errorPenalty = fw.errorPenalty;
      if (!a.containsKey("failures")) s.failures = fw.failures;
      if (!a.containsKey("errorSamples")) s.errorSamples = fw.errorSamples;
      if (!a.containsKey("peak")) s.peak = fw.peak;
      if (!a.containsKey("stall")) s.stall = fw.stall;
    }
    Map<String, String> defaults =
        Map.of("decay", "time_weighted", "sampling", "distinct", "streams", "ignore", "probes", "many");
    Set<String> implemented =
        Set.of("initial", "idle", "idlePicks", "idleMaxTime", "errorPenalty", "failures", "errorSamples", "peak", "stall");
    for (Map.Entry<String, ?> e : a.entrySet()) {
      if (implemented.contains(e.getKey())) continue;
      if (!Objects.equals(defaults.get(e.getKey()), e.getValue())) {
        why[0] = "lblabAblation." + e.getKey() + " = " + e.getValue();
        return null;
      }
    }
    boolean ok =
        Set.of("zero", "prior").contains(s.initial)
            && Set.of("pick_clock", "to_zero").contains(s.idle)
            && Set.of("stalled", "jump").contains(s.peak)
            && Set.of("hold", "sample", "ignore").contains(s.failures);
    if (!ok) {
      why[0] = "lblabAblation " + a;
      return null;
    }
    return s;
  }

  /** One pick's draws in order; records a mismatch with the count the core asks for. */
  static final class Scripted implements PeakEwma.Rand {
    final List<Double> draws;
    final int n;
    int used;
    String err;

    Scripted(List<Double> draws, int n) {
      this.draws = draws;
      this.n = n;
    }

    @Override
    public int nextInt(int bound) {
      if (bound != n) err = "drew among " + bound + ", the vector among " + n;
      if (used >= draws.size()) {
        err = "the core asked for draw " + (used + 1) + ", the vector gives " + draws.size();
        return used++ % bound;
      }
      return draws.get(used++).intValue();
    }
  }

  static boolean closeTo(double got, double want, double rel, double abs) {
    return Math.abs(got - want) <= Math.max(abs, rel * Math.abs(want));
  }

  @SuppressWarnings("unchecked")
  static void sequences(Map<String, ?> v) throws Exception {
    Map<String, ?> tol = (Map<String, ?>) v.get("tolerance");
    double rel = (Double) tol.get("relative");
    double abs = (Double) tol.get("absolute_ns");
    List<Map<String, ?>> seqs = (List<Map<String, ?>>) v.get("sequences");
    Tests.check(!seqs.isEmpty(), "no sequences");
    List<String> failed = new ArrayList<>();
    for (Map<String, ?> seq : seqs) {
      sequences++;
      String name = (String) seq.get("name");
      Map<String, ?> config = (Map<String, ?>) seq.get("config");
      String[] why = new String[1];
      PeakEwma.Semantics sem = semanticsOf(config, why);
      if (sem == null) {
        System.out.println("skipped " + name + ": it pins " + why[0] + ", a lab-only variation this port does not implement");
        sequencesSkipped++;
        continue;
      }
      try {
        steps += replay(seq, sem, rel, abs);
        sequencesPassed++;
        System.out.println("--- PASS: " + name);
      } catch (AssertionError e) {
        System.out.println("--- FAIL: " + name + ": " + e.getMessage());
        failed.add(name);
      }
    }
    System.out.println(
        "vectors: sequences " + sequencesPassed + " of " + sequences + " passed, " + sequencesSkipped
            + " skipped, " + steps + " steps");
    Tests.check(failed.isEmpty(), "sequences failed: " + failed);
  }

  static final class Ep {
    String state = "IDLE";
    PeakEwma.Load load;
  }

  static final class Call {
    final PeakEwma.Load load;
    final boolean unary;

    Call(PeakEwma.Load load, boolean unary) {
      this.load = load;
      this.unary = unary;
    }
  }

  static int num(Object o) {
    return ((Double) o).intValue();
  }

  @SuppressWarnings("unchecked")
  static int replay(Map<String, ?> seq, PeakEwma.Semantics sem, double rel, double abs) throws Exception {
    PeakEwma.Config cfg = PeakEwmaLoadBalancerProvider.parse(withoutLblabOnly((Map<String, ?>) seq.get("config")));
    PeakEwma.Context ctx = new PeakEwma.Context(cfg, sem);
    Map<Integer, Ep> endpoints = new HashMap<>();
    List<Integer> order = new ArrayList<>();
    Map<Integer, Call> calls = new HashMap<>();
    List<Map<String, ?>> stepList = (List<Map<String, ?>>) seq.get("steps");
    int n = 0;
    for (Map<String, ?> st : stepList) {
      String op = (String) st.get("op");
      long now = ((Double) st.get("at_ns")).longValue();
      String where = "step " + n++ + " (" + op + " at " + now + " ns)";
      Map<String, ?> expect = (Map<String, ?>) st.get("expect");
      if (expect == null) expect = new HashMap<>();
      switch (op) {
        case "set_endpoints": {
          Map<Integer, Ep> next = new HashMap<>();
          order = new ArrayList<>();
          for (Object id : (List<?>) st.get("endpoints")) {
            int i = num(id);
            Ep e = endpoints.get(i);
            if (e == null) {
              e = new Ep();
              e.load = new PeakEwma.Load(ctx, now);
            }
            next.put(i, e);
            order.add(i);
          }
          endpoints = next;
          break;
        }
        case "connectivity": {
          Ep e = endpoints.get(num(st.get("endpoint")));
          Tests.check(e != null, where + ": endpoint not in the list");
          String s = (String) st.get("state");
          if (s.equals("READY") && !e.state.equals("READY")) e.load = new PeakEwma.Load(ctx, now);
          e.state = s;
          break;
        }
        case "pick": {
          List<Integer> readyIds = new ArrayList<>();
          List<PeakEwma.Load> ready = new ArrayList<>();
          String agg = "TRANSIENT_FAILURE";
          for (String want : new String[] {"IDLE", "CONNECTING", "READY"}) {
            for (int id : order) if (endpoints.get(id).state.equals(want)) agg = want;
          }
          for (int id : order) {
            if (endpoints.get(id).state.equals("READY")) {
              readyIds.add(id);
              ready.add(endpoints.get(id).load);
            }
          }
          List<Double> draws = (List<Double>) st.get("draws");
          if (draws == null) draws = List.of();
          String result;
          int gotId = -1;
          if (agg.equals("READY")) {
            Scripted rng = new Scripted(draws, ready.size());
            PeakEwma.Load[] arr = ready.toArray(new PeakEwma.Load[0]);
            int i = PeakEwma.pick(arr, arr.length, now, ctx, rng);
            Tests.check(
                rng.err == null && rng.used == draws.size(),
                where + ": draws: used " + rng.used + " of " + draws.size() + ": " + rng.err);
            result = "endpoint";
            gotId = readyIds.get(i);
            boolean unary = "unary".equals(st.get("kind"));
            if (unary) arr[i].started(now);
            if (st.get("call") != null) calls.put(num(st.get("call")), new Call(arr[i], unary));
          } else {
            Tests.check(draws.isEmpty(), where + ": draws without a READY endpoint");
            result = agg.equals("TRANSIENT_FAILURE") ? "fail" : "queue";
          }
          Map<String, ?> want = (Map<String, ?>) expect.get("pick");
          Tests.check(
              want != null
                  && result.equals(want.get("result"))
                  && (!result.equals("endpoint") || (want.get("endpoint") != null && num(want.get("endpoint")) == gotId)),
              where + ": pick " + result + " " + gotId + ", want " + want);
          break;
        }
        case "done": {
          Call c = calls.remove(num(st.get("call")));
          Tests.check(c != null, where + ": unknown call");
          Tests.check(c.unary == "unary".equals(st.get("kind")), where + ": kind differs from the pick's");
          if (c.unary) {
            String status = (String) st.get("status");
            long elapsed = ((Double) st.get("elapsed_ns")).longValue();
            c.load.ended(now, elapsed, !status.equals("CANCELLED"), !status.equals("OK"), ctx);
          }
          break;
        }
        case "check":
          break;
        default:
          throw new AssertionError(where + ": op " + op + " is not one of peak_ewma_experimental's");
      }
      List<Map<String, ?>> wantEps = (List<Map<String, ?>>) expect.get("endpoints");
      if (wantEps == null) wantEps = List.of();
      Tests.check(wantEps.size() == order.size(), where + ": " + order.size() + " endpoints, want " + wantEps.size());
      for (int k = 0; k < wantEps.size(); k++) {
        Map<String, ?> w = wantEps.get(k);
        int id = order.get(k);
        Ep e = endpoints.get(id);
        String at = where + ", endpoint #" + k;
        Tests.check(
            id == num(w.get("endpoint")) && e.state.equals(w.get("state")) && e.load.outstanding == num(w.get("outstanding")),
            at + ": id " + id + " state " + e.state + " outstanding " + e.load.outstanding + ", want " + w);
        double est = e.load.decayed(now, ctx);
        double wantEst = (Double) w.get("estimate_ns");
        Tests.check(closeTo(est, wantEst, rel, abs), at + ": estimate_ns " + est + ", want " + wantEst);
        double cost = e.load.cost(now, ctx);
        double wantCost = (Double) w.get("cost_ns");
        Tests.check(closeTo(cost, wantCost, rel, abs), at + ": cost_ns " + cost + ", want " + wantCost);
      }
    }
    return stepList.size();
  }
}
