/**
 * The metric names a worker exports, read from the code that creates them rather than copied into a list:
 * - lbaas's own: every createCounter/createGauge/createHistogram call with a literal `lbaas_` name in the sources
 *   (worker/metrics.ts, the workflows' metricMeter), histograms with their `_bucket`, `_sum` and `_count` series;
 * - Temporal's: the metric definitions of the SDK core that @temporalio/core-bridge ships its native module from
 *   (sdk-core/crates, Rust), exported as `temporal_<name>` (worker/metrics.ts keeps the names unsuffixed).
 * And the metric names a PromQL expression reads, for the alert rules and the dashboard.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

export const REPO_ROOT = path.resolve(__dirname, '..', '..', '..');
const SOURCE_DIRS = ['activities', 'worker', 'workflows', 'client', 'common'];
const HISTOGRAM_SERIES = ['_bucket', '_sum', '_count'];

function filesUnder(dir: string, ext: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir)) {
    const full = path.join(dir, entry);
    if (statSync(full).isDirectory()) {
      // The SDK core's own tests define metrics of their own.
      if (entry !== 'tests' && entry !== 'node_modules') out.push(...filesUnder(full, ext));
    } else if (entry.endsWith(ext)) out.push(full);
  }
  return out;
}

/** lbaas_* names created in the sources, with their kind. */
export function lbaasMetrics(): Map<string, 'counter' | 'gauge' | 'histogram'> {
  const found = new Map<string, 'counter' | 'gauge' | 'histogram'>();
  for (const dir of SOURCE_DIRS) {
    for (const file of filesUnder(path.join(REPO_ROOT, dir), '.ts')) {
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(/\.create(Counter|Gauge|Histogram)\(\s*'(lbaas_[a-z0-9_]+)'/g)) {
        found.set(m[2] as string, (m[1] as string).toLowerCase() as 'counter' | 'gauge' | 'histogram');
      }
    }
  }
  return found;
}

/** Metric names defined by the Temporal SDK core, without the `temporal_` prefix. */
export function temporalCoreMetrics(): Set<string> {
  const crates = path.join(path.dirname(require.resolve('@temporalio/core-bridge/package.json')), 'sdk-core', 'crates');
  const names = new Set<string>();
  for (const file of filesUnder(crates, '.rs')) {
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/\bname:\s*"([a-z0-9_]+)"\.into\(\)/g)) names.add(m[1] as string);
    for (const m of text.matchAll(/\b[A-Z0-9_]+_NAME:\s*&str\s*=\s*"([a-z0-9_]+)"/g)) names.add(m[1] as string);
  }
  return names;
}

/** Every series name a worker can export: lbaas's and Temporal's, with histogram series (Temporal's: any name). */
export function exportedMetricNames(): Set<string> {
  const out = new Set<string>();
  for (const [name, kind] of lbaasMetrics()) {
    out.add(name);
    if (kind === 'histogram') for (const s of HISTOGRAM_SERIES) out.add(name + s);
  }
  for (const name of temporalCoreMetrics()) {
    out.add(`temporal_${name}`);
    for (const s of HISTOGRAM_SERIES) out.add(`temporal_${name}${s}`);
  }
  return out;
}

const KEYWORDS = new Set(['and', 'or', 'unless', 'by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'offset', 'bool', 'inf', 'nan']);

/**
 * The metric names a PromQL expression selects: identifiers that are neither functions (followed by `(`), keywords,
 * label names (inside `{}` or a `by (...)` list), strings, durations nor Grafana variables.
 */
export function metricNamesIn(expr: string): string[] {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, ' ')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\$\{?\w+\}?/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  const names = new Set<string>();
  for (const m of stripped.matchAll(/(?<![A-Za-z0-9_:.])([A-Za-z_:][A-Za-z0-9_:]*)(\s*\()?/g)) {
    const [, name, call] = m;
    if (call || KEYWORDS.has((name as string).toLowerCase())) continue;
    names.add(name as string);
  }
  return [...names].sort();
}
