'use strict';
// The core of peak_ewma_experimental, free of grpc-js: config parsing and validation, the
// peak-sensitive EWMA, the cost, and the pick among explicit candidate draws. Time is a Number of
// nanoseconds from an arbitrary origin (exact up to 2^53 ns, about 104 days). The semantics are
// lblab's (policy/src/peak_ewma.rs and policy/src/estimator.rs), as its design search chose them
// (results/design/candidates/README.md); the proposal as first written is kept as FIRST_WRITTEN:
//
//   per endpoint: estimate, errors (the time-weighted share of failed calls), stamp (time of the
//   last sample), sampled, picksAt (the policy's pick count at the last sample), outstanding,
//   progress (CHOSEN: its last answer, or the pick that made it busy, whichever is later); the
//   policy counts its picks.
//   w(now) = exp(−(now − stamp)/decayTime), and on the pick clock (CHOSEN) the larger of that and
//            exp(−(picks − picksAt)/idlePicks), but at most exp(−(now − stamp)/max(idleMaxTime,
//            decayTime)) (CHOSEN: idlePicks 500 per second of decayTime, rounded, at least 1;
//            idleMaxTime 6 × decayTime, so a client that picks rarely still probes; 5000 picks
//            and 60 s at the default decayTime 10 s)
//   cost(now) = max(estimate × w(now) × (1 + errorPenalty × e/(1 − e)), stall) × (outstanding + 1),
//               with e = min(errors, 0.999), errorPenalty 1 (CHOSEN; 0 in FIRST_WRITTEN), and
//               stall = now − progress while calls are outstanding (CHOSEN), else 0; the estimate
//               is 0 before the first sample (CHOSEN; defaultRtt in FIRST_WRITTEN)
//   sample rtt at now, failed (any status but OK), quiet (CHOSEN: no other answer came from the
//   endpoint since this call was sent): the first one replaces the estimate and sets errors to 1
//   or 0 (CHOSEN); otherwise, with w = w(now) and we = min(w, 1 − 1/errorSamples) (CHOSEN:
//   errorSamples 10; FIRST_WRITTEN: we = w),
//     errors = errors × we + (1 − we) × (failed ? 1 : 0)
//     failed, CHOSEN      → estimate = max(estimate, rtt)           (a failure only holds it)
//     failed, 'ignore'    → estimate = estimate × w                 (no sample; the decay restarts)
//     rtt > estimate × w and (quiet or FIRST_WRITTEN)
//                         → estimate = rtt                         (the peak: a stall)
//     otherwise           → estimate = estimate × w + (1 − w) × rtt
//     stamp = now (never moved backwards), picksAt = picks
//   pick: choiceCount distinct draws among READY endpoints (all when fewer), lowest cost, the
//   earlier draw wins ties (strict <); every pick counts, one READY endpoint too.
//   FIRST_WRITTEN: the estimate starts at defaultRtt and blends like any sample; w on the wall
//   clock only.
//
// The grpc-js shell (peak_ewma_lb.js) supplies the clock, the randomness and the call hooks.

const NAME = 'peak_ewma_experimental';
const NANOS_PER_SEC = 1e9;
const MAX_CHOICES = 10;
const DEFAULTS = Object.freeze({
  choiceCount: 2,
  decayTime: 10 * NANOS_PER_SEC,
  defaultRtt: 30e6,
});
const FIELDS = ['choiceCount', 'decayTime', 'defaultRtt'];

/** A config error naming the field, as lblab's `loadBalancingConfig[..].<policy>.<field>`. */
class ConfigError extends Error {
  constructor(field, message) {
    super(`${NAME}.${field}: ${message}`);
    this.field = field;
  }
}

/**
 * Parses a proto3 JSON duration ("10s", "0.030s", at most 9 fractional digits) into
 * nanoseconds; throws a message for anything else. Negative durations parse (the caller rejects
 * them).
 */
function parseDuration(text) {
  const bad = `\`${text}\` is not a proto3 duration; write seconds with an \`s\` suffix, e.g. "10s" or "0.030s"`;
  if (typeof text !== 'string') {
    throw new Error(`${JSON.stringify(text)} is not a proto3 duration string; write e.g. "10s" or "0.030s"`);
  }
  const m = /^(-?)([0-9]+)(?:\.([0-9]{1,9}))?s$/.exec(text);
  if (!m) throw new Error(bad);
  const secs = Number(m[2]);
  if (secs > 315576000000) throw new Error(`\`${text}\` is longer than proto3's maximum of 315576000000s`);
  const frac = (m[3] || '').padEnd(9, '0');
  const ns = secs * NANOS_PER_SEC + Number(frac);
  return m[1] === '-' ? -ns : ns;
}

/** Formats nanoseconds as the shortest proto3 JSON duration ("10s", "0.03s"). */
function formatDuration(ns) {
  const secs = Math.floor(ns / NANOS_PER_SEC);
  const frac = Math.round(ns - secs * NANOS_PER_SEC);
  if (frac === 0) return `${secs}s`;
  return `${secs}.${String(frac).padStart(9, '0').replace(/0+$/, '')}s`;
}

function positiveDuration(obj, field) {
  if (!(field in obj)) return DEFAULTS[field];
  let ns;
  try {
    ns = parseDuration(obj[field]);
  } catch (e) {
    throw new ConfigError(field, e.message);
  }
  if (ns < 0) throw new ConfigError(field, `\`${obj[field]}\` is negative; durations here must be >= 0s`);
  if (ns === 0) throw new ConfigError(field, 'must be greater than 0s');
  return ns;
}

/**
 * The policy's JSON config (the object under `peak_ewma_experimental`) → `{choiceCount,
 * decayTime, defaultRtt}` with durations in ns. As A48 and lblab: choiceCount default 2, below 2
 * rejected, above 10 clamped to 10; decayTime default "10s", defaultRtt default "0.030s", both
 * must be > 0. Unknown fields are ignored, as gRPC's parsers ignore them ("for future
 * compatibility reasons", grpc-go's ConfigParser contract; grpc-js's own parsers read only the
 * fields they know); `unknownFields` names them for a warning.
 */
function parseConfig(obj) {
  if (obj === undefined || obj === null) obj = {};
  if (typeof obj !== 'object' || Array.isArray(obj)) {
    throw new ConfigError('', `the config must be a JSON object, not ${JSON.stringify(obj)}`);
  }
  let choiceCount = DEFAULTS.choiceCount;
  if ('choiceCount' in obj) {
    const n = obj.choiceCount;
    if (typeof n !== 'number' || !Number.isInteger(n) || n < 0 || n > 4294967295) {
      throw new ConfigError('choiceCount', `${JSON.stringify(n)} is not an unsigned 32-bit integer`);
    }
    if (n < 2) {
      throw new ConfigError('choiceCount', `${n} is below 2; choiceCount must be at least 2 (values above ${MAX_CHOICES} are clamped to ${MAX_CHOICES})`);
    }
    choiceCount = Math.min(n, MAX_CHOICES);
  }
  return {
    choiceCount,
    decayTime: positiveDuration(obj, 'decayTime'),
    defaultRtt: positiveDuration(obj, 'defaultRtt'),
  };
}

/** The fields of a config object that `parseConfig` ignores, as gRPC ignores unknown fields. */
function unknownFields(obj) {
  if (obj === undefined || obj === null || typeof obj !== 'object' || Array.isArray(obj)) return [];
  return Object.keys(obj).filter((k) => !FIELDS.includes(k));
}

/** The normalized JSON form of a parsed config. */
function configToJson(c) {
  return {
    choiceCount: c.choiceCount,
    decayTime: formatDuration(c.decayTime),
    defaultRtt: formatDuration(c.defaultRtt),
  };
}

/**
 * The semantics lblab chose: the first estimate 0 and a stall-aware cost, a peak only on a stall,
 * idle decay on the pick clock bounded by idleMaxTime on the wall clock, the error-aware cost,
 * failures that only hold the estimate.
 */
const CHOSEN = Object.freeze({
  // idlePicks and idleMaxTime null: IDLE_PICK_RATE per second of decayTime and IDLE_MAX_DECAY_TIMES
  // × decayTime.
  initial: 'zero', idle: 'pick_clock', idlePicks: null, idleMaxTime: null, errorPenalty: 1,
  failures: 'hold', errorSamples: 10, peak: 'stalled', stall: true,
});
/** The proposal as first written: the defaultRtt prior, decay toward 0 on the wall clock. */
const FIRST_WRITTEN = Object.freeze({
  initial: 'prior', idle: 'to_zero', idlePicks: 5000, idleMaxTime: 0, errorPenalty: 0, failures: 'sample', errorSamples: 0,
  peak: 'jump', stall: false,
});
/** The pick clock's rate: at most one time constant of idle decay per 500 × decayTime (s) picks. */
const IDLE_PICK_RATE = 500;
/** The pick clock's bound: idle decay at least as fast as with time constant 6 × decayTime. */
const IDLE_MAX_DECAY_TIMES = 6;

/** The picks per time constant of idle decay at most: given, or 500 per second of decayTime. */
function idlePicksOf(ctx) {
  const p = ctx.semantics.idlePicks;
  if (p !== null && p !== undefined) return p;
  return Math.max(1, Math.round((IDLE_PICK_RATE * ctx.config.decayTime) / NANOS_PER_SEC));
}

/** The pick clock's bound (ns; 0 is none): given, or 6 × decayTime. */
function idleMaxTimeOf(ctx) {
  const m = ctx.semantics.idleMaxTime;
  if (m !== null && m !== undefined) return m;
  return IDLE_MAX_DECAY_TIMES * ctx.config.decayTime;
}

/** Finagle's cost of an endpoint without a sample but with calls outstanding (initial 'penalty'). */
const PENALTY = 1e300;

/**
 * What one policy instance shares among its endpoints: the parsed config, the semantics and the
 * count of picks made so far (the pick clock).
 */
function context(config, semantics = CHOSEN) {
  return { config, semantics, picks: 0 };
}

/**
 * One endpoint's load: the peak EWMA of its RTT and its outstanding (unary) calls. A new one is
 * made when the endpoint becomes READY, with nothing outstanding and no sample; its estimate is
 * `initial` if given (tests), else 0 (CHOSEN) or defaultRtt (FIRST_WRITTEN).
 *
 */
class EndpointLoad {
  constructor(ctx, now, initial) {
    const prior = ctx.semantics.initial === 'prior' || ctx.semantics.initial === 'first_sample';
    this.estimate = initial !== undefined ? initial : prior ? ctx.config.defaultRtt : 0;
    this.errors = 0;
    this.stamp = now;
    this.sampled = false;
    this.picksAt = ctx.picks;
    this.outstanding = 0;
    this.progress = now;
  }

  /** The decay weight at `now`; a clock behind the stamp counts as no time passed. */
  weight(now, ctx) {
    const dt = Math.max(0, now - this.stamp);
    const wall = Math.exp(-dt / ctx.config.decayTime);
    if (ctx.semantics.idle !== 'pick_clock') return wall;
    const byPicks = Math.exp(-Math.max(0, ctx.picks - this.picksAt) / idlePicksOf(ctx));
    const w = Math.max(wall, byPicks);
    const max = idleMaxTimeOf(ctx);
    if (max === 0) return w;
    // However few picks: at least the wall-clock decay with time constant idleMaxTime.
    return Math.min(w, Math.exp(-dt / Math.max(max, ctx.config.decayTime)));
  }

  /** Whether the cost is Finagle's before-the-first-sample penalty. */
  unsampled(ctx) {
    return !this.sampled && ctx.semantics.initial === 'penalty';
  }

  /** cost(now) / (outstanding + 1): the estimate as the cost reads it (ns). Changes nothing. */
  decayed(now, ctx) {
    return this.cost(now, ctx) / (this.outstanding + 1);
  }

  /** The cost at `now`. */
  cost(now, ctx) {
    if (this.unsampled(ctx)) {
      return this.outstanding === 0 ? 0 : PENALTY * (1 + 1e-6 * this.outstanding);
    }
    let estimate = this.estimate * this.weight(now, ctx) * this.errorFactor(ctx);
    if (ctx.semantics.stall && this.outstanding > 0) {
      // A pending call's age is a lower bound on its RTT: a stall is seen while it happens.
      estimate = Math.max(estimate, Math.max(0, now - this.progress));
    }
    return estimate * (this.outstanding + 1);
  }

  /** `1 + errorPenalty × e/(1 − e)`: the cost of the failures (1 without an errorPenalty). */
  errorFactor(ctx) {
    const p = ctx.semantics.errorPenalty || 0;
    if (p === 0) return 1;
    const e = Math.min(this.errors, 0.999);
    return 1 + (p * e) / (1 - e);
  }

  /**
   * Takes an RTT sample `rtt` (ns) observed at `now`; `failed`: the call did not end OK; `quiet`:
   * the endpoint gave no other answer while the call was pending.
   */
  observe(now, rtt, ctx, failed = false, quiet = true) {
    const failure = failed ? 1 : 0;
    if (!this.sampled && ctx.semantics.initial !== 'prior') {
      this.estimate = rtt;
      this.errors = failure;
    } else {
      const w = this.weight(now, ctx);
      const decayed = this.estimate * w;
      // errorSamples: each answer moves the share of failures by at least 1/errorSamples.
      const n = ctx.semantics.errorSamples || 0;
      const we = n > 0 ? Math.min(w, 1 - 1 / n) : w;
      this.errors = this.errors * we + (1 - we) * failure;
      if (failed && ctx.semantics.failures === 'ignore') {
        // No sample, but news from the endpoint: the decay restarts from where it had got to.
        this.estimate = decayed;
      } else if (failed && ctx.semantics.failures === 'hold') {
        // A failure never lowers the estimate: the larger of the stored one and its time.
        this.estimate = Math.max(this.estimate, rtt);
      } else {
        // CHOSEN: a slow answer is the new peak only if it came out of a stall.
        const peak = rtt > decayed && (ctx.semantics.peak !== 'stalled' || quiet);
        this.estimate = peak ? rtt : decayed + (1 - w) * rtt;
      }
    }
    if (now > this.stamp) this.stamp = now;
    this.sampled = true;
    this.picksAt = ctx.picks;
  }

  /** A call was started on this endpoint at `now`; one that makes it busy is progress. */
  onStart(now) {
    if (this.outstanding === 0) this.progress = Math.max(this.progress, now);
    this.outstanding += 1;
  }

  /**
   * A call started here ended at `now` after `elapsed` ns: one fewer outstanding, and a sample
   * unless `sample` is false (the call was cancelled by the client); `failed`: it ended with a
   * status other than OK.
   */
  onEnd(now, elapsed, sample, ctx, failed = false) {
    if (this.outstanding > 0) this.outstanding -= 1;
    if (!sample) return;
    // An answer is progress; no other answer since this call was sent means it waited out a stall.
    const quiet = this.progress <= now - elapsed;
    this.progress = Math.max(this.progress, now);
    this.observe(now, elapsed, ctx, failed, quiet);
  }
}

/** The index among `n` that `rng` (a function returning a float in [0, 1)) draws. */
function index(rng, n) {
  const i = Math.floor(rng() * n);
  return i < n ? i : n - 1;
}

/**
 * `min(choiceCount, n)` distinct indices among `n`, in draw order, by rejection sampling (as
 * lblab's p2c::distinct: choiceCount ≤ 10). A single endpoint is taken without calling `rng`, as
 * lblab does (the conformance vectors give such a pick no draw).
 */
function drawDistinct(n, choiceCount, rng) {
  if (n === 1) return [0];
  const d = Math.min(choiceCount, n);
  const drawn = [];
  while (drawn.length < d) {
    const i = index(rng, n);
    if (!drawn.includes(i)) drawn.push(i);
  }
  return drawn;
}

/**
 * Of the candidate loads, in draw order, the position of the cheapest at `now`: strict <, so
 * the earlier draw wins ties. Returns -1 for no candidates.
 */
function cheapest(candidates, now, ctx) {
  let best = -1;
  let bestCost = Infinity;
  for (let k = 0; k < candidates.length; k++) {
    const c = candidates[k].cost(now, ctx);
    if (best < 0 || c < bestCost) {
      best = k;
      bestCost = c;
    }
  }
  return best;
}

/**
 * A pick among READY endpoints' loads: draws `choiceCount` distinct ones with `rng` and returns
 * the index (into `ready`) of the cheapest; -1 if none is READY. Counts the pick on `ctx`.
 */
function pick(ready, now, ctx, rng) {
  if (ready.length === 0) return -1;
  const draws = drawDistinct(ready.length, ctx.config.choiceCount, rng);
  const k = cheapest(draws.map((i) => ready[i]), now, ctx);
  ctx.picks += 1;
  return draws[k];
}

/**
 * What the policy reports, and so what a pick does, given its endpoints' connectivity states
 * (names: 'IDLE', 'CONNECTING', 'READY', 'TRANSIENT_FAILURE'): 'READY' (pick), 'CONNECTING' or
 * 'IDLE' (queue the RPC), 'TRANSIENT_FAILURE' (fail it with UNAVAILABLE). Any READY, else any
 * CONNECTING, else any IDLE, else TRANSIENT_FAILURE (all of them, or no endpoints): an RPC is
 * queued while something may still connect, as lblab (policy/src/endpoints.rs `unready`) and
 * gRFC A61's aggregation. (grpc-js's round_robin puts TRANSIENT_FAILURE before IDLE.)
 */
function aggregateState(states) {
  for (const s of ['READY', 'CONNECTING', 'IDLE']) {
    if (states.includes(s)) return s;
  }
  return 'TRANSIENT_FAILURE';
}

module.exports = {
  NAME,
  IDLE_PICK_RATE,
  IDLE_MAX_DECAY_TIMES,
  DEFAULTS,
  MAX_CHOICES,
  ConfigError,
  parseDuration,
  formatDuration,
  parseConfig,
  unknownFields,
  configToJson,
  CHOSEN,
  FIRST_WRITTEN,
  PENALTY,
  context,
  EndpointLoad,
  drawDistinct,
  cheapest,
  pick,
  aggregateState,
};
