/**
 * Small raw-HTTP helpers for tests against a running simulator (contract tests, and anyone else's tests that
 * want fixtures): a JSON request that never throws on status, and a poller.
 */
import { request } from 'undici';

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  /** Parsed body, or undefined when the body is empty. */
  json: unknown;
}

export interface RawRequestOptions {
  /** Sent as JSON unless it is already a string. */
  body?: unknown;
  /** Engine token; null sends no Authorization header. Default 'dev-token'. */
  token?: string | null;
  headers?: Record<string, string>;
}

export async function rawRequest(baseUrl: string, method: string, path: string, opts: RawRequestOptions = {}): Promise<RawResponse> {
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  const token = opts.token === undefined ? 'dev-token' : opts.token;
  if (token !== null) headers.authorization = `Token ${token}`;
  let body: string | undefined;
  if (opts.body !== undefined) {
    body = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
    headers['content-type'] ??= 'application/json';
  }
  const res = await request(baseUrl + path, { method: method as 'GET', headers, body });
  const text = await res.body.text();
  let json: unknown;
  if (text !== '') {
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
  }
  return { status: res.statusCode, headers: res.headers, text, json };
}

/** Polls `probe` until it returns a value other than undefined, or fails after `timeoutMs`. */
export async function waitFor<T>(probe: () => Promise<T | undefined>, timeoutMs = 3000, intervalMs = 10): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
