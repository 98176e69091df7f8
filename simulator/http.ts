/** HTTP helpers shared by the Engine and admin routes: replies, bodies, paging and errors. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Validation } from './validate';
import type { Paging } from './render';

export interface Reply {
  status: number;
  /** Serialized as JSON (`{}` when left out); ignored for 204. */
  body?: unknown;
  headers?: Record<string, string>;
  /** The request changed objects or tags (counted as a mutation). */
  mutated?: boolean;
  /** Hold the answer this long after applying the request (a tag request in flight). */
  holdMs?: number;
}

export const MAX_BODY = 1 << 20;

export function errorReply(status: number, message: string, validation?: Validation, headers?: Record<string, string>): Reply {
  const error: { code: number; message: string; validation?: Validation } = { code: status, message };
  if (validation && Object.keys(validation).length > 0) error.validation = validation;
  return { status, body: { error }, headers };
}

export function send(res: ServerResponse, reply: Reply): void {
  const headers: Record<string, string | number> = { ...(reply.headers ?? {}) };
  if (reply.status === 204) {
    res.writeHead(204, headers);
    res.end();
    return;
  }
  const text = JSON.stringify(reply.body ?? {});
  headers['Content-Type'] = 'application/json';
  headers['Content-Length'] = Buffer.byteLength(text);
  res.writeHead(reply.status, headers);
  res.end(text);
}

export class BodyTooLarge extends Error {}

/** Reads the whole body (bounded). Always drains it, so keep-alive connections stay usable. */
export function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY) tooLarge = true;
      else chunks.push(c);
    });
    req.on('end', () => (tooLarge ? reject(new BodyTooLarge('request body too large')) : resolve(Buffer.concat(chunks).toString('utf8'))));
    req.on('error', reject);
  });
}

export class BadJson extends Error {}

/** Parses a JSON object body; throws BadJson with a message for anything else. */
export function parseJsonObject(text: string): Record<string, unknown> {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw new BadJson(text.trim() === '' ? 'request body is empty; expected a JSON object' : 'request body is not valid JSON');
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new BadJson('request body must be a JSON object');
  return v as Record<string, unknown>;
}

export const DEFAULT_LIMIT = 10;
export const MAX_LIMIT = 100;

function positiveInt(v: string | null): number | undefined {
  if (v === null || !/^\d{1,9}$/.test(v.trim())) return undefined;
  const n = Number(v.trim());
  return n >= 1 ? n : undefined;
}

/** `page` is 1-based; `limit` defaults to 10 and is capped at 100. Invalid values take the defaults. */
export function paging(q: URLSearchParams): Paging {
  return {
    page: positiveInt(q.get('page')) ?? 1,
    limit: Math.min(positiveInt(q.get('limit')) ?? DEFAULT_LIMIT, MAX_LIMIT),
  };
}

/** Percent-decodes one path segment; a malformed escape is kept literally. */
export function decodeSegment(s: string): string {
  if (!s.includes('%')) return s;
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}
