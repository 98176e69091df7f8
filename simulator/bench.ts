/**
 * `npm run bench:sim`: throughput and latency of the simulator under load. The simulator runs in its own process
 * (`node dist/simulator/main.js`), so client and server do not share an event loop. Loopback only.
 *
 * Workload: ~20 000 seeded objects (100 load balancers, each with 10 backends, 10 frontends, 90 servers and 90
 * binds, all tagged per load balancer), then 32 concurrent keep-alive clients (undici Pool) per scenario for a
 * fixed duration: GET one object, GET a filtered list, GET a tag list, POST create.
 *
 * Flags: --seconds N (per scenario, default 3), --clients N (default 32).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { Pool } from 'undici';
import { Prng } from './prng';

const TOKEN = 'bench-token';
const AUTH = { authorization: `Token ${TOKEN}`, 'content-type': 'application/json' };

function flag(name: string, def: number): number {
  const i = process.argv.indexOf(name);
  const v = i >= 0 ? Number(process.argv[i + 1]) : def;
  if (!Number.isFinite(v) || v <= 0) throw new Error(`${name} must be a positive number`);
  return v;
}

function startChild(): Promise<{ child: ChildProcess; url: string }> {
  const main = path.join(__dirname, 'main.js');
  const child = spawn(process.execPath, [main, '--port', '0', '--quiet', '--seed', '1', '--token', TOKEN, '--deploy-ms', '500-1500'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m?.[1]) resolve({ child, url: m[1] });
    });
    child.on('exit', (code) => reject(new Error(`simulator exited with ${code}`)));
  });
}

async function call(pool: Pool, method: 'GET' | 'POST', p: string, body?: unknown): Promise<{ status: number; json: unknown }> {
  const res = await pool.request({ method, path: p, headers: AUTH, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.body.text();
  return { status: res.statusCode, json: text ? JSON.parse(text) : undefined };
}

/** Runs `tasks` with at most `concurrency` in flight. */
async function parallel<T>(items: T[], concurrency: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const item = items[next++] as T;
      await fn(item);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

interface Fixture {
  lbs: string[];
  backends: string[];
  servers: string[];
}

async function seed(pool: Pool, clients: number): Promise<{ fixture: Fixture; count: number; ms: number }> {
  const t0 = performance.now();
  const fx: Fixture = { lbs: [], backends: [], servers: [] };
  let count = 0;
  const create = async (body: unknown): Promise<string> => {
    const res = await call(pool, 'POST', '/_sim/objects', body);
    if (res.status !== 201) throw new Error(`seeding failed: ${res.status} ${JSON.stringify(res.json)}`);
    count++;
    return (res.json as { identifier: string }).identifier;
  };
  const tag = (i: number): string[] => [`anxccm-svc-uid=svc-${i}`];
  const lbIdx = Array.from({ length: 100 }, (_, i) => i);
  await parallel(lbIdx, clients, async (i) => {
    fx.lbs[i] = await create({ kind: 'loadbalancer', fields: { name: `lb-${i}`, ip_address: `198.51.100.${i}` }, tags: tag(i) });
  });
  const perLb: { lb: number; n: number }[] = lbIdx.flatMap((lb) => Array.from({ length: 10 }, (_, n) => ({ lb, n })));
  const frontends: string[] = [];
  await parallel(perLb, clients, async ({ lb, n }) => {
    const be = await create({ kind: 'backend', fields: { name: `p${n}.svc-${lb}`, mode: 'tcp', health_check: '"adv_check": "tcp-check"', load_balancer: fx.lbs[lb] }, tags: tag(lb) });
    fx.backends[lb * 10 + n] = be;
    frontends[lb * 10 + n] = await create({ kind: 'frontend', fields: { name: `p${n}.svc-${lb}`, mode: 'tcp', load_balancer: fx.lbs[lb], default_backend: be }, tags: tag(lb) });
  });
  const leaves = fx.backends.flatMap((_, b) => Array.from({ length: 9 }, (__, k) => ({ b, k })));
  await parallel(leaves, clients, async ({ b, k }) => {
    const lb = Math.floor(b / 10);
    fx.servers.push(await create({ kind: 'server', fields: { name: `node-${k}.p${b % 10}.svc-${lb}`, ip: `10.0.${b % 250}.${k}`, port: 30000 + k, check: 'enabled', backend: fx.backends[b] }, tags: tag(lb) }));
    await create({ kind: 'bind', fields: { name: `v4.p${b % 10}.svc-${lb}`, address: `203.0.113.${k}`, port: 80 + k, frontend: frontends[b] }, tags: tag(lb) });
  });
  return { fixture: fx, count, ms: performance.now() - t0 };
}

interface Row {
  scenario: string;
  requests: number;
  errors: number;
  rps: number;
  p50: number;
  p99: number;
  max: number;
}

async function measure(pool: Pool, scenario: string, clients: number, seconds: number, op: (rng: Prng) => Promise<number>): Promise<Row> {
  const latencies: number[] = [];
  let errors = 0;
  const t0 = performance.now();
  const deadline = t0 + seconds * 1000;
  await Promise.all(
    Array.from({ length: clients }, async (_, w) => {
      const rng = new Prng(1000 + w);
      while (performance.now() < deadline) {
        const s = performance.now();
        const status = await op(rng);
        latencies.push(performance.now() - s);
        if (status >= 400) errors++;
      }
    }),
  );
  const elapsed = (performance.now() - t0) / 1000;
  latencies.sort((a, b) => a - b);
  const q = (p: number): number => latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] ?? 0;
  return { scenario, requests: latencies.length, errors, rps: latencies.length / elapsed, p50: q(0.5), p99: q(0.99), max: latencies[latencies.length - 1] ?? 0 };
}

function pick<T>(rng: Prng, arr: T[]): T {
  return arr[rng.int(0, arr.length - 1)] as T;
}

async function main(): Promise<void> {
  const seconds = flag('--seconds', 3);
  const clients = flag('--clients', 32);
  const { child, url } = await startChild();
  const pool = new Pool(url, { connections: clients, pipelining: 1, keepAliveTimeout: 30_000 });
  try {
    const { fixture: fx, count, ms } = await seed(pool, clients);
    const rows: Row[] = [];
    rows.push(
      await measure(pool, 'GET one object (server.json/{id})', clients, seconds, async (rng) => {
        return (await call(pool, 'GET', `/api/LBaaS/v1/server.json/${pick(rng, fx.servers)}`)).status;
      }),
    );
    rows.push(
      await measure(pool, 'GET filtered list (server.json?filters=backend=…, 9 of 9000)', clients, seconds, async (rng) => {
        return (await call(pool, 'GET', `/api/LBaaS/v1/server.json?filters=backend%3D${pick(rng, fx.backends)}&page=1&limit=100`)).status;
      }),
    );
    rows.push(
      await measure(pool, 'GET list by tag (resource.json?tag_name=…, ~200 tagged)', clients, seconds, async (rng) => {
        return (await call(pool, 'GET', `/api/core/v1/resource.json?tag_name=anxccm-svc-uid%3Dsvc-${rng.int(0, 99)}&page=1&limit=100`)).status;
      }),
    );
    let created = 0;
    rows.push(
      await measure(pool, 'POST create (server.json, deploy timer armed)', clients, seconds, async (rng) => {
        const n = created++;
        return (await call(pool, 'POST', '/api/LBaaS/v1/server.json', { name: `bench-${n}`, ip: '10.9.9.9', port: 1 + (n % 65000), check: 'enabled', backend: pick(rng, fx.backends) })).status;
      }),
    );
    const health = (await call(pool, 'GET', '/_sim/health')).json as { objects: number; rssBytes: number };

    const out = process.stdout;
    out.write(`\nEngine simulator benchmark (loopback, simulator in its own process, ${clients} concurrent keep-alive clients, ${seconds} s per scenario)\n`);
    out.write(`seeded ${count} objects (100 LB, 1000 backends, 1000 frontends, 9000 servers, 9000 binds; 1 tag per LB's objects) in ${(ms / 1000).toFixed(1)} s = ${Math.round(count / (ms / 1000))} seeds/s\n\n`);
    const head = ['scenario', 'requests', 'errors', 'req/s', 'p50 ms', 'p99 ms', 'max ms'];
    const table = rows.map((r) => [r.scenario, String(r.requests), String(r.errors), r.rps.toFixed(0), r.p50.toFixed(2), r.p99.toFixed(2), r.max.toFixed(1)]);
    const widths = head.map((h, i) => Math.max(h.length, ...table.map((t) => (t[i] ?? '').length)));
    const line = (cells: string[]): string => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0))).join('  ');
    out.write(`${line(head)}\n${widths.map((w) => '-'.repeat(w)).join('  ')}\n${table.map(line).join('\n')}\n\n`);
    out.write(`after the run: ${health.objects} objects, simulator RSS ${(health.rssBytes / 1048576).toFixed(0)} MiB\n`);
  } finally {
    await pool.close();
    child.kill('SIGTERM');
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
});
