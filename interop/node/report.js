#!/usr/bin/env node
'use strict';
// Writes results/interop/node.md from the files scripts/interop-node.sh leaves in
// results/interop/node/<scenario>/: grpc-js-<policy>/summary.json (client.js), lblab/summary.json
// and lblab/targets.csv (`lblab loadgen`), backend.txt (`lblab backend`'s names and addresses).
// The hand-written explanations of the differences come from interop/node/notes.md.
//
//   node interop/node/report.js --dir results/interop/node --out results/interop/node.md one-slow ...

const fs = require('fs');
const path = require('path');

function args(argv) {
  const a = { dir: null, out: null, command: 'scripts/interop-node.sh', scenarios: [], meta: {} };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    if (k === '--dir') a.dir = argv[++i];
    else if (k === '--out') a.out = argv[++i];
    else if (k === '--command') a.command = argv[++i].trim();
    else if (k.startsWith('--')) a.meta[k.slice(2)] = argv[++i];
    else a.scenarios.push(k);
  }
  return a;
}

/** lblab's agreement rule (record/src/compare.rs): within ±20 %, or within 1 ms. */
function agree(a, b) {
  return Math.abs(a - b) <= 1 || Math.abs(a - b) <= 0.2 * Math.abs(b);
}

function readJson(f) {
  return JSON.parse(fs.readFileSync(f, 'utf8'));
}

/** addr → backend name, from `lblab backend`'s output lines `<name> <addr>`. */
function backendNames(file) {
  const names = new Map();
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    const m = /^(\S+\/\d+)\s+(\S+:\d+)$/.exec(line.trim());
    if (m) names.set(m[2], m[1]);
  }
  return names;
}

function lblabRows(dir, names, slow) {
  const s = readJson(path.join(dir, 'lblab', 'summary.json'));
  const notes = new Map((s.notes || []).map(([k, v]) => [k, v]));
  const shares = new Map();
  const csv = fs.readFileSync(path.join(dir, 'lblab', 'targets.csv'), 'utf8').trim().split('\n');
  const head = csv[0].split(',');
  const col = (n) => head.indexOf(n);
  for (const line of csv.slice(1)) {
    const f = line.split(',');
    const policy = f[col('policy')];
    const name = names.get(f[col('address')]) || names.get(f[col('target')]) || f[col('target')];
    const e = shares.get(policy) || { total: 0, slow: 0 };
    const sends = Number(f[col('sends')]);
    e.total += sends;
    if (name.startsWith(slow)) e.slow += sends;
    shares.set(policy, e);
  }
  return s.rows.map((r) => {
    const sh = shares.get(r.policy) || { total: 0, slow: 0 };
    return {
      client: 'lblab (tonic)',
      policy: r.policy,
      requests: r.requests,
      ok: r.ok,
      errors: r.errors,
      p50: r.p50_ms,
      p99: r.p99_ms,
      share: sh.total ? sh.slow / sh.total : 0,
      cpu: Number(notes.get(`${r.policy}: client cpu per call us`)),
      lateness: Number(notes.get(`${r.policy}: dispatch lateness p99 us`)),
    };
  });
}

function nodeRows(dir) {
  return fs
    .readdirSync(dir)
    .filter((d) => d.startsWith('grpc-js-'))
    .sort((a, b) => order(a) - order(b))
    .map((d) => {
      const s = readJson(path.join(dir, d, 'summary.json'));
      return {
        client: `grpc-js ${s.grpc_js_version}`,
        policy: s.policy,
        requests: s.requests,
        ok: s.ok,
        errors: s.errors,
        p50: s.p50_ms,
        p99: s.p99_ms,
        share: s.slow_share,
        cpu: s.cpu_us_per_call,
        lateness: s.dispatch_lateness_p99_us,
      };
    });
}

function order(d) {
  return [
    'grpc-js-round_robin',
    'grpc-js-pick_first',
    'grpc-js-weighted_round_robin',
    'grpc-js-outlier_detection(round_robin)',
    'grpc-js-peak_ewma_experimental',
  ].indexOf(d);
}

const f2 = (x) => (Number.isFinite(x) ? x.toFixed(2) : '–');
const pct = (x) => `${(100 * x).toFixed(1)} %`;

// One row per compared pair, for results/interop/node.csv (the evidence document reads it).
const csvRows = [];
// Shares agree when the slow group's shares differ by at most this (absolute).
const SHARE_TOLERANCE = 0.03;

function scenarioSection(dir, scenario) {
  const names = backendNames(path.join(dir, 'backend.txt'));
  const slow = fs.existsSync(path.join(dir, 'grpc-js-round_robin', 'summary.json'))
    ? readJson(path.join(dir, 'grpc-js-round_robin', 'summary.json')).slow_prefixes[0]
    : 'slow/';
  const slowCount = [...names.values()].filter((n) => n.startsWith(slow)).length;
  const rows = [...nodeRows(dir), ...lblabRows(dir, names, slow)];
  const out = [];
  out.push(`## ${scenario}`);
  out.push('');
  out.push(
    `${names.size} backends, ${slowCount} of them in \`${slow.replace(/\/$/, '')}\` ` +
      `(fair share ${pct(slowCount / names.size)}). Raw files: [\`node/${scenario}/\`](node/${scenario}/).`,
  );
  out.push('');
  out.push(`| client | policy | requests | ok | errors | p50 ms | p99 ms | share to \`${slow}\` | CPU µs/call | dispatch lateness p99 µs |`);
  out.push('|---|---|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const r of rows) {
    out.push(
      `| ${r.client} | ${r.policy} | ${r.requests} | ${r.ok} | ${r.errors} | ${f2(r.p50)} | ${f2(r.p99)} | ${pct(r.share)} | ${f2(r.cpu)} | ${Number.isFinite(r.lateness) ? r.lateness : '–'} |`,
    );
  }
  out.push('');
  const find = (client, policy) => rows.find((r) => r.client.startsWith(client) && r.policy === policy);
  const pairs = [
    ['grpc-js round_robin vs lblab round_robin', find('grpc-js', 'round_robin'), find('lblab', 'round_robin')],
    ['grpc-js weighted_round_robin vs lblab weighted_round_robin', find('grpc-js', 'weighted_round_robin'), find('lblab', 'weighted_round_robin')],
    [
      'grpc-js outlier_detection(round_robin) vs lblab outlier_detection_experimental(round_robin)',
      find('grpc-js', 'outlier_detection(round_robin)'),
      find('lblab', 'outlier_detection_experimental(round_robin)'),
    ],
    ['grpc-js peak_ewma (port) vs lblab peak_ewma', find('grpc-js', 'peak_ewma_experimental'), find('lblab', 'peak_ewma')],
    ['grpc-js peak_ewma (port) vs tower_p2c_peak_ewma', find('grpc-js', 'peak_ewma_experimental'), find('lblab', 'tower_p2c_peak_ewma')],
  ];
  out.push('| pair | p50 ms | agree | p99 ms | agree | share |');
  out.push('|---|---|---|---|---|---|');
  for (const [label, a, b] of pairs) {
    if (!a || !b) continue;
    csvRows.push([
      'grpc-js', a.client.replace(/^grpc-js /, ''), scenario,
      a.policy === 'peak_ewma_experimental' ? 'peak_ewma_experimental (port)' : a.policy,
      b.policy, slow, a.share.toFixed(4), b.share.toFixed(4), f2(a.p50), f2(b.p50), f2(a.p99), f2(b.p99),
      agree(a.p50, b.p50), agree(a.p99, b.p99), Math.abs(a.share - b.share) <= SHARE_TOLERANCE,
    ]);
    const yn = (x, y) => (agree(x, y) ? 'yes' : '**no**');
    out.push(
      `| ${label} | ${f2(a.p50)} vs ${f2(b.p50)} | ${yn(a.p50, b.p50)} | ${f2(a.p99)} vs ${f2(b.p99)} | ${yn(a.p99, b.p99)} | ${pct(a.share)} vs ${pct(b.share)} |`,
    );
  }
  out.push('');
  return out.join('\n');
}

function main() {
  const a = args(process.argv.slice(2));
  const m = a.meta;
  const first = a.scenarios
    .map((s) => path.join(a.dir, s, 'grpc-js-round_robin', 'summary.json'))
    .find((f) => fs.existsSync(f));
  const info = first ? readJson(first) : {};
  const doc = [];
  doc.push('# grpc-js beside lblab on the same fleet');
  doc.push('');
  doc.push('<!-- Generated by scripts/interop-node.sh (interop/node/report.js); do not edit by hand. -->');
  doc.push('');
  doc.push(
    `Each scenario's fleet is one \`lblab backend\` process (tonic servers on loopback); against it, one after the other, ` +
      `[@grpc/grpc-js](https://www.npmjs.com/package/@grpc/grpc-js) ${info.grpc_js_version || '?'} on Node ${info.node_version || '?'} ` +
      `([\`interop/node/client.js\`](../../interop/node/client.js)) runs \`round_robin\`, \`pick_first\`, ` +
      `\`weighted_round_robin\` (weights from the per-call ORCA reports in lblab's trailers), \`outlier_detection\` around ` +
      `round_robin (grpc-js's name for A50's policy) and \`peak_ewma_experimental\` (the port in ` +
      `[\`interop/node/\`](../../interop/node/README.md)), then \`lblab loadgen\` runs lblab's ` +
      `\`round_robin\`, \`peak_ewma\` (\`peak_ewma_experimental\`), \`tower_p2c_peak_ewma\` (tower's balancer) and the same ` +
      `weighted_round_robin and outlier detection configs (WRR's blackout shortened to 1 s on both sides, so that its weights ` +
      `count within the warm-up). grpc-js has no \`least_request_experimental\`. ` +
      `Every run: open loop, Poisson arrivals at ${m.rate}/s over ${m.clients} clients (each its own channel and connections), ` +
      `${m.warmup} s warm-up then ${m.duration} s measured, deadline 1 s, latency from the intended send time.`,
  );
  doc.push('');
  doc.push('Regenerate (about 6 minutes on a 2-core machine):');
  doc.push('');
  doc.push('```sh');
  doc.push(a.command);
  doc.push('```');
  doc.push('');
  doc.push(
    '**Agreement rule** (lblab\'s sim-vs-real rule, `record/src/compare.rs`): two p50s (or p99s) agree when they are ' +
      'within ±20 % of the second or within 1 ms. *Share* is the share of calls answered by the named group: for grpc-js from each ' +
      'reply\'s `backend` field (OK calls), for lblab from `targets.csv` (calls sent after the warm-up). *CPU µs/call*: for grpc-js ' +
      'the whole Node process\'s CPU time (user + system, all threads, warm-up included) over the calls it sent; for lblab the ' +
      'client runtime\'s CPU time over its calls as `lblab loadgen` prints it (`client CPU x µs per call`), without its ' +
      'dispatcher thread. The runs are short (seconds, not the scenarios\' 50 s), so p99s rest on a few dozen calls and move by ' +
      'a few ms from run to run.',
  );
  doc.push('');
  for (const s of a.scenarios) {
    const dir = path.join(a.dir, s);
    if (fs.existsSync(dir)) doc.push(scenarioSection(dir, s));
  }
  const notes = path.join(__dirname, 'notes.md');
  if (fs.existsSync(notes)) {
    doc.push(fs.readFileSync(notes, 'utf8').trim());
    doc.push('');
  }
  fs.writeFileSync(a.out, doc.join('\n'));
  const header = 'client,version,scenario,policy,lblab_policy,slow_group,share,lblab_share,p50_ms,lblab_p50_ms,p99_ms,lblab_p99_ms,p50_agrees,p99_agrees,shares_agree';
  fs.writeFileSync(a.out.replace(/\.md$/, '.csv'), [header, ...csvRows.map((r) => r.join(','))].join('\n') + '\n');
}

main();
