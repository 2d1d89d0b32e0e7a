package lblab.peakewma;

import io.grpc.LoadBalancer;
import io.grpc.LoadBalancerProvider;
import io.grpc.NameResolver.ConfigOrError;
import io.grpc.Status;
import io.grpc.internal.JsonUtil;
import java.util.Map;

/**
 * {@code peak_ewma_experimental} as a grpc-java 1.41 {@link LoadBalancerProvider}: found by
 * {@code LoadBalancerRegistry.getDefaultRegistry()} through META-INF/services (its ServiceLoader
 * lookup), or registered with {@code LoadBalancerRegistry.getDefaultRegistry().register(...)}.
 *
 * <p>The config is the object under {@code peak_ewma_experimental} in a loadBalancingConfig
 * entry, parsed with grpc-java's own {@link JsonUtil} (as grpc-java's providers do): choiceCount
 * (default 2, below 2 rejected, above 10 clamped to 10), decayTime (default "10s") and defaultRtt
 * (default "0.030s"), durations as {@code JsonUtil.getStringAsDuration} reads them, both &gt; 0.
 * Unknown fields are IGNORED, as grpc-java's own providers do (they read the keys they know with
 * JsonUtil and never look at the others). An error is a {@code ConfigOrError} with
 * INVALID_ARGUMENT whose description starts with {@code peak_ewma_experimental.FIELD:}; grpc-java
 * then rejects the whole service config.
 */
public final class PeakEwmaLoadBalancerProvider extends LoadBalancerProvider {
  public static final String NAME = "peak_ewma_experimental";

  @Override
  public boolean isAvailable() {
    return true;
  }

  @Override
  public int getPriority() {
    return 5; // grpc-java's own providers use 5
  }

  @Override
  public String getPolicyName() {
    return NAME;
  }

  @Override
  public LoadBalancer newLoadBalancer(LoadBalancer.Helper helper) {
    return new PeakEwmaLoadBalancer(helper);
  }

  @Override
  public ConfigOrError parseLoadBalancingPolicyConfig(Map<String, ?> raw) {
    try {
      return ConfigOrError.fromConfig(parse(raw));
    } catch (ConfigException e) {
      return ConfigOrError.fromError(
          Status.INVALID_ARGUMENT.withDescription(e.getMessage()).withCause(e));
    }
  }

  /** A config error that names its field. */
  public static final class ConfigException extends Exception {
    public final String field;

    ConfigException(String field, String message) {
      super(NAME + "." + field + ": " + message);
      this.field = field;
    }
  }

  /** Parses the policy's config object (null: the defaults). */
  public static PeakEwma.Config parse(Map<String, ?> raw) throws ConfigException {
    PeakEwma.Config d = PeakEwma.Config.DEFAULT;
    if (raw == null) return d;
    int choiceCount = d.choiceCount;
    Integer n;
    try {
      n = JsonUtil.getNumberAsInteger(raw, "choiceCount");
    } catch (RuntimeException e) { // ClassCastException: not a whole number
      throw new ConfigException(
          "choiceCount", raw.get("choiceCount") + " is not a whole number: " + e.getMessage());
    }
    if (n != null) {
      if (n < 2) {
        throw new ConfigException(
            "choiceCount",
            n + " is below 2; choiceCount must be at least 2 (values above "
                + PeakEwma.MAX_CHOICES + " are clamped to " + PeakEwma.MAX_CHOICES + ")");
      }
      choiceCount = Math.min(n, PeakEwma.MAX_CHOICES);
    }
    long decayTime = duration(raw, "decayTime", d.decayTime);
    long defaultRtt = duration(raw, "defaultRtt", d.defaultRtt);
    return new PeakEwma.Config(choiceCount, decayTime, defaultRtt);
  }

  private static long duration(Map<String, ?> raw, String field, long dflt) throws ConfigException {
    Long ns;
    try {
      ns = JsonUtil.getStringAsDuration(raw, field);
    } catch (ClassCastException e) {
      throw new ConfigException(
          field, raw.get(field) + " is not a duration string; write e.g. \"10s\" or \"0.030s\"");
    } catch (RuntimeException e) { // IllegalArgumentException wrapping java.text.ParseException
      throw new ConfigException(
          field, "`" + raw.get(field) + "` is not a proto3 duration: " + e.getMessage());
    }
    if (ns == null) return dflt;
    if (ns < 0) {
      throw new ConfigException(field, "`" + raw.get(field) + "` is negative; must be > 0s");
    }
    if (ns == 0) throw new ConfigException(field, "must be greater than 0s");
    return ns;
  }

  /** The normalized JSON form of a config, as the vectors write it. */
  public static String toJson(PeakEwma.Config c) {
    return "{\"choiceCount\":" + c.choiceCount + ",\"decayTime\":\"" + formatDuration(c.decayTime)
        + "\",\"defaultRtt\":\"" + formatDuration(c.defaultRtt) + "\"}";
  }

  /** ns as the shortest proto3 JSON duration ("10s", "0.03s"). */
  public static String formatDuration(long ns) {
    long secs = ns / 1_000_000_000L;
    long frac = ns % 1_000_000_000L;
    if (frac == 0) return secs + "s";
    String f = String.format("%09d", frac).replaceAll("0+$", "");
    return secs + "." + f + "s";
  }
}
