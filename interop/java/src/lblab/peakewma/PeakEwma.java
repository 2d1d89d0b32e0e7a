package lblab.peakewma;

/**
 * The algorithm of peak_ewma_experimental, free of grpc-java: the peak EWMA of one endpoint, its
 * cost, and the pick among explicit candidates at explicit times. Time is long nanoseconds from an
 * arbitrary origin; estimates and costs are double nanoseconds. The semantics are lblab's default
 * (docs/design.md, "Round three", "The decision"), copied from the grpc-go port
 * (interop/go/peakewma/core.go) and the grpc-js port (interop/node/peak_ewma_core.js); the
 * proposal as first written is kept as FIRST_WRITTEN for the conformance vectors that pin it:
 *
 * <pre>
 * per endpoint: e (estimate), f (share of failed calls), sampled, t (time of the last sample),
 *   k (the policy's pick count then), p (its last progress), outstanding
 * on READY:     e = 0, f = 0, sampled = false, t = p = now, k = K, outstanding = 0
 * w(now)      = min(max(exp(-(now-t)/decayTime), exp(-(K-k)/idlePicks)),
 *                   exp(-(now-t)/max(idleMaxTime, decayTime)))
 * cost(now)   = max(e*w(now)/(1-min(f, 0.999)), outstanding > 0 ? now-p : 0) * (outstanding+1)
 * pick:         choiceCount distinct READY draws, the lowest cost, the earlier draw on a tie;
 *               K += 1; outstanding += 1 (if it was 0: p = max(p, now))
 * done(rtt,ok): outstanding -= 1; if cancelled: nothing else
 *               quiet = p <= now-rtt; p = max(p, now)
 *               if !sampled: e = rtt, f = ok ? 0 : 1
 *               else: v = min(w, 1-1/errorSamples); f = f*v + (1-v)*(ok ? 0 : 1)
 *                     !ok: e = max(e, rtt); rtt > e*w and quiet: e = rtt; else e = e*w + (1-w)*rtt
 *               sampled = true, t = now, k = K
 * </pre>
 *
 * idlePicks is 500 × decayTime in seconds (rounded, at least 1) and idleMaxTime 6 × decayTime
 * (5000 and 60 s at the default decayTime of 10 s) unless a Semantics overrides them.
 *
 * <p>Nothing here is thread-safe: the grpc-java plumbing (PeakEwmaLoadBalancer) holds one lock
 * per balancer around every call into it.
 */
public final class PeakEwma {
  private PeakEwma() {}

  /** Where choiceCount is clamped. */
  public static final int MAX_CHOICES = 10;

  /** The pick clock's rate: 500 picks per second of decayTime. */
  public static final double IDLE_PICK_RATE = 500;

  /** The pick clock's bound: 6 × decayTime. */
  public static final double IDLE_MAX_DECAY_TIMES = 6;

  /** A parsed config; durations in ns. */
  public static final class Config {
    public final int choiceCount;
    public final long decayTime;
    public final long defaultRtt;

    public Config(int choiceCount, long decayTime, long defaultRtt) {
      this.choiceCount = choiceCount;
      this.decayTime = decayTime;
      this.defaultRtt = defaultRtt;
    }

    /** The config of {@code {}}. */
    public static final Config DEFAULT = new Config(2, 10_000_000_000L, 30_000_000L);

    @Override
    public boolean equals(Object o) {
      if (!(o instanceof Config)) return false;
      Config c = (Config) o;
      return c.choiceCount == choiceCount && c.decayTime == decayTime && c.defaultRtt == defaultRtt;
    }

    @Override
    public int hashCode() {
      return Long.hashCode(decayTime * 31 + defaultRtt) * 31 + choiceCount;
    }

    @Override
    public String toString() {
      return "{choiceCount=" + choiceCount + ", decayTime=" + decayTime + "ns, defaultRtt="
          + defaultRtt + "ns}";
    }
  }

  /**
   * The variant of the algorithm (lblab's lab-only {@code lblabAblation}; a grpc-java user only
   * ever gets CHOSEN).
   */
  public static final class Semantics {
    public String initial = "zero"; // "zero" (CHOSEN) or "prior" (the estimate starts at defaultRtt)
    public String idle = "pick_clock"; // "pick_clock" (CHOSEN) or "to_zero" (wall clock only)
    public double idlePicks = 0; // 0: 500 × decayTime in seconds, rounded, at least 1
    public long idleMaxTime = -1; // ns; -1: 6 × decayTime; 0: no wall-clock bound
    public double errorPenalty = 1; // the cost's factor 1 + p·f/(1−f)
    public String failures = "hold"; // "hold" (CHOSEN), "sample" or "ignore"
    public int errorSamples = 10; // each answer weighs at least 1/errorSamples in f
    public String peak = "stalled"; // "stalled" (CHOSEN) or "jump"
    public boolean stall = true; // the stall-aware cost (CHOSEN)

    /** lblab's default since its design search's third round. */
    public static Semantics chosen() {
      return new Semantics();
    }

    /** The proposal as first written. */
    public static Semantics firstWritten() {
      Semantics s = new Semantics();
      s.initial = "prior";
      s.idle = "to_zero";
      s.idleMaxTime = 0;
      s.errorPenalty = 0;
      s.failures = "sample";
      s.errorSamples = 0;
      s.peak = "jump";
      s.stall = false;
      return s;
    }
  }

  /** What one balancer shares among its endpoints: config, semantics and the pick clock. */
  public static final class Context {
    public Config config;
    public final Semantics sem;
    public long picks;
    private double idlePicks;
    private double idleMaxTime; // ns, 0: none

    public Context(Config c, Semantics s) {
      sem = s;
      setConfig(c);
    }

    /** Replaces the config (a service config update); the pick count stays. */
    public void setConfig(Config c) {
      config = c;
      double tau = c.decayTime;
      idlePicks = sem.idlePicks > 0 ? sem.idlePicks : Math.max(1, Math.round(IDLE_PICK_RATE * tau / 1e9));
      idleMaxTime = sem.idleMaxTime < 0 ? IDLE_MAX_DECAY_TIMES * tau : sem.idleMaxTime;
    }
  }

  /** One endpoint's state: a new one on every transition to READY. */
  public static final class Load {
    public double estimate;
    public double errors;
    public long stamp;
    public boolean sampled;
    public long picksAt;
    public int outstanding;
    public long progress;

    /** An endpoint's state at {@code now}, when it becomes READY. */
    public Load(Context ctx, long now) {
      stamp = now;
      progress = now;
      picksAt = ctx.picks;
      if (ctx.sem.initial.equals("prior")) estimate = ctx.config.defaultRtt;
    }

    /** w(now); a clock behind the stamp counts as no time passed. */
    double weight(long now, Context ctx) {
      double dt = Math.max(0, (double) (now - stamp));
      double tau = ctx.config.decayTime;
      double wall = Math.exp(-dt / tau);
      if (!ctx.sem.idle.equals("pick_clock")) return wall;
      double picks = ctx.picks > picksAt ? (double) (ctx.picks - picksAt) : 0;
      double w = Math.max(wall, Math.exp(-picks / ctx.idlePicks));
      if (ctx.idleMaxTime == 0) return w;
      return Math.min(w, Math.exp(-dt / Math.max(ctx.idleMaxTime, tau)));
    }

    /** The endpoint's cost at {@code now}; reading it changes nothing. */
    public double cost(long now, Context ctx) {
      double e = estimate * weight(now, ctx);
      double p = ctx.sem.errorPenalty;
      if (p != 0) {
        double f = Math.min(errors, 0.999);
        e *= 1 + p * f / (1 - f);
      }
      if (ctx.sem.stall && outstanding > 0) {
        // A pending call's age is a lower bound on its RTT: a stall is seen while it happens.
        e = Math.max(e, Math.max(0, (double) (now - progress)));
      }
      return e * (outstanding + 1);
    }

    /** cost / (outstanding + 1): the estimate as the cost reads it. */
    public double decayed(long now, Context ctx) {
      return cost(now, ctx) / (outstanding + 1);
    }

    /** A call picked this endpoint at {@code now}; one that makes it busy is progress. */
    public void started(long now) {
      if (outstanding == 0 && now > progress) progress = now;
      outstanding++;
    }

    /**
     * A call started here ended at {@code now} after {@code elapsed} ns. {@code sample} false
     * (cancelled by the client) only takes it off the outstanding calls; {@code failed}: not OK.
     */
    public void ended(long now, long elapsed, boolean sample, boolean failed, Context ctx) {
      if (outstanding > 0) outstanding--;
      if (!sample) return;
      boolean quiet = progress <= now - elapsed;
      if (now > progress) progress = now;
      double rtt = elapsed;
      double failure = failed ? 1 : 0;
      if (!sampled && !ctx.sem.initial.equals("prior")) {
        estimate = rtt;
        errors = failure;
      } else {
        double w = weight(now, ctx);
        double decayed = estimate * w;
        double we = ctx.sem.errorSamples > 0 ? Math.min(w, 1 - 1.0 / ctx.sem.errorSamples) : w;
        errors = errors * we + (1 - we) * failure;
        if (failed && ctx.sem.failures.equals("ignore")) {
          estimate = decayed;
        } else if (failed && ctx.sem.failures.equals("hold")) {
          estimate = Math.max(estimate, rtt);
        } else if (rtt > decayed && (!ctx.sem.peak.equals("stalled") || quiet)) {
          estimate = rtt;
        } else {
          estimate = decayed + (1 - w) * rtt;
        }
      }
      if (now > stamp) stamp = now;
      sampled = true;
      picksAt = ctx.picks;
    }
  }

  /** Draws an index in [0, n). */
  public interface Rand {
    int nextInt(int n);
  }

  /**
   * Draws min(choiceCount, ready.length) distinct indices by rejection sampling (one READY
   * endpoint: no draw), keeps the cheapest at {@code now} (strict &lt;: the earlier draw wins a
   * tie) and counts the pick. Returns -1 when nothing is READY. It does not start the call.
   */
  public static int pick(Load[] ready, int n, long now, Context ctx, Rand rng) {
    if (n == 0) return -1;
    try {
      if (n == 1) return 0;
      int d = Math.min(ctx.config.choiceCount, n);
      int[] drawn = new int[d];
      int best = -1;
      double bestCost = Double.POSITIVE_INFINITY;
      for (int k = 0; k < d; ) {
        int i = rng.nextInt(n);
        boolean dup = false;
        for (int j = 0; j < k; j++) dup |= drawn[j] == i;
        if (dup) continue;
        drawn[k++] = i;
        double c = ready[i].cost(now, ctx);
        if (best < 0 || c < bestCost) {
          best = i;
          bestCost = c;
        }
      }
      return best;
    } finally {
      // Every pick counts on the pick clock, after the costs are read.
      ctx.picks++;
    }
  }
}
