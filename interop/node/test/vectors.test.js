'use strict';
// Replays lblab's language-neutral conformance vectors for peak_ewma_experimental
// (conformance/vectors/peak_ewma_experimental.json, format in conformance/README.md) against the
// port's core: every config case through parseConfig / configToJson, every sequence through the
// core's EndpointLoad, pick (fed the file's draws by a scripted random source) and
// aggregateState. The loop below plays the part of the grpc-js shell (peak_ewma_lb.js) and does
// what it does:
//   - an endpoint that becomes READY (from any other state) gets a fresh load (defaultRtt, now,
//     0 outstanding); READY to READY keeps it;
//   - a pick snapshots the READY endpoints in list order and calls core.pick on their loads; a
//     unary call holds the load object it was picked with, so a call of an old connection or of
//     a removed endpoint completes into a load nobody reads any more;
//   - only unary calls count (onStart at the pick, onEnd at completion, a sample unless
//     CANCELLED); streaming calls are picked the same way and touch nothing.
// One thing the port does not have: a load for an endpoint that has never been READY (the shell
// makes one at its first READY, which the vectors' READY reset makes unobservable). The replay
// gives a new endpoint a load (defaultRtt, now) at set_endpoints, as lblab does, so that the
// expected estimate_ns / cost_ns of such endpoints can be compared too. Nothing is skipped: every
// field of every expectation (pick, and per endpoint the id, state, outstanding, estimate_ns and
// cost_ns) is compared after every step.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const core = require('../peak_ewma_core');

const FILE = path.join(__dirname, '..', '..', '..', 'conformance', 'vectors', 'peak_ewma_experimental.json');
const vectors = JSON.parse(fs.readFileSync(FILE, 'utf8'));
/** lblab-only keys of `normalized` that another implementation drops before comparing. */
const LBLAB_ONLY = ['lblabAblation'];

function withoutLblabOnly(obj) {
  const out = { ...obj };
  for (const k of LBLAB_ONLY) delete out[k];
  return out;
}

function closeTo(got, want, what) {
  const { relative, absolute_ns: absolute } = vectors.tolerance;
  assert.equal(typeof got, 'number', `${what}: not a number`);
  assert.ok(
    Math.abs(got - want) <= Math.max(absolute, relative * Math.abs(want)),
    `${what}: got ${got}, want ${want}`,
  );
}

/**
 * A random source that returns, in order, the draws of one pick (indices among `n`) as the
 * floats core.index maps back to them, and records how many were asked for.
 */
function scripted(draws, n, where) {
  const rng = () => {
    if (rng.used >= draws.length) {
      throw new Error(`${where}: the core asked for draw ${rng.used + 1}, the vector gives ${draws.length}`);
    }
    const i = draws[rng.used++];
    return (i + 0.5) / n;
  };
  rng.used = 0;
  return rng;
}

// The semantics a sequence encodes: lblab's default (core.CHOSEN), or the ones its lblab-only
// `lblabAblation` field pins (the port implements the proposal as first written too).
function semanticsOf(seq) {
  const a = seq.config.lblabAblation || {};
  const s = { ...core.CHOSEN };
  for (const k of ['initial', 'idle', 'idlePicks', 'errorPenalty', 'failures', 'errorSamples', 'peak', 'stall']) if (k in a) s[k] = a[k];
  // idleMaxTime: "0s" is no bound; as lblab, only the pick clock has one by default.
  if ('idleMaxTime' in a) s.idleMaxTime = core.parseDuration(a.idleMaxTime);
  else if (s.idle !== 'pick_clock') s.idleMaxTime = 0;
  // As lblab: the semantics as first written have no error-aware cost, take a failure's time as a
  // sample, give every answer only its time weight in the share of failures, jump on any slow
  // answer and have no stall-aware cost, unless told.
  if (s.initial === 'prior') {
    for (const k of ['errorPenalty', 'failures', 'errorSamples', 'peak', 'stall']) if (!(k in a)) s[k] = core.FIRST_WRITTEN[k];
  }
  const known = [core.CHOSEN, core.FIRST_WRITTEN].some((t) => t.initial === s.initial && t.idle === s.idle);
  assert.ok(known, `${seq.name}: lblabAblation ${JSON.stringify(a)} is not a semantics this port implements`);
  return Object.freeze(s);
}

function replay(seq) {
  const config = core.parseConfig(withoutLblabOnly(seq.config));
  const ctx = core.context(config, semanticsOf(seq));
  /** id → { state, load } */
  const endpoints = new Map();
  let order = [];
  /** call id → { load, unary } */
  const calls = new Map();

  for (const [n, step] of seq.steps.entries()) {
    const where = `${seq.name} step ${n} (${step.op} at ${step.at_ns} ns)`;
    const now = step.at_ns;
    assert.ok(Number.isSafeInteger(now), `${where}: at_ns`);
    const expect = step.expect;
    switch (step.op) {
      case 'set_endpoints': {
        const next = new Map();
        for (const id of step.endpoints) {
          next.set(id, endpoints.get(id) || { state: 'IDLE', load: new core.EndpointLoad(ctx, now) });
        }
        endpoints.clear();
        for (const [id, e] of next) endpoints.set(id, e);
        order = [...step.endpoints];
        break;
      }
      case 'connectivity': {
        const e = endpoints.get(step.endpoint);
        assert.ok(e, `${where}: endpoint ${step.endpoint} is not in the list`);
        if (step.state === 'READY' && e.state !== 'READY') {
          e.load = new core.EndpointLoad(ctx, now);
        }
        e.state = step.state;
        break;
      }
      case 'pick': {
        const states = order.map((id) => endpoints.get(id).state);
        const aggregate = core.aggregateState(states);
        const readyIds = order.filter((id) => endpoints.get(id).state === 'READY');
        assert.deepEqual(step.draws.map((i) => readyIds[i]), step.drawn, `${where}: draws and drawn disagree`);
        let got;
        if (aggregate === 'READY') {
          const rng = scripted(step.draws, readyIds.length, where);
          const ready = readyIds.map((id) => endpoints.get(id).load);
          const i = core.pick(ready, now, ctx, rng);
          assert.equal(rng.used, step.draws.length, `${where}: the core drew ${rng.used} times, the vector ${step.draws.length}`);
          const id = readyIds[i];
          got = { result: 'endpoint', endpoint: id };
          const load = ready[i];
          const unary = step.kind === 'unary';
          if (unary) load.onStart(now);
          if (step.call !== undefined) calls.set(step.call, { load, unary });
        } else {
          assert.deepEqual(step.draws, [], `${where}: draws without a READY endpoint`);
          got = { result: aggregate === 'TRANSIENT_FAILURE' ? 'fail' : 'queue' };
        }
        assert.deepEqual(got, expect.pick, `${where}: pick`);
        break;
      }
      case 'done': {
        const call = calls.get(step.call);
        assert.ok(call, `${where}: unknown call ${step.call}`);
        calls.delete(step.call);
        assert.equal(call.unary, step.kind === 'unary', `${where}: kind differs from the pick's`);
        if (call.unary) {
          call.load.onEnd(now, step.elapsed_ns, step.status !== 'CANCELLED', ctx, step.status !== 'OK');
        }
        break;
      }
      case 'check':
        break;
      default:
        assert.fail(`${where}: op ${step.op} is not one of peak_ewma_experimental's`);
    }
    assert.equal(expect.endpoints.length, order.length, `${where}: endpoint count`);
    for (const [k, want] of expect.endpoints.entries()) {
      const id = order[k];
      const e = endpoints.get(id);
      const w = `${where}, endpoint #${k}`;
      assert.equal(id, want.endpoint, `${w}: id`);
      assert.equal(e.state, want.state, `${w}: state`);
      assert.equal(e.load.outstanding, want.outstanding, `${w}: outstanding`);
      closeTo(e.load.decayed(now, ctx), want.estimate_ns, `${w}: estimate_ns`);
      closeTo(e.load.cost(now, ctx), want.cost_ns, `${w}: cost_ns`);
    }
  }
  return seq.steps.length;
}

test('the vector file is the one this replayer reads', () => {
  assert.equal(vectors.format, 'lblab-conformance-vectors');
  assert.equal(vectors.version, 1);
  assert.equal(vectors.policy, core.NAME);
  assert.ok(vectors.config_cases.length > 0);
  assert.ok(vectors.sequences.length > 0);
});

test('conformance vectors: config cases', async (t) => {
  for (const [n, c] of vectors.config_cases.entries()) {
    await t.test(`#${n} ${JSON.stringify(c.input)} ${c.accepted ? 'accepted' : `rejected (${c.error.field})`}`, () => {
      if (c.accepted) {
        const got = core.parseConfig(c.input);
        const want = withoutLblabOnly(c.normalized);
        // Values: the normalized form parses to the same config (and is its own normal form).
        assert.deepEqual(got, core.parseConfig(want));
        // And the port writes the same shortest proto3 durations.
        assert.deepEqual(core.configToJson(got), want);
        // The unknown fields it ignored, as gRPC does, are the ones the vector names.
        assert.deepEqual(core.unknownFields(c.input), c.ignored || []);
      } else {
        assert.throws(
          () => core.parseConfig(c.input),
          (e) => {
            assert.ok(e instanceof core.ConfigError, `not a ConfigError: ${e}`);
            assert.equal(e.field, c.error.field, `the error names ${e.field}: ${e.message}`);
            return true;
          },
        );
      }
    });
  }
});

test('conformance vectors: sequences', async (t) => {
  let steps = 0;
  for (const seq of vectors.sequences) {
    await t.test(`${seq.name} (${seq.steps.length} steps)`, () => {
      steps += replay(seq);
    });
  }
  t.diagnostic(`${vectors.config_cases.length} config cases, ${vectors.sequences.length} sequences, ${steps} steps replayed`);
});
