/**
 * The Engine simulator in a child process (`node dist/simulator/main.js`), so that its timers and HTTP handling do
 * not share an event loop with the worker or the benchmark, and a small client of its admin API.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { request } from 'undici';
import type { AdminObject, StatsSnapshot } from '../simulator';

/** The token the benchmark's simulator expects (a local, throw-away value). */
export const BENCH_TOKEN = 'bench-token-5e0c7a21d9';

export interface MsRange {
  min: number;
  max: number;
}

export class SimAdmin {
  constructor(readonly url: string) {}

  async call<T>(method: 'GET' | 'POST' | 'PUT' | 'DELETE', p: string, body?: unknown): Promise<T> {
    const res = await request(`${this.url}${p}`, {
      method,
      headers: { 'content-type': 'application/json' },
      body: body === undefined ? null : JSON.stringify(body),
    });
    const text = await res.body.text();
    if (res.statusCode >= 300) throw new Error(`simulator ${method} ${p}: ${res.statusCode} ${text.slice(0, 300)}`);
    return (text ? JSON.parse(text) : undefined) as T;
  }

  /** Reseeds the delay and fault draws and sets the deploy delays; nothing else changes (objects stay). */
  async setDeploy(seed: number, deployMs: MsRange): Promise<void> {
    await this.call('PUT', '/_sim/faults', { seed, deployMs });
  }

  async resetStats(): Promise<void> {
    await this.call('POST', '/_sim/stats/reset');
  }

  stats(): Promise<StatsSnapshot> {
    return this.call('GET', '/_sim/stats');
  }

  async objects(tag?: string): Promise<AdminObject[]> {
    const q = tag ? `?tag=${encodeURIComponent(tag)}` : '';
    return (await this.call<{ objects: AdminObject[] }>('GET', `/_sim/objects${q}`)).objects;
  }

  async seedLoadBalancer(name: string, ip: string): Promise<string> {
    const r = await this.call<{ identifier: string }>('POST', '/_sim/objects', { kind: 'loadbalancer', fields: { name, ip_address: ip }, state: 'Deployed' });
    return r.identifier;
  }
}

export interface SimProcess {
  url: string;
  admin: SimAdmin;
  child: ChildProcess;
  stop(): Promise<void>;
}

/** Starts the simulator with `--port 0` and resolves once it printed its listening line. */
export function startSimProcess(opts: { seed: number; deployMs: MsRange }): Promise<SimProcess> {
  const main = path.join(__dirname, '..', 'simulator', 'main.js');
  const args = [main, '--port', '0', '--quiet', '--seed', String(opts.seed), '--token', BENCH_TOKEN, '--deploy-ms', `${opts.deployMs.min}-${opts.deployMs.max}`];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`simulator did not start within 30 s: ${err.slice(-500)}`)), 30_000);
    child.stderr?.on('data', (d: Buffer) => {
      err = (err + d.toString()).slice(-4000);
    });
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m?.[1]) {
        clearTimeout(timer);
        const url = m[1];
        resolve({
          url,
          admin: new SimAdmin(url),
          child,
          async stop() {
            if (child.exitCode !== null || child.signalCode !== null) return;
            child.kill('SIGTERM');
            const kill = setTimeout(() => child.kill('SIGKILL'), 5000);
            await exited;
            clearTimeout(kill);
          },
        });
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`simulator exited with ${code} before listening: ${err.slice(-500)}`));
    });
  });
}
