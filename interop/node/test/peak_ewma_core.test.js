'use strict';
// Unit tests of peak_ewma_core.js, written from the formulas (policy/src/peak_ewma.rs and the
// design notes, docs/design.md): no grpc-js, explicit times (ns) and explicit draws.
const test = require('node:test');
const assert = require('node:assert/strict');
const core = require('../peak_ewma_core');

const MS = 1e6;
const S = 1e9;
const TAU = 10 * S;
// These tests pin the formulas of the proposal as first written; the chosen semantics' are below.
const FW = core.context(core.parseConfig({}), core.FIRST_WRITTEN);

function close(actual, expected, rel = 1e-12) {
  assert.ok(Math.abs(actual - expected) <= rel * Math.abs(expected), `${actual} != ${expected}`);
}

test('config defaults are choiceCount 2, decayTime 10s, defaultRtt 30ms', () => {
  assert.deepEqual(core.parseConfig({}), { choiceCount: 2, decayTime: 10 * S, defaultRtt: 30 * MS });
  assert.deepEqual(core.parseConfig(undefined), core.parseConfig({}));
  assert.deepEqual(core.configToJson(core.parseConfig({})), { choiceCount: 2, decayTime: '10s', defaultRtt: '0.03s' });
});

test('config reads proto3 durations and clamps choiceCount above 10', () => {
  const c = core.parseConfig({ choiceCount: 3, decayTime: '5s', defaultRtt: '0.010s' });
  assert.deepEqual(c, { choiceCount: 3, decayTime: 5 * S, defaultRtt: 10 * MS });
  assert.equal(core.parseConfig({ choiceCount: 11 }).choiceCount, 10);
  assert.equal(core.parseConfig({ choiceCount: 1000 }).choiceCount, 10);
  assert.equal(core.parseConfig({ decayTime: '0.000000001s' }).decayTime, 1);
});

test('config rejects what lblab rejects, naming the field', () => {
  const rejects = (obj, field, re) =>
    assert.throws(() => core.parseConfig(obj), (e) => e instanceof core.ConfigError && e.field === field && re.test(e.message));
  rejects({ choiceCount: 1 }, 'choiceCount', /1 is below 2/);
  rejects({ choiceCount: 0 }, 'choiceCount', /below 2/);
  rejects({ choiceCount: 2.5 }, 'choiceCount', /not an unsigned/);
  rejects({ choiceCount: '2' }, 'choiceCount', /not an unsigned/);
  rejects({ choiceCount: -1 }, 'choiceCount', /not an unsigned/);
  rejects({ decayTime: '0s' }, 'decayTime', /greater than 0s/);
  rejects({ defaultRtt: '0.000s' }, 'defaultRtt', /greater than 0s/);
  rejects({ decayTime: '-1s' }, 'decayTime', /negative/);
  rejects({ decayTime: '10' }, 'decayTime', /not a proto3 duration/);
  rejects({ decayTime: '1.0000000001s' }, 'decayTime', /not a proto3 duration/);
  rejects({ decayTime: 10 }, 'decayTime', /not a proto3 duration/);
  rejects({ defaultRtt: '30ms' }, 'defaultRtt', /not a proto3 duration/);
});

test('an unknown field is ignored, as gRPC ignores it, and named', () => {
  assert.deepEqual(core.parseConfig({ choicecount: 3, decayTime: '5s' }), core.parseConfig({ decayTime: '5s' }));
  assert.deepEqual(core.unknownFields({ choicecount: 3, decayTime: '5s' }), ['choicecount']);
  assert.deepEqual(core.unknownFields({}), []);
});

test('a new endpoint starts at defaultRtt with nothing outstanding', () => {
  const e = new core.EndpointLoad(FW, 5 * S, 30 * MS);
  assert.equal(e.decayed(5 * S, FW), 30 * MS);
  assert.equal(e.cost(5 * S, FW), 30 * MS);
  assert.equal(e.outstanding, 0);
});

test('the estimate decays toward 0 with time constant decayTime while not picked, and reading changes nothing', () => {
  const e = new core.EndpointLoad(FW, 0, 30 * MS);
  close(e.decayed(10 * S, FW), 30 * MS * Math.exp(-1));
  close(e.decayed(20 * S, FW), 30 * MS * Math.exp(-2));
  assert.equal(e.estimate, 30 * MS);
  assert.equal(e.stamp, 0);
  close(e.decayed(10 * S, FW), 30 * MS * Math.exp(-1));
});

test('a slower sample replaces the decayed estimate at once (the peak)', () => {
  const e = new core.EndpointLoad(FW, 0, 30 * MS);
  e.observe(1 * S, 50 * MS, FW);
  assert.equal(e.estimate, 50 * MS);
  assert.equal(e.stamp, 1 * S);
  // The peak test compares with the estimate decayed to now, not the stored one: after 10 s,
  // 50 ms has decayed to 18.4 ms, so a 20 ms sample is a new peak.
  e.observe(11 * S, 20 * MS, FW);
  assert.equal(e.estimate, 20 * MS);
});

test('a faster sample blends in with weight 1 - exp(-dt/decayTime)', () => {
  const e = new core.EndpointLoad(FW, 0, 30 * MS);
  e.observe(2 * S, 1 * MS, FW);
  const w = Math.exp(-2 * S / TAU);
  close(e.estimate, 30 * MS * w + (1 - w) * 1 * MS);
  assert.equal(e.stamp, 2 * S);
  // A sample at the same instant has weight 0: the estimate stays.
  const before = e.estimate;
  e.observe(2 * S, 0.5 * MS, FW);
  assert.equal(e.estimate, before);
});

test('a clock that goes backwards is clamped: no negative dt, stamp never moves back', () => {
  const e = new core.EndpointLoad(FW, 5 * S, 30 * MS);
  assert.equal(e.decayed(4 * S, FW), 30 * MS);
  e.observe(4 * S, 1 * MS, FW);
  assert.equal(e.estimate, 30 * MS);
  assert.equal(e.stamp, 5 * S);
  assert.ok(Number.isFinite(e.cost(0, FW)));
});

test('cost is decayed x (outstanding + 1); completion takes one off and samples unless cancelled', () => {
  const e = new core.EndpointLoad(FW, 0, 10 * MS);
  e.onStart(0);
  e.onStart(0);
  close(e.cost(1 * S, FW), 10 * MS * Math.exp(-0.1) * 3);
  e.onEnd(1 * S, 40 * MS, true, FW);
  assert.equal(e.outstanding, 1);
  assert.equal(e.estimate, 40 * MS);
  e.onEnd(2 * S, 80 * MS, false, FW); // cancelled by the client: no sample
  assert.equal(e.outstanding, 0);
  assert.equal(e.estimate, 40 * MS);
  e.onEnd(2 * S, 1 * MS, false, FW); // never below 0
  assert.equal(e.outstanding, 0);
});

test('the cheapest draw wins; the earlier draw wins ties', () => {
  const a = new core.EndpointLoad(FW, 0, 10 * MS);
  const b = new core.EndpointLoad(FW, 0, 10 * MS);
  assert.equal(core.cheapest([a, b], 0, FW), 0);
  assert.equal(core.cheapest([b, a], 0, FW), 0);
  b.onStart(0);
  assert.equal(core.cheapest([b, a], 0, FW), 1);
  assert.equal(core.cheapest([], 0, FW), -1);
});

test('a slow endpoint becomes cheap again by decay and is probed', () => {
  const fast = new core.EndpointLoad(FW, 0, 1 * MS);
  const slow = new core.EndpointLoad(FW, 0, 1 * MS);
  for (let t = 1; t <= 100; t++) fast.observe(t * 10 * MS, 2 * MS, FW); // ~2 ms
  slow.observe(10 * MS, 20 * MS, FW); // a peak: 20 ms
  const t1 = 1 * S;
  assert.equal(core.cheapest([fast, slow], t1, FW), 0);
  // Not picked for a while, the slow endpoint's estimate decays below the busy fast one's.
  fast.onStart(t1);
  fast.onStart(t1);
  const later = t1 + 30 * S;
  fast.observe(later, 2 * MS, FW);
  assert.equal(core.cheapest([fast, slow], later, FW), 1);
});

test('draws are distinct, min(choiceCount, n) of them, in draw order', () => {
  let k = 0;
  const seq = [0.1, 0.1, 0.1, 0.7, 0.9];
  const rng = () => seq[k++ % seq.length];
  assert.deepEqual(core.drawDistinct(3, 2, rng), [0, 2]); // 0.1 → 0, 0.1 and 0.1 rejected, 0.7 → 2
  assert.deepEqual(core.drawDistinct(1, 2, Math.random), [0]);
  for (let i = 0; i < 1000; i++) {
    const d = core.drawDistinct(5, 3, Math.random);
    assert.equal(new Set(d).size, 3);
    assert.ok(d.every((x) => x >= 0 && x < 5));
  }
  assert.deepEqual(core.drawDistinct(3, 10, Math.random).sort(), [0, 1, 2]);
});

test('with two endpoints, distinct draws always see both: the costlier is never picked', () => {
  const cheap = new core.EndpointLoad(FW, 0, 1 * MS);
  const dear = new core.EndpointLoad(FW, 0, 9 * MS);
  const cfg = core.context(core.parseConfig({}), core.FIRST_WRITTEN);
  for (let i = 0; i < 1000; i++) assert.equal(core.pick([dear, cheap], 0, cfg, Math.random), 1);
  assert.equal(core.pick([], 0, cfg, Math.random), -1);
});

test('one slow endpoint among 10 is never picked while it is the dearest: distinct draws', () => {
  const cfg = core.context(core.parseConfig({}), core.FIRST_WRITTEN);
  const loads = Array.from({ length: 10 }, () => new core.EndpointLoad(FW, 0, 2 * MS));
  loads[3] = new core.EndpointLoad(FW, 0, 20 * MS);
  let slow = 0;
  for (let i = 0; i < 10000; i++) if (core.pick(loads, 0, cfg, Math.random) === 3) slow += 1;
  assert.equal(slow, 0); // with replacement it would be ~1 % (1/n²)
});

test('durations format as the shortest proto3 form', () => {
  assert.equal(core.formatDuration(10 * S), '10s');
  assert.equal(core.formatDuration(30 * MS), '0.03s');
  assert.equal(core.formatDuration(1), '0.000000001s');
  assert.equal(core.parseDuration('0.030s'), 30 * MS);
  assert.equal(core.parseDuration('-2s'), -2 * S);
});

test('one READY endpoint is taken without a draw; none, nothing drawn', () => {
  const cfg = core.context(core.parseConfig({}), core.FIRST_WRITTEN);
  const never = () => assert.fail('no draw expected');
  assert.deepEqual(core.drawDistinct(1, 2, never), [0]);
  assert.equal(core.pick([new core.EndpointLoad(FW, 0, 1 * MS)], 0, cfg, never), 0);
  assert.equal(core.pick([], 0, cfg, never), -1);
});

test('aggregate state: READY, else queue while anything is CONNECTING or IDLE, else fail', () => {
  assert.equal(core.aggregateState(['TRANSIENT_FAILURE', 'READY', 'IDLE']), 'READY');
  assert.equal(core.aggregateState(['TRANSIENT_FAILURE', 'CONNECTING', 'IDLE']), 'CONNECTING');
  assert.equal(core.aggregateState(['TRANSIENT_FAILURE', 'IDLE']), 'IDLE'); // queue, not fail
  assert.equal(core.aggregateState(['IDLE', 'IDLE']), 'IDLE');
  assert.equal(core.aggregateState(['TRANSIENT_FAILURE', 'TRANSIENT_FAILURE']), 'TRANSIENT_FAILURE');
  assert.equal(core.aggregateState([]), 'TRANSIENT_FAILURE');
});

test('chosen: an endpoint without a sample costs 0 idle, its first call\'s age while it is pending, then its first answer', () => {
  const ctx = core.context(core.parseConfig({}));
  const e = new core.EndpointLoad(ctx, 0);
  assert.equal(e.cost(0, ctx), 0);
  e.onStart(0);
  assert.equal(e.cost(2 * MS, ctx), 2 * MS * 2);
  e.onEnd(3 * MS, 3 * MS, true, ctx);
  assert.equal(e.cost(3 * MS, ctx), 3 * MS);
});

test('chosen: a slow answer jumps the estimate only out of a stall; a fast failure holds it', () => {
  const ctx = core.context(core.parseConfig({}));
  const run = (otherFirst) => {
    const e = new core.EndpointLoad(ctx, 0);
    e.onStart(0);
    e.onEnd(2 * MS, 2 * MS, true, ctx); // 2 ms
    e.onStart(10 * MS); // the slow call
    e.onStart(12 * MS); // a later one
    if (otherFirst) e.onEnd(14 * MS, 2 * MS, true, ctx);
    e.onEnd(60 * MS, 50 * MS, true, ctx);
    return e;
  };
  assert.equal(run(false).estimate, 50 * MS); // nothing else answered: a stall, the peak
  assert.ok(run(true).estimate < 3 * MS); // the endpoint kept answering: its own tail, blended
  const e = run(true);
  const before = e.estimate;
  e.onStart(70 * MS);
  e.onEnd(80 * MS, 0.1 * MS, true, ctx, true); // a fast failure: no sample, it holds the estimate
  assert.equal(e.estimate, before);
  assert.equal(e.stamp, 80 * MS);
  assert.ok(e.errors > 0);
});

test('chosen: idle decay runs on the pick clock, capped by the wall clock', () => {
  const ctx = core.context(core.parseConfig({}), { ...core.CHOSEN, idleMaxTime: 0 });
  const e = new core.EndpointLoad(ctx, 0);
  e.onStart(0);
  e.onEnd(0, 20 * MS, true, ctx); // estimate 20 ms at t = 0, pick count 0
  // 100 s later without picks: the pick clock has not moved, so no decay.
  close(e.cost(100 * S, ctx), 20 * MS);
  // 5000 picks later (idlePicks): one time constant of decay, unless the wall clock says less.
  ctx.picks = 5000;
  close(e.cost(100 * S, ctx), 20 * MS * Math.exp(-1));
  close(e.cost(2 * S, ctx), 20 * MS * Math.exp(-0.2));
});

test('chosen: idleMaxTime bounds the pick clock by a slower wall clock', () => {
  const ctx = core.context(core.parseConfig({}));
  const e = new core.EndpointLoad(ctx, 0);
  e.onStart(0);
  e.onEnd(0, 20 * MS, true, ctx);
  // No picks for 120 s: the pick clock alone would not decay it; idleMaxTime (60 s) does.
  close(e.cost(120 * S, ctx), 20 * MS * Math.exp(-2));
  // Many picks: the pick clock, capped by the wall clock with decayTime, decays it faster.
  ctx.picks = 50000;
  close(e.cost(20 * S, ctx), 20 * MS * Math.exp(-2));
});

test('chosen: decayTime scales the pick clock (500 picks per second of it) and its bound (6 ×)', () => {
  for (const [decayTime, idle] of [['1s', 1], ['10s', 0.1]]) {
    const ctx = core.context(core.parseConfig({ decayTime }));
    const e = new core.EndpointLoad(ctx, 0);
    e.onStart(0);
    e.onEnd(0, 20 * MS, true, ctx);
    // 500 picks in 3 s: one time constant at 1 s (500 picks per time constant), a tenth at 10 s
    // (5000); the bound (6 s, 60 s) does not act.
    ctx.picks = 500;
    close(e.cost(3 * S, ctx), 20 * MS * Math.exp(-idle));
    // No picks for 12 s: only the bound acts, e^(−12 s / (6 × decayTime)).
    ctx.picks = 0;
    close(e.cost(12 * S, ctx), 20 * MS * Math.exp(-12 / (6 * parseFloat(decayTime))));
  }
});

test('chosen: the error-aware cost multiplies by 1/(1 − e), e weighted as the RTT blend', () => {
  const ctx = core.context(core.parseConfig({}));
  const e = new core.EndpointLoad(ctx, 0);
  e.onStart(0);
  e.onEnd(0, 1 * MS, true, ctx, true); // the first answer, a failure: e = 1, capped at 0.999
  close(e.cost(0, ctx), 1 * MS * 1000);
  e.onStart(10 * S - 1 * MS);
  // One decayTime later an OK answer: e = 1 × w + (1 − w) × 0, w = exp(−1) (the cap of 0.999
  // applies to the cost, not to the stored share).
  ctx.picks = 5000;
  e.onEnd(10 * S, 1 * MS, true, ctx, false);
  const share = Math.exp(-1);
  close(e.errors, share);
  close(e.cost(10 * S, ctx), e.estimate / (1 - share));
  // The semantics as first written have no error-aware cost.
  const fw = new core.EndpointLoad(FW, 0);
  fw.onEnd(0, 1 * MS, true, FW, true);
  assert.equal(fw.errorFactor(FW), 1);
});
