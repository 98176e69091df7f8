/**
 * (Longer than 300 lines: every Engine error class beside the one function that maps a response onto them, so the
 * status-to-class rules read in one place.)
 *
 * The one place where Engine HTTP outcomes become typed errors (docs/architecture.md#retries).
 *
 * Every error names the request (`method`, `path` as sent, query included: it never carries a secret, the token
 * only ever travels in the Authorization header) and the HTTP status, and says whether repeating the same request
 * can succeed (`retryable`). Retrying is not done here: Temporal owns retries, the activity layer turns these
 * classes into ApplicationFailures.
 *
 * Text that comes from outside (Engine messages, socket errors) passes through a redactor that removes the token,
 * in case a server or proxy echoes the Authorization header back.
 */
import { STATUS_CODES } from 'node:http';

export interface EngineErrorInit {
  method: string;
  /** Path and query as sent, including any base path prefix of the client's baseUrl. */
  path: string;
  /** HTTP status, or null when no response arrived. */
  status: number | null;
  /** The Engine's own `error.message`, when it sent one. */
  engineMessage?: string;
  /** What follows the status in the message. */
  detail?: string;
}

function formatMessage({ method, path, status, detail }: EngineErrorInit): string {
  const head = status === null ? 'network error' : `${status} ${STATUS_CODES[status] ?? 'Unknown Status'}`;
  return `${method} ${path}: ${head}${detail ? `: ${detail}` : ''}`;
}

/** Base of every error the Engine client throws. */
export abstract class EngineError extends Error {
  readonly method: string;
  readonly path: string;
  readonly status: number | null;
  readonly engineMessage?: string;
  /** Whether the same request may succeed later. Temporal retries only these. */
  abstract readonly retryable: boolean;

  constructor(init: EngineErrorInit) {
    super(formatMessage(init));
    this.method = init.method;
    this.path = init.path;
    this.status = init.status;
    if (init.engineMessage !== undefined) this.engineMessage = init.engineMessage;
  }

  /** Errors land in logs and Temporal failures as JSON: keep the name and message there too. */
  toJSON(): Record<string, unknown> {
    return { name: this.name, message: this.message, ...Object.fromEntries(Object.entries(this)) };
  }
}

/** 404: the object (or, on untag, the tag on it) does not exist. A DELETE caller treats it as success. */
export class EngineNotFoundError extends EngineError {
  static {
    this.prototype.name = 'EngineNotFoundError';
  }
  readonly retryable = false;
}

/**
 * 400, 422 and every other 4xx that sending the same request again cannot fix: the request is wrong.
 * `validation` is the Engine's per-field map (`{"name": "must not be empty"}`), empty when it sent none.
 */
export class EngineValidationError extends EngineError {
  static {
    this.prototype.name = 'EngineValidationError';
  }
  readonly retryable = false;
  readonly validation: Readonly<Record<string, string>>;
  constructor(init: EngineErrorInit & { validation: Record<string, string> }) {
    super(init);
    this.validation = init.validation;
  }
}

/** 401/403: the token is wrong or lacks permission; retrying with the same token cannot help. */
export class EngineAuthError extends EngineError {
  static {
    this.prototype.name = 'EngineAuthError';
  }
  readonly retryable = false;
}

/**
 * 409: the object is still referenced (deleting a backend that servers point at) or busy. Retryable: the conflict
 * clears once the dependents are gone, which is why the upstream controller retries destroy conflicts.
 */
export class EngineConflictError extends EngineError {
  static {
    this.prototype.name = 'EngineConflictError';
  }
  readonly retryable = true;
}

/**
 * 429: retry no sooner than `retryAfterMs`. The client sets it from its shared backoff (pacing.ts), which honours
 * Retry-After when the Engine sends one; read without a client, it is Retry-After or 1 s.
 */
export class EngineRateLimitedError extends EngineError {
  static {
    this.prototype.name = 'EngineRateLimitedError';
  }
  readonly retryable = true;
  readonly retryAfterMs: number;
  constructor(init: EngineErrorInit & { retryAfterMs: number }) {
    super(init);
    this.retryAfterMs = init.retryAfterMs;
  }
}

/**
 * 5xx. Retryable, but note that a 5xx (or a network error) after a POST does not prove the object was not created
 * (`dropAfterCommit` in docs/engine-api.md#fault-model): callers find such orphans by name or tag before creating
 * it again.
 */
export class EngineServerError extends EngineError {
  static {
    this.prototype.name = 'EngineServerError';
  }
  readonly retryable = true;
}

/**
 * No usable response: connection refused or reset, DNS failure, timeout. `code` is the socket or undici error code
 * (`ECONNREFUSED`, `UND_ERR_SOCKET`, ...), `TIMEOUT` for the client's own request timeout. A 408 from a proxy is
 * reported here too (status 408): it is the same transient condition seen from the other side.
 */
export class EngineNetworkError extends EngineError {
  static {
    this.prototype.name = 'EngineNetworkError';
  }
  readonly retryable = true;
  readonly code?: string;
  constructor(init: EngineErrorInit & { code?: string }) {
    super(init);
    if (init.code !== undefined) this.code = init.code;
  }
}

/**
 * A response this client cannot use: a 2xx whose body is not JSON or does not match the schema, an unexpected
 * 1xx/3xx, or a list that does not end. Not retryable: a schema mismatch is a contract break that repeats, and
 * retrying a POST whose answer was unreadable could create a duplicate.
 */
export class EngineProtocolError extends EngineError {
  static {
    this.prototype.name = 'EngineProtocolError';
  }
  readonly retryable = false;
  /**
   * On a create whose answer could not be used: the identifier the answer carried. The object exists; the caller
   * records and tags it before failing, so an unreadable answer cannot leave an untagged object behind.
   */
  createdIdentifier?: string;
}

/** Whether an error is worth retrying. Anything that is not an EngineError is a bug here, not a transient fault. */
export function isRetryable(err: unknown): boolean {
  return err instanceof EngineError && err.retryable;
}

/** Removes secrets from text that came from outside this process. */
export type Redact = (text: string) => string;

export const REDACTED = '[redacted]';

export function redactor(secrets: readonly string[]): Redact {
  const nonEmpty = secrets.filter((s) => s.length > 0);
  return (text) => nonEmpty.reduce((acc, secret) => acc.split(secret).join(REDACTED), text);
}

/** Retry-After when absent or unreadable: one second, what the simulator sends and a polite minimum. */
export const DEFAULT_RETRY_AFTER_MS = 1000;

/**
 * Retry-After (RFC 9110 10.2.3) in milliseconds: delay-seconds or an HTTP date (relative to `nowMs`, never
 * negative). Fractional seconds are tolerated. Anything else yields the default.
 */
export function parseRetryAfter(value: string | readonly string[] | undefined, nowMs: number = Date.now()): number {
  return retryAfterHeaderMs(value, nowMs) ?? DEFAULT_RETRY_AFTER_MS;
}

/** Retry-After in milliseconds as `parseRetryAfter` reads it, or undefined when the answer has none it can read. */
export function retryAfterHeaderMs(value: string | readonly string[] | undefined, nowMs: number = Date.now()): number | undefined {
  const raw = (Array.isArray(value) ? value[0] : value)?.trim();
  if (raw === undefined || raw === '') return undefined;
  if (/^\d+(\.\d+)?$/.test(raw)) return Math.ceil(Number(raw) * 1000);
  // Date.parse accepts bare numbers as years; an HTTP date always has a weekday or month name.
  const at = /[a-z]/i.test(raw) ? Date.parse(raw) : Number.NaN;
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}

export type ResponseHeaders = Readonly<Record<string, string | string[] | undefined>>;

/** A non-2xx response, body read as text. */
export interface FailedResponse {
  method: string;
  path: string;
  status: number;
  headers: ResponseHeaders;
  body: string;
  /** For a 429: the wait the client's shared backoff decided on; Retry-After (or its default) when absent. */
  retryDelayMs?: number;
}

interface EngineErrorBody {
  message?: string;
  validation: Record<string, string>;
}

function firstHeader(headers: ResponseHeaders, name: string): string | undefined {
  const value = headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function validationText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return value.join(', ');
  return JSON.stringify(value) ?? String(value);
}

const MAX_TEXT_DETAIL = 200;

/**
 * Reads `{"error":{"code":..,"message":..,"validation":{..}}}`, tolerating a top-level `message`, validation values
 * given as lists, and short text/plain bodies. HTML error pages are not quoted: they say nothing useful.
 */
function readErrorBody(res: FailedResponse, redact: Redact): EngineErrorBody {
  const contentType = (firstHeader(res.headers, 'content-type') ?? '').toLowerCase();
  let parsed: unknown;
  try {
    parsed = JSON.parse(res.body);
  } catch {
    const text = res.body.trim().split('\n')[0]?.trim() ?? '';
    const usable = contentType.startsWith('text/plain') && text !== '';
    return { validation: {}, ...(usable ? { message: redact(text.slice(0, MAX_TEXT_DETAIL)) } : {}) };
  }
  const envelope = isRecord(parsed) && isRecord(parsed.error) ? parsed.error : parsed;
  if (!isRecord(envelope)) return { validation: {} };
  const validation: Record<string, string> = {};
  if (isRecord(envelope.validation)) {
    for (const [field, value] of Object.entries(envelope.validation)) {
      validation[redact(field)] = redact(validationText(value));
    }
  }
  const message = typeof envelope.message === 'string' && envelope.message !== '' ? redact(envelope.message) : undefined;
  return { validation, ...(message === undefined ? {} : { message }) };
}

/**
 * Maps a non-2xx response to its error class. The message shows the per-field validation messages when there are
 * any (they are what a person has to fix), the Engine's message otherwise; both stay available as properties.
 */
export function errorFromResponse(res: FailedResponse, redact: Redact, nowMs: number = Date.now()): EngineError {
  const { method, path, status } = res;
  const { message, validation } = readErrorBody(res, redact);
  const fieldMessages = Object.entries(validation).map(([field, text]) => `${field}: ${text}`);
  const detail = fieldMessages.length > 0 ? fieldMessages.join('; ') : message;
  const init: EngineErrorInit = {
    method,
    path,
    status,
    ...(message === undefined ? {} : { engineMessage: message }),
    ...(detail === undefined ? {} : { detail }),
  };
  if (status === 404) return new EngineNotFoundError(init);
  if (status === 401 || status === 403) return new EngineAuthError(init);
  if (status === 409) return new EngineConflictError(init);
  if (status === 429) {
    return new EngineRateLimitedError({ ...init, retryAfterMs: res.retryDelayMs ?? parseRetryAfter(res.headers['retry-after'], nowMs) });
  }
  if (status === 408) return new EngineNetworkError({ ...init, code: 'HTTP_408' });
  if (status >= 400 && status < 500) return new EngineValidationError({ ...init, validation });
  if (status >= 500 && status < 600) return new EngineServerError(init);
  const location = firstHeader(res.headers, 'location');
  const detail3xx = location === undefined ? 'unexpected status' : `redirect to ${redact(location)} not followed`;
  return new EngineProtocolError({ method, path, status, detail: detail3xx });
}

/** A failure before a complete response arrived. */
export function networkError(method: string, path: string, cause: unknown, redact: Redact): EngineNetworkError {
  const err = isRecord(cause) || cause instanceof Error ? (cause as Record<string, unknown>) : {};
  const code = typeof err.code === 'string' ? err.code : undefined;
  let text = typeof err.message === 'string' && err.message !== '' ? err.message : '';
  // Node reports a failed connect to several addresses as an AggregateError with an empty message.
  if (text === '' && Array.isArray(err.errors)) {
    const first: unknown = err.errors[0];
    if (first instanceof Error) text = first.message;
  }
  if (text === '') text = code ?? String(cause);
  if (code !== undefined && !text.includes(code)) text = `${text} (${code})`;
  return new EngineNetworkError({
    method,
    path,
    status: null,
    detail: redact(text),
    ...(code === undefined ? {} : { code: redact(code) }),
  });
}

/** The client's own deadline passed before the response was complete. */
export function timeoutError(method: string, path: string, timeoutMs: number): EngineNetworkError {
  return new EngineNetworkError({ method, path, status: null, detail: `timed out after ${timeoutMs} ms`, code: 'TIMEOUT' });
}

/** A 2xx (or other non-error) response this client cannot use; `problem` says what was wrong with it. */
export function protocolError(method: string, path: string, status: number, problem: string, redact: Redact): EngineProtocolError {
  return new EngineProtocolError({ method, path, status, detail: redact(problem) });
}
