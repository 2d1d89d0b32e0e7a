#!/usr/bin/env node
'use strict';
// An open-loop load generator on @grpc/grpc-js against lblab's fleet (`lblab backend`):
// Poisson arrivals at --rate for --warmup + --duration, latency counted from each call's
// intended send time, the load balancing policy given as gRPC service-config JSON, the targets as
// one `ipv4:` multi-address target (grpc-js's built-in IP resolver: one endpoint per address).
// Writes summary.json, summary.csv and backends.csv into --out.
//
//   node client.js --targets 127.0.0.1:5000,127.0.0.1:5001 --policy round_robin \
//     --rate 200 --duration 10 --warmup 2 --out /tmp/run --slow slow/
//
// --policy takes a name (round_robin, pick_first, weighted_round_robin, peak_ewma_experimental,
// ...), a policy object ('{"round_robin":{}}') or a whole service config
// ('{"loadBalancingConfig":[...]}'). peak_ewma_experimental is this folder's port
// (peak_ewma_lb.js), registered with grpc-js before the channel is made.

const fs = require('fs');
const path = require('path');
const grpc = require('@grpc/grpc-js');
const protoLoader = require('@grpc/proto-loader');
const peakEwma = require('./peak_ewma_lb');
const core = require('./peak_ewma_core');

const PROTO = path.join(__dirname, '..', '..', 'wire', 'proto', 'lblab', 'v1', 'echo.proto');

function usage(msg) {
  if (msg) process.stderr.write(`error: ${msg}\n`);
  process.stderr.write(
    'usage: node client.js --targets HOST:PORT,... --policy NAME|JSON [--label L] [--rate R]\n' +
      '       [--duration S] [--warmup S] [--deadline S] [--clients N] [--seed N] [--slow PREFIX,...]\n' +
      '       [--out DIR]\n',
  );
  process.exit(2);
}

function parseArgs(argv) {
  const a = {
    targets: null,
    policy: null,
    label: null,
    rate: 100,
    duration: 10,
    warmup: 2,
    deadline: 1,
    clients: 1,
    seed: 1,
    slow: [],
    out: null,
  };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    const v = () => {
      if (i + 1 >= argv.length) usage(`${k} needs a value`);
      return argv[++i];
    };
    const num = (name) => {
      const x = Number(v());
      if (!Number.isFinite(x) || x < 0) usage(`${name} must be a non-negative number`);
      return x;
    };
    switch (k) {
      case '--targets': a.targets = v().split(',').filter(Boolean); break;
      case '--policy': a.policy = v(); break;
      case '--label': a.label = v(); break;
      case '--rate': a.rate = num('--rate'); break;
      case '--duration': a.duration = num('--duration'); break;
      case '--warmup': a.warmup = num('--warmup'); break;
      case '--deadline': a.deadline = num('--deadline'); break;
      case '--clients': a.clients = Math.max(1, Math.floor(num('--clients'))); break;
      case '--seed': a.seed = Math.floor(num('--seed')); break;
      case '--slow': a.slow = v().split(',').filter(Boolean); break;
      case '--out': a.out = v(); break;
      case '-h': case '--help': usage(); break;
      default: usage(`unknown argument ${k}`);
    }
  }
  if (!a.targets || a.targets.length === 0) usage('--targets is required');
  if (!a.policy) usage('--policy is required');
  if (!(a.rate > 0)) usage('--rate must be > 0');
  if (!(a.duration > 0)) usage('--duration must be > 0');
  if (!(a.deadline > 0)) usage('--deadline must be > 0');
  return a;
}

/** --policy → a service config object. */
function serviceConfig(policy) {
  const p = policy.trim();
  if (!p.startsWith('{')) return { loadBalancingConfig: [{ [p]: {} }] };
  let obj;
  try {
    obj = JSON.parse(p);
  } catch (e) {
    usage(`--policy is not JSON: ${e.message}`);
  }
  return obj.loadBalancingConfig ? obj : { loadBalancingConfig: [obj] };
}

/**
 * grpc-js drops a loadBalancingConfig entry whose config it cannot parse and moves on, falling
 * back to pick_first when none is left (src/load-balancer.ts selectLbConfigFromList, called with
 * fallbackTodefault = true by src/resolving-load-balancer.ts), logging only at DEBUG. A run must
 * not measure pick_first by mistake, so the first entry is checked here and must be a policy
 * grpc-js knows, with a valid config.
 */
function checkServiceConfig(sc) {
  const list = sc.loadBalancingConfig;
  if (!Array.isArray(list) || list.length === 0) usage('loadBalancingConfig must be a non-empty list');
  const first = list[0];
  const name = Object.keys(first)[0];
  if (!grpc.experimental.isLoadBalancerNameRegistered(name)) {
    process.stderr.write(`error: grpc-js ${grpcJsVersion()} has no load balancing policy named ${name}\n`);
    process.exit(1);
  }
  try {
    grpc.experimental.parseLoadBalancingConfig(first);
  } catch (e) {
    process.stderr.write(`error: invalid service config: loadBalancingConfig[0].${e.message}\n`);
    process.exit(1);
  }
  return name;
}

function grpcJsVersion() {
  return require('@grpc/grpc-js/package.json').version;
}

/** mulberry32: a small seeded PRNG giving floats in [0, 1). */
function prng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function quantile(sorted, q) {
  if (sorted.length === 0) return 0;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[i];
}

function nowNs() {
  return Number(process.hrtime.bigint());
}

function writeAtomic(file, text) {
  const tmp = `${file}.tmp${process.pid}`;
  fs.writeFileSync(tmp, text);
  fs.renameSync(tmp, file);
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  peakEwma.register();
  const sc = serviceConfig(args.policy);
  const policyName = checkServiceConfig(sc);
  const label = args.label || policyName;
  const pkg = grpc.loadPackageDefinition(
    protoLoader.loadSync(PROTO, { keepCase: true, longs: Number, defaults: true }),
  );
  const Echo = pkg.lblab.v1.Echo;
  const target = `ipv4:${args.targets.join(',')}`;
  const options = {
    'grpc.service_config': JSON.stringify(sc),
    // Each client its own subchannels (connections), as each lblab client has its own: grpc-js
    // otherwise shares subchannels between channels with equal options.
    'grpc.use_local_subchannel_pool': 1,
  };
  const interceptors = policyName === core.NAME ? [peakEwma.rpcKindInterceptor] : [];
  const clients = [];
  for (let c = 0; c < args.clients; c++) {
    clients.push(new Echo(target, grpc.credentials.createInsecure(), { ...options, interceptors }));
  }
  // Wait until each channel can send (at least one READY endpoint).
  await Promise.all(
    clients.map(
      (cl) =>
        new Promise((resolve, reject) =>
          cl.waitForReady(Date.now() + 5000, (err) =>
            err ? reject(new Error(`no target accepted a connection within 5s: ${target}: ${err.message}`)) : resolve(),
          ),
        ),
    ),
  );

  const rng = prng(args.seed);
  const warmupNs = args.warmup * 1e9;
  const endNs = (args.warmup + args.duration) * 1e9;
  const meanGapNs = 1e9 / args.rate;
  const deadlineMs = args.deadline * 1000;

  const latencies = []; // ms, measured calls that ended OK or DEADLINE_EXCEEDED
  const lateness = []; // µs, dispatch lateness of measured calls
  const perBackend = new Map(); // backend → measured calls answered by it
  const codes = new Map(); // status name → count (measured calls)
  let requests = 0;
  let ok = 0;
  let errors = 0;
  let deadlineExceeded = 0;
  let sent = 0;
  let inFlight = 0;

  const cpu0 = process.cpuUsage();
  const t0 = nowNs();
  let next = 0; // intended send time of the next call, ns since t0
  let nextClient = 0;

  function send(intended) {
    const measured = intended >= warmupNs;
    const client = clients[nextClient];
    nextClient = (nextClient + 1) % clients.length;
    const dispatched = nowNs() - t0;
    if (measured) {
      requests += 1;
      lateness.push((dispatched - intended) / 1e3);
    }
    sent += 1;
    inFlight += 1;
    // The deadline runs from the intended send time, as lblab's.
    const deadline = new Date(Date.now() + deadlineMs - (dispatched - intended) / 1e6);
    client.Unary({ id: sent }, { deadline }, (err, reply) => {
      inFlight -= 1;
      if (!measured) return;
      const ms = (nowNs() - t0 - intended) / 1e6;
      if (err) {
        errors += 1;
        const name = grpc.status[err.code] || String(err.code);
        codes.set(name, (codes.get(name) || 0) + 1);
        if (err.code === grpc.status.DEADLINE_EXCEEDED) {
          deadlineExceeded += 1;
          latencies.push(ms);
        }
      } else {
        ok += 1;
        codes.set('OK', (codes.get('OK') || 0) + 1);
        latencies.push(ms);
        perBackend.set(reply.backend, (perBackend.get(reply.backend) || 0) + 1);
      }
    });
  }

  // The dispatcher: send every call whose intended time has come, then sleep until the next:
  // setTimeout (whole milliseconds, never early) for the whole milliseconds of the gap, then
  // setImmediate (which yields to I/O) for the rest, so that a call leaves well within a
  // millisecond of its time without spinning through whole gaps.
  await new Promise((resolve) => {
    function tick() {
      const now = nowNs() - t0;
      while (next <= now && next < endNs) {
        send(next);
        next += -Math.log(1 - rng()) * meanGapNs;
      }
      if (next >= endNs) return resolve();
      const waitMs = Math.floor((next - (nowNs() - t0)) / 1e6);
      if (waitMs >= 1) setTimeout(tick, waitMs);
      else setImmediate(tick);
    }
    tick();
  });
  // Calls in flight get their deadline (+1 s) to end.
  const drainUntil = Date.now() + deadlineMs + 1000;
  while (inFlight > 0 && Date.now() < drainUntil) {
    await new Promise((r) => setTimeout(r, 5));
  }
  const cpu = process.cpuUsage(cpu0);
  const wallS = (nowNs() - t0) / 1e9;
  for (const cl of clients) cl.close();

  latencies.sort((x, y) => x - y);
  lateness.sort((x, y) => x - y);
  const answered = [...perBackend.values()].reduce((s, n) => s + n, 0);
  const backends = [...perBackend.entries()]
    .sort((x, y) => x[0].localeCompare(y[0], 'en', { numeric: true }))
    .map(([backend, calls]) => ({ backend, calls, share: answered ? calls / answered : 0 }));
  const slowCalls = backends
    .filter((b) => args.slow.some((p) => b.backend.startsWith(p)))
    .reduce((s, b) => s + b.calls, 0);
  const r3 = (x) => Math.round(x * 1000) / 1000;
  const summary = {
    client: 'grpc-js',
    grpc_js_version: grpcJsVersion(),
    node_version: process.version,
    policy: label,
    service_config: sc,
    target,
    clients: args.clients,
    rate: args.rate,
    warmup_s: args.warmup,
    measured_s: args.duration,
    deadline_s: args.deadline,
    seed: args.seed,
    requests,
    ok,
    errors,
    deadline_exceeded: deadlineExceeded,
    dropped: requests - ok - errors,
    p50_ms: r3(quantile(latencies, 0.5)),
    p90_ms: r3(quantile(latencies, 0.9)),
    p99_ms: r3(quantile(latencies, 0.99)),
    p999_ms: r3(quantile(latencies, 0.999)),
    max_ms: r3(latencies.length ? latencies[latencies.length - 1] : 0),
    mean_ms: r3(latencies.length ? latencies.reduce((s, x) => s + x, 0) / latencies.length : 0),
    slow_prefixes: args.slow,
    slow_share: answered ? Math.round((slowCalls / answered) * 1e6) / 1e6 : 0,
    statuses: Object.fromEntries(codes),
    backends,
    calls_sent: sent,
    wall_s: r3(wallS),
    cpu_us_per_call: Math.round(((cpu.user + cpu.system) / sent) * 10) / 10,
    cpu_note: 'process CPU time (user + system, every thread of the Node process, warm-up included) / calls sent',
    dispatch_lateness_p99_us: Math.round(quantile(lateness, 0.99)),
  };
  if (args.out) {
    fs.mkdirSync(args.out, { recursive: true });
    writeAtomic(path.join(args.out, 'summary.json'), JSON.stringify(summary, null, 2) + '\n');
    const cols = ['policy', 'requests', 'ok', 'errors', 'deadline_exceeded', 'dropped', 'p50_ms', 'p90_ms', 'p99_ms',
      'p999_ms', 'max_ms', 'mean_ms', 'slow_share', 'cpu_us_per_call', 'dispatch_lateness_p99_us'];
    writeAtomic(
      path.join(args.out, 'summary.csv'),
      cols.join(',') + '\n' + cols.map((c) => summary[c]).join(',') + '\n',
    );
    writeAtomic(
      path.join(args.out, 'backends.csv'),
      'policy,backend,calls,share\n' +
        backends.map((b) => `${label},${b.backend},${b.calls},${b.share.toFixed(6)}`).join('\n') + '\n',
    );
  }
  process.stdout.write(
    `${label}: requests ${requests} ok ${ok} errors ${errors} p50 ${summary.p50_ms} ms p99 ${summary.p99_ms} ms` +
      ` slow_share ${summary.slow_share} client CPU ${summary.cpu_us_per_call} µs per call` +
      ` dispatch lateness p99 ${summary.dispatch_lateness_p99_us} µs\n`,
  );
  process.exit(0);
}

main().catch((e) => {
  process.stderr.write(`error: ${e.message}\n`);
  process.exit(2);
});
