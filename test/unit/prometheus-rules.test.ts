/**
 * deploy/prometheus/lbaas-rules.yaml: `promtool check rules` and `promtool test rules` over its unit tests
 * (lbaas-rules.test.yaml), every alert tested and with a runbook in docs/operations.md, and every metric it reads
 * one the worker exports. The promtool steps skip, saying so, only where promtool is not installed (CI installs
 * Debian's prometheus package).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import YAML from 'yaml';
import { exportedMetricNames, metricNamesIn, REPO_ROOT } from '../helpers/exported-metrics';

const DIR = path.join(REPO_ROOT, 'deploy', 'prometheus');
const RULES = path.join(DIR, 'lbaas-rules.yaml');
const TESTS = path.join(DIR, 'lbaas-rules.test.yaml');

interface Rule {
  alert: string;
  expr: string;
  annotations?: Record<string, string>;
}
const rules = (): Rule[] => (YAML.parse(readFileSync(RULES, 'utf8')) as { groups: { rules: Rule[] }[] }).groups.flatMap((g) => g.rules);

function promtool(): string | null {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter).concat('/usr/bin')) {
    const file = path.join(dir, 'promtool');
    if (dir && existsSync(file)) return file;
  }
  return null;
}

const tool = promtool();
const noPromtool = tool ? false : 'promtool is not installed (Debian: apt-get install prometheus); the rules were not checked';

// CI (.ci/run) installs promtool and sets LBAAS_REQUIRE_PROMTOOL: there a missing promtool is a failure, not a skip.
test('promtool is installed where it is required', { skip: !process.env.LBAAS_REQUIRE_PROMTOOL && 'LBAAS_REQUIRE_PROMTOOL is not set' }, () => {
  assert.ok(tool, 'promtool not found on PATH or in /usr/bin');
});

test('promtool check rules: the rules file is valid', { skip: noPromtool }, () => {
  const r = spawnSync(tool as string, ['check', 'rules', RULES], { encoding: 'utf8' });
  assert.equal(r.status, 0, `${r.stdout}${r.stderr}`);
  assert.match(r.stdout, new RegExp(`SUCCESS: ${rules().length} rules found`));
});

test('promtool test rules: every alert fires on the data it is meant for and stays quiet next to it', { skip: noPromtool }, () => {
  const r = spawnSync(tool as string, ['test', 'rules', TESTS], { cwd: DIR, encoding: 'utf8' });
  assert.equal(r.status, 0, `${r.stdout}${r.stderr}`);
  assert.match(r.stdout, /SUCCESS/);
});

test('every alert has unit tests that expect it to fire and not to fire, and a runbook section in docs/operations.md', () => {
  const tests = YAML.parse(readFileSync(TESTS, 'utf8')) as { tests: { alert_rule_test?: { alertname: string; exp_alerts?: unknown[] }[] }[] };
  const cases = tests.tests.flatMap((t) => t.alert_rule_test ?? []);
  const anchors = new Set(
    readFileSync(path.join(REPO_ROOT, 'docs', 'operations.md'), 'utf8')
      .split('\n')
      .filter((l) => /^#{2,4} /.test(l))
      .map((l) => l.replace(/^#+ /, '').trim().toLowerCase().replace(/[^a-z0-9 -]/g, '').replace(/ /g, '-')),
  );
  for (const rule of rules()) {
    const mine = cases.filter((c) => c.alertname === rule.alert);
    assert.ok(mine.some((c) => (c.exp_alerts ?? []).length > 0), `${rule.alert}: a test where it fires`);
    assert.ok(mine.some((c) => (c.exp_alerts ?? []).length === 0), `${rule.alert}: a test where it does not`);
    const runbook = rule.annotations?.runbook ?? '';
    assert.equal(runbook, `docs/operations.md#${rule.alert.toLowerCase()}`, `${rule.alert}: runbook annotation`);
    assert.ok(anchors.has(rule.alert.toLowerCase()), `${rule.alert}: a "### ${rule.alert}" section in docs/operations.md`);
  }
});

test('every metric the rules read is one the worker exports (lbaas_* from the sources, temporal_* from the SDK core)', () => {
  const exported = exportedMetricNames();
  // The derivation finds what exists and only that.
  for (const known of ['lbaas_http_client_requests_total', 'lbaas_service_passes_total', 'lbaas_reconcile_total_duration_seconds_bucket', 'temporal_long_request', 'temporal_workflow_completed', 'temporal_activity_execution_latency_bucket']) {
    assert.ok(exported.has(known), known);
  }
  assert.equal(exported.has('temporal_no_such_metric'), false);
  assert.equal(exported.has('lbaas_service_passes_total_bucket'), false, 'a counter has no histogram series');
  const used = new Set(rules().flatMap((r) => metricNamesIn(r.expr)));
  assert.ok(used.size >= 5, `metric names found: ${[...used].join(', ')}`);
  assert.deepEqual([...used].filter((n) => !exported.has(n)), [], 'metrics no worker exports');
});

test('metric names in PromQL: label names, functions, keywords, durations and variables are not metrics', () => {
  assert.deepEqual(metricNamesIn('sum by (service_uid) (increase(lbaas_service_passes_total{result="failed"}[1h])) >= 3'), ['lbaas_service_passes_total']);
  assert.deepEqual(metricNamesIn('time() - max(a_seconds offset 5m) > 7200 or absent(b{x="y"}) and on() c'), ['a_seconds', 'b', 'c']);
  assert.deepEqual(metricNamesIn('rate(x_total[$__rate_interval]) / ignoring(status) y_total{service_uid=~"$service"}'), ['x_total', 'y_total']);
});
