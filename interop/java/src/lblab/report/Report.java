package lblab.report;

import io.grpc.internal.JsonParser;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Writes results/interop/java.md and java.csv from the files scripts/interop-java.sh leaves in
 * DIR/SCENARIO/: grpc-java-POLICY/summary.json (lblab.client.Client), lblab/summary.json and
 * lblab/targets.csv ({@code lblab loadgen}), backend.txt ({@code lblab backend}'s names and
 * addresses). The tables and agreement rule of interop/go/report (and interop/node/report.js),
 * with p99.9.
 *
 * <pre>report --dir results/interop/java --out results/interop/java.md --command '...' one-slow ...</pre>
 */
public final class Report {
  private Report() {}

  /** lblab's agreement rule (record/src/compare.rs): within ±20 %, or within 1 ms. */
  static boolean agree(double a, double b) {
    return Math.abs(a - b) <= 1 || Math.abs(a - b) <= 0.2 * Math.abs(b);
  }

  static final double SHARE_TOLERANCE = 0.03;
  static final List<String> ORDER = List.of("round_robin", "pick_first", "peak_ewma_experimental");

  static final class Row {
    String client;
    String policy;
    int requests;
    int ok;
    int errors;
    double p50;
    double p99;
    double p999;
    double share;
    double cpu;
    double late;
  }

  @SuppressWarnings("unchecked")
  static Map<String, ?> readJson(Path p) {
    try {
      return (Map<String, ?>) JsonParser.parse(new String(Files.readAllBytes(p), StandardCharsets.UTF_8));
    } catch (IOException | RuntimeException e) {
      return null;
    }
  }

  static double num(Map<String, ?> m, String k) {
    Object o = m.get(k);
    return o instanceof Double ? (Double) o : Double.NaN;
  }

  static final Pattern BACKEND_LINE = Pattern.compile("^(\\S+/\\d+)\\s+(\\S+:\\d+)$");

  static Map<String, String> backendNames(Path file) {
    Map<String, String> names = new HashMap<>();
    try {
      for (String l : Files.readAllLines(file)) {
        Matcher m = BACKEND_LINE.matcher(l.trim());
        if (m.matches()) names.put(m.group(2), m.group(1));
      }
    } catch (IOException e) {
      // no names
    }
    return names;
  }

  static List<Row> javaRows(Path dir) throws IOException {
    List<Row> rows = new ArrayList<>();
    List<Path> entries = new ArrayList<>();
    try (var s = Files.list(dir)) {
      s.filter(p -> p.getFileName().toString().startsWith("grpc-java-")).sorted().forEach(entries::add);
    }
    for (Path e : entries) {
      Map<String, ?> s = readJson(e.resolve("summary.json"));
      if (s == null) {
        System.err.println("warning: no summary in " + e);
        continue;
      }
      Row r = new Row();
      r.client = "grpc-java " + s.get("grpc_java_version");
      r.policy = (String) s.get("policy");
      r.requests = (int) num(s, "requests");
      r.ok = (int) num(s, "ok");
      r.errors = (int) num(s, "errors");
      r.p50 = num(s, "p50_ms");
      r.p99 = num(s, "p99_ms");
      r.p999 = num(s, "p999_ms");
      r.share = num(s, "slow_share");
      r.cpu = num(s, "cpu_us_per_call");
      r.late = num(s, "dispatch_lateness_p99_us");
      rows.add(r);
    }
    rows.sort((a, b) -> Integer.compare(rank(a.policy), rank(b.policy)));
    return rows;
  }

  static int rank(String p) {
    int i = ORDER.indexOf(p);
    return i < 0 ? ORDER.size() : i;
  }

  @SuppressWarnings("unchecked")
  static List<Row> lblabRows(Path dir, Map<String, String> names, String slow) throws IOException {
    Map<String, ?> s = readJson(dir.resolve("lblab/summary.json"));
    if (s == null) return List.of();
    Map<String, String> notes = new HashMap<>();
    Object ns = s.get("notes");
    if (ns instanceof List) {
      for (Object n : (List<?>) ns) {
        List<?> pair = (List<?>) n;
        notes.put(String.valueOf(pair.get(0)), String.valueOf(pair.get(1)));
      }
    }
    Map<String, double[]> shares = new HashMap<>(); // policy -> {total, slow}
    List<String> lines = Files.readAllLines(dir.resolve("lblab/targets.csv"));
    Map<String, Integer> col = new HashMap<>();
    String[] head = lines.get(0).split(",");
    for (int i = 0; i < head.length; i++) col.put(head[i], i);
    for (String l : lines.subList(1, lines.size())) {
      if (l.isBlank()) continue;
      String[] f = l.split(",");
      String name = names.get(f[col.get("address")]);
      if (name == null && col.containsKey("target")) name = names.get(f[col.get("target")]);
      double[] t = shares.computeIfAbsent(f[col.get("policy")], k -> new double[2]);
      double n = Double.parseDouble(f[col.get("sends")]);
      t[0] += n;
      if (name != null && name.startsWith(slow)) t[1] += n;
    }
    List<Row> rows = new ArrayList<>();
    for (Object o : (List<?>) s.get("rows")) {
      Map<String, ?> m = (Map<String, ?>) o;
      Row r = new Row();
      r.client = "lblab (tonic)";
      r.policy = (String) m.get("policy");
      r.requests = (int) num(m, "requests");
      r.ok = (int) num(m, "ok");
      r.errors = (int) num(m, "errors");
      r.p50 = num(m, "p50_ms");
      r.p99 = num(m, "p99_ms");
      r.p999 = num(m, "p999_ms");
      double[] t = shares.get(r.policy);
      r.share = t != null && t[0] > 0 ? t[1] / t[0] : 0;
      r.cpu = parse(notes.get(r.policy + ": client cpu per call us"));
      r.late = parse(notes.get(r.policy + ": dispatch lateness p99 us"));
      rows.add(r);
    }
    return rows;
  }

  static double parse(String s) {
    try {
      return Double.parseDouble(s);
    } catch (RuntimeException e) {
      return Double.NaN;
    }
  }

  static String f2(double x) {
    return Double.isNaN(x) ? "–" : String.format("%.2f", x);
  }

  static String pct(double x) {
    return String.format("%.1f %%", 100 * x);
  }

  static String yn(boolean ok) {
    return ok ? "yes" : "**no**";
  }

  static Row find(List<Row> rows, String client, String policy) {
    for (Row r : rows) if (r.client.startsWith(client) && r.policy.equals(policy)) return r;
    return null;
  }

  public static void main(String[] argv) throws Exception {
    Map<String, String> a = new HashMap<>();
    List<String> scenarios = new ArrayList<>();
    for (int i = 0; i < argv.length; i++) {
      if (argv[i].startsWith("--") && i + 1 < argv.length) a.put(argv[i].substring(2), argv[++i]);
      else scenarios.add(argv[i]);
    }
    Path dir = Paths.get(a.get("dir"));
    String out = a.get("out");
    List<String> doc = new ArrayList<>();
    List<String> csv = new ArrayList<>();
    String version = "?";
    for (String s : scenarios) {
      Map<String, ?> v = readJson(dir.resolve(s).resolve("grpc-java-round_robin/summary.json"));
      if (v != null) {
        version = v.get("grpc_java_version") + " on Java " + v.get("java_version");
        break;
      }
    }
    doc.add("# grpc-java beside lblab on the same fleet");
    doc.add("");
    doc.add("<!-- Generated by scripts/interop-java.sh (interop/java/src/lblab/report); do not edit by hand. -->");
    doc.add("");
    doc.add(String.format("Each scenario's fleet is one `lblab backend` process (tonic servers on loopback); against it, one after the other, "
        + "grpc-java %s ([`interop/java/src/lblab/client`](../../interop/java/src/lblab/client/Client.java), Debian's `libgrpc-java`, Netty) runs its own "
        + "`round_robin` and `pick_first` and `peak_ewma_experimental` (the port in [`interop/java/`](../../interop/java/README.md)), "
        + "then `lblab loadgen` runs lblab's `round_robin`, `peak_ewma` (`peak_ewma_experimental`) and `tower_p2c_peak_ewma`. "
        + "Every run: open loop, Poisson arrivals at %s/s over %s clients (each its own channel and connections), %s s warm-up "
        + "then %s s measured, deadline 1 s, latency from the intended send time.",
        version, a.getOrDefault("rate", "?"), a.getOrDefault("clients", "?"), a.getOrDefault("warmup", "?"), a.getOrDefault("duration", "?")));
    doc.add("");
    doc.add("Regenerate:");
    doc.add("");
    doc.add("```sh");
    doc.add(a.getOrDefault("command", "scripts/interop-java.sh").trim());
    doc.add("```");
    doc.add("");
    doc.add("**Agreement rule** (lblab's sim-vs-real rule, `record/src/compare.rs`): two p50s (or p99s) agree when they are within "
        + "±20 % of the second or within 1 ms; shares agree within 3 points. *Share*: for grpc-java from each reply's `backend` field "
        + "(OK calls), for lblab from `targets.csv` (calls sent after the warm-up). *CPU µs/call*: for grpc-java the whole JVM's "
        + "CPU time (user + system, every thread: JIT compiler and GC too, warm-up included) over the calls it sent; for lblab the client runtime's, as "
        + "`lblab loadgen` prints it. " + tailNote(a.getOrDefault("rate", "?"), a.getOrDefault("duration", "?")));
    doc.add("");
    for (String scenario : scenarios) {
      Path d = dir.resolve(scenario);
      if (!Files.isDirectory(d)) continue;
      Map<String, String> names = backendNames(d.resolve("backend.txt"));
      String slow = "slow/";
      Map<String, ?> rr = readJson(d.resolve("grpc-java-round_robin/summary.json"));
      if (rr != null && rr.get("slow_prefixes") instanceof List && !((List<?>) rr.get("slow_prefixes")).isEmpty()) {
        slow = String.valueOf(((List<?>) rr.get("slow_prefixes")).get(0));
      }
      int nslow = 0;
      for (String n : names.values()) if (n.startsWith(slow)) nslow++;
      List<Row> rows = new ArrayList<>(javaRows(d));
      rows.addAll(lblabRows(d, names, slow));
      double fair = names.isEmpty() ? 0 : (double) nslow / names.size();
      doc.add("## " + scenario);
      doc.add("");
      doc.add(String.format("%d backends, %d of them in `%s` (fair share %s). Raw files: [`java/%s/`](java/%s/).",
          names.size(), nslow, slow.replaceAll("/$", ""), pct(fair), scenario, scenario));
      doc.add("");
      doc.add("| client | policy | requests | ok | errors | p50 ms | p99 ms | p99.9 ms | share to `" + slow
          + "` | CPU µs/call | dispatch lateness p99 µs |");
      doc.add("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
      for (Row r : rows) {
        doc.add(String.format("| %s | %s | %d | %d | %d | %s | %s | %s | %s | %s | %s |", r.client, r.policy, r.requests, r.ok,
            r.errors, f2(r.p50), f2(r.p99), f2(r.p999), pct(r.share), f2(r.cpu), f2(r.late).replaceAll("\\.00$", "")));
      }
      doc.add("");
      Object[][] pairs = {
        {"grpc-java round_robin vs lblab round_robin", find(rows, "grpc-java", "round_robin"), find(rows, "lblab", "round_robin")},
        {"grpc-java peak_ewma (port) vs lblab peak_ewma", find(rows, "grpc-java", "peak_ewma_experimental"), find(rows, "lblab", "peak_ewma")},
        {"grpc-java peak_ewma (port) vs tower_p2c_peak_ewma", find(rows, "grpc-java", "peak_ewma_experimental"),
            find(rows, "lblab", "tower_p2c_peak_ewma")},
      };
      doc.add("| pair | p50 ms | agree | p99 ms | agree | p99.9 ms | share | agree |");
      doc.add("|---|---|---|---|---|---|---|---|");
      for (Object[] p : pairs) {
        Row x = (Row) p[1];
        Row y = (Row) p[2];
        if (x == null || y == null) continue;
        boolean shareOk = Math.abs(x.share - y.share) <= SHARE_TOLERANCE;
        String policy = x.policy.equals("peak_ewma_experimental") ? x.policy + " (port)" : x.policy;
        csv.add(String.join(",", "grpc-java", x.client.replaceFirst("^grpc-java ", ""), scenario, policy, y.policy, slow,
            String.format("%.4f", x.share), String.format("%.4f", y.share), f2(x.p50), f2(y.p50), f2(x.p99), f2(y.p99),
            f2(x.p999), f2(y.p999), String.valueOf(agree(x.p50, y.p50)), String.valueOf(agree(x.p99, y.p99)),
            String.valueOf(shareOk)));
        doc.add(String.format("| %s | %s vs %s | %s | %s vs %s | %s | %s vs %s | %s vs %s | %s |", p[0], f2(x.p50), f2(y.p50),
            yn(agree(x.p50, y.p50)), f2(x.p99), f2(y.p99), yn(agree(x.p99, y.p99)), f2(x.p999), f2(y.p999), pct(x.share),
            pct(y.share), yn(shareOk)));
      }
      doc.add("");
    }
    Files.write(Paths.get(out), String.join("\n", doc).getBytes(StandardCharsets.UTF_8));
    List<String> lines = new ArrayList<>();
    lines.add("client,version,scenario,policy,lblab_policy,slow_group,share,lblab_share,p50_ms,lblab_p50_ms,p99_ms,lblab_p99_ms,"
        + "p999_ms,lblab_p999_ms,p50_agrees,p99_agrees,shares_agree");
    lines.addAll(csv);
    Files.write(Paths.get(out.replaceAll("\\.md$", "") + ".csv"), (String.join("\n", lines) + "\n").getBytes(StandardCharsets.UTF_8));
  }

  /** How many calls a run's p99 and p99.9 rest on, from its rate and measured seconds. */
  static String tailNote(String rate, String duration) {
    try {
      double calls = Double.parseDouble(rate) * Double.parseDouble(duration);
      if (calls >= 1) {
        return String.format(java.util.Locale.ROOT,
            "A run measures about %.0f calls, so its p99 rests on the slowest %.0f and its p99.9 on the slowest %.0f: "
                + "read p99.9 differences of a few milliseconds as noise.", calls, calls / 100, calls / 1000);
      }
    } catch (NumberFormatException e) {
      // fall through
    }
    return "A run's p99.9 rests on a thousandth of its calls.";
  }
}
