/**
 * The HTTP front: one handler for the Engine API (auth, latency, request faults, routing, stats) and the admin
 * API. Every answer is JSON (or a bodiless 204), errors in the shape `{"error":{"code","message","validation"?}}`.
 */
import http from 'node:http';
import { ADMIN_PREFIX, handleAdmin } from './admin';
import { BadJson, BodyTooLarge, errorReply, readBody, type Reply, send } from './http';
import { matchCore } from './routes/core';
import { matchIpam } from './routes/ipam';
import { matchLbaas } from './routes/lbaas';
import type { RouteMatch } from './routes/types';
import { SimError } from './errors';
import type { Simulator } from './sim';

export interface ServerOptions {
  /** Engine API token; '' disables the check. */
  token: string;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The token a request carries (`Authorization: Token <token>`, scheme case-insensitive), or null. */
function tokenOf(header: string | undefined): string | null {
  const m = header ? /^token\s+(\S+)\s*$/i.exec(header) : null;
  return m?.[1] ?? null;
}

/** Runs a handler, turning thrown simulator errors into replies. */
function run(sim: Simulator, fn: () => Reply): Reply {
  try {
    return fn();
  } catch (err) {
    if (err instanceof SimError) return errorReply(err.status, err.message, err.validation);
    if (err instanceof BadJson) return errorReply(400, err.message);
    const message = err instanceof Error ? err.message : String(err);
    sim.log(`internal error: ${message}`);
    return errorReply(500, `Internal simulator error: ${message}`);
  }
}

function matchEngine(path: string): RouteMatch | null {
  return matchLbaas(path) ?? matchCore(path) ?? matchIpam(path);
}

export function createRequestListener(sim: Simulator, opts: ServerOptions): http.RequestListener {
  const handle = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    const started = performance.now();
    const method = req.method ?? 'GET';
    const url = req.url ?? '/';
    const qi = url.indexOf('?');
    const path = qi >= 0 ? url.slice(0, qi) : url;
    const query = new URLSearchParams(qi >= 0 ? url.slice(qi + 1) : '');
    const finish = (reply: Reply, note = ''): void => {
      send(res, reply);
      sim.log(`${method} ${url} -> ${reply.status}${note} (${(performance.now() - started).toFixed(1)} ms)`);
    };

    let body: string;
    try {
      body = await readBody(req);
    } catch (err) {
      const tooLarge = err instanceof BodyTooLarge;
      finish(errorReply(tooLarge ? 413 : 400, tooLarge ? 'Request body too large.' : 'Could not read the request body.', undefined, { Connection: 'close' }));
      return;
    }

    if (path === '/_sim' || path.startsWith(ADMIN_PREFIX)) {
      finish(run(sim, () => handleAdmin(sim, method, path, query, body)));
      return;
    }

    const match = matchEngine(path);
    const handler = match?.methods[method];
    sim.stats.count(`${method} ${match ? match.pattern : '(unmatched)'}`);
    const delay = sim.draws.latency();
    if (delay > 0) await sleep(delay);

    const token = tokenOf(req.headers.authorization);
    if (opts.token !== '' && token !== opts.token) {
      finish(errorReply(401, 'Authentication credentials were not provided or are invalid (expected "Authorization: Token <token>").'));
      return;
    }
    // The bucket is per API token; with the check disabled, requests without a token share one bucket.
    const throttled = sim.rateLimited(token ?? '');
    if (throttled) {
      sim.stats.throttle();
      finish(errorReply(429, 'Request was throttled.', undefined, throttled), ' [rate limit]');
      return;
    }
    if (!match) {
      finish(errorReply(404, `No Engine API route ${path}.`));
      return;
    }
    if (!handler) {
      const allow = Object.keys(match.methods).join(', ');
      finish(errorReply(405, `Method ${method} not allowed on ${match.pattern}; use ${allow}.`, undefined, { Allow: allow }));
      return;
    }
    const fault = sim.draws.requestFault(method, path);
    if (fault === 429) {
      finish(errorReply(429, 'Too many requests (injected).', undefined, { 'Retry-After': '1' }), ' [fault rateLimited]');
      return;
    }
    if (fault !== null) {
      finish(errorReply(fault, `Injected server error ${fault}; the request was not applied.`), ' [fault serverError]');
      return;
    }
    const reply = run(sim, () => handler({ sim, query, body }));
    if (reply.mutated) sim.stats.mutation();
    if (reply.holdMs) await sleep(reply.holdMs);
    const drop = sim.draws.drop(method, path);
    if (drop === 'reset') {
      sim.log(`${method} ${url} -> applied (${reply.status}), connection reset [fault dropAfterCommit]`);
      req.socket.destroy();
      return;
    }
    if (drop === '502') {
      finish(errorReply(502, 'Bad gateway (injected; the request was applied).'), ` [fault dropAfterCommit, applied ${reply.status}]`);
      return;
    }
    finish(reply);
  };

  return (req, res) => {
    handle(req, res).catch((err: unknown) => {
      sim.log(`internal error: ${err instanceof Error ? err.stack ?? err.message : String(err)}`);
      if (!res.headersSent) send(res, errorReply(500, 'Internal simulator error.'));
      else res.destroy();
    });
  };
}

export function createServer(sim: Simulator, opts: ServerOptions): http.Server {
  const server = http.createServer(createRequestListener(sim, opts));
  server.keepAliveTimeout = 30_000;
  server.headersTimeout = 35_000;
  return server;
}
