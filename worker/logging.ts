/**
 * The worker's log lines (LBAAS_LOG_FORMAT, LBAAS_LOG_LEVEL). Every line the worker writes goes through the Temporal
 * runtime's logger: the SDK's own lines (worker state, workflow and activity starts, completions and failures, with
 * the attributes the SDK gives them), the native core's lines (forwarded at WARN and above) and lbaas's start-up line.
 *
 * `json`: one JSON object per line on stderr, with `time`, `level`, `message`, and where the line concerns a workflow
 * or an activity `workflow_id`, `run_id`, `service_uid` and `load_balancer` (read from lbaas's workflow ids,
 * workflows/options.ts), and, with tracing on, on the lines about an activity attempt the `trace_id` and `span_id` of
 * its span, so that a log line and its trace find each other. `text` (the default) is the SDK's own format.
 */
import { DefaultLogger, type LogLevel, type LogMetadata, type Logger, makeTelemetryFilterString, type RuntimeOptions } from '@temporalio/worker';
import { invalid } from '../common/errors';
import { workflowIds } from '../contract';

export type LogFormat = 'text' | 'json';
const LEVELS: readonly LogLevel[] = ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR'];

export interface LogSettings {
  format: LogFormat;
  level: LogLevel;
}

/** LBAAS_LOG_FORMAT (text|json, default text) and LBAAS_LOG_LEVEL (default INFO); a bad value is `invalid`. */
export function logSettings(env: NodeJS.ProcessEnv): LogSettings {
  const format = (env.LBAAS_LOG_FORMAT?.trim().toLowerCase() || 'text') as LogFormat;
  if (format !== 'text' && format !== 'json') throw invalid(`LBAAS_LOG_FORMAT: must be text or json, got "${env.LBAAS_LOG_FORMAT}"`);
  const level = (env.LBAAS_LOG_LEVEL?.trim().toUpperCase() || 'INFO') as LogLevel;
  if (!LEVELS.includes(level)) throw invalid(`LBAAS_LOG_LEVEL: must be one of ${LEVELS.join(', ')}, got "${env.LBAAS_LOG_LEVEL}"`);
  return { format, level };
}

/** `lbaas/<uid>`, `lbaas/<uid>/pass/<n>`, `lbaas/<uid>/lb/<load balancer>`, ...: the service and load balancer. */
export function workflowIdFields(workflowId: string): { service_uid?: string; load_balancer?: string } {
  const service = workflowIds.serviceOf(workflowId);
  if (service === null) return {};
  const loadBalancer = workflowIds.loadBalancerOf(workflowId);
  return { service_uid: service, ...(loadBalancer !== null ? { load_balancer: loadBalancer } : {}) };
}

/**
 * The trace and span of each running activity attempt (set by worker/tracing.ts inside Temporal's activity span), so
 * that the SDK's lines about the attempt, which it writes outside that span, still name them. An entry goes when the
 * SDK reports the attempt finished; the oldest go first beyond MAX_ACTIVITY_SPANS (lines below the level may never
 * reach the logger).
 */
const activitySpans = new Map<string, { trace_id: string; span_id: string }>();
const MAX_ACTIVITY_SPANS = 10_000;
/** Only a JSON logger reads the spans back: with text logs nothing is kept. */
let keepActivitySpans = false;
const attemptKey = (workflowId: unknown, runId: unknown, activityId: unknown, attempt: unknown) => `${String(workflowId)}/${String(runId)}/${String(activityId)}/${String(attempt)}`;

export function rememberActivitySpan(a: { workflowId: string; runId: string; activityId: string; attempt: number }, ids: { traceId: string; spanId: string }): void {
  if (!keepActivitySpans) return;
  if (activitySpans.size >= MAX_ACTIVITY_SPANS) activitySpans.delete(activitySpans.keys().next().value as string);
  activitySpans.set(attemptKey(a.workflowId, a.runId, a.activityId, a.attempt), { trace_id: ids.traceId, span_id: ids.spanId });
}

function activitySpanOf(message: string, meta: LogMetadata): { trace_id: string; span_id: string } | undefined {
  if (activitySpans.size === 0 || meta.activityId === undefined) return undefined;
  const key = attemptKey(meta.workflowId, meta.workflowRunId, meta.activityId, meta.attempt);
  const ids = activitySpans.get(key);
  if (ids && (message.startsWith('Activity completed') || message === 'Activity failed')) activitySpans.delete(key);
  return ids;
}

/** The SDK's attribute names, renamed to the JSON line's; attributes not worth a line's width are dropped. */
const RENAMED: Record<string, string> = { workflowId: 'workflow_id', runId: 'run_id', workflowRunId: 'run_id' };
const DROPPED = new Set(['taskToken']);

function plain(value: unknown): unknown {
  if (value instanceof Error) {
    return { name: value.name, message: value.message, ...(value.cause !== undefined ? { cause: plain(value.cause) } : {}) };
  }
  if (typeof value === 'bigint') return value.toString();
  return value;
}

/** One JSON object per line through `write`; lines below `level` are dropped. */
export class JsonLogger implements Logger {
  readonly #threshold: number;

  constructor(
    level: LogLevel,
    private readonly write: (line: string) => void = (line) => process.stderr.write(line),
  ) {
    this.#threshold = LEVELS.indexOf(level);
    keepActivitySpans = true;
  }

  log(level: LogLevel, message: string, meta?: LogMetadata): void {
    const span = meta ? activitySpanOf(message, meta) : undefined;
    if (LEVELS.indexOf(level) < this.#threshold) return;
    const line: Record<string, unknown> = { time: new Date().toISOString(), level, message, ...span };
    for (const [key, value] of Object.entries(meta ?? {})) {
      if (DROPPED.has(key) || value === undefined) continue;
      line[RENAMED[key] ?? key] = plain(value);
    }
    if (typeof line.workflow_id === 'string') Object.assign(line, workflowIdFields(line.workflow_id));
    let text: string;
    try {
      text = JSON.stringify(line, (_k, v: unknown) => plain(v));
    } catch {
      // A circular attribute: keep the line, lose the attributes.
      text = JSON.stringify({ time: line.time, level, message, workflow_id: line.workflow_id, run_id: line.run_id });
    }
    this.write(`${text}\n`);
  }
  trace = (message: string, meta?: LogMetadata) => this.log('TRACE', message, meta);
  debug = (message: string, meta?: LogMetadata) => this.log('DEBUG', message, meta);
  info = (message: string, meta?: LogMetadata) => this.log('INFO', message, meta);
  warn = (message: string, meta?: LogMetadata) => this.log('WARN', message, meta);
  error = (message: string, meta?: LogMetadata) => this.log('ERROR', message, meta);
}

/** The Temporal runtime's logger and the native core's log forwarding for these settings. */
export function runtimeLogging(s: LogSettings): Pick<RuntimeOptions, 'logger'> & { logging: NonNullable<RuntimeOptions['telemetryOptions']>['logging'] } {
  const logger = s.format === 'json' ? new JsonLogger(s.level) : new DefaultLogger(s.level);
  // The core's own lines (connection trouble, failed polls) below WARN are for SDK developers.
  const coreLevel = LEVELS.indexOf(s.level) > LEVELS.indexOf('WARN') ? s.level : 'WARN';
  return { logger, logging: { filter: makeTelemetryFilterString({ core: coreLevel }), forward: {} } };
}
