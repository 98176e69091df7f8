/**
 * deploy/grafana/lbaas.json: every PromQL query of the dashboard (panel targets and template variables) reads only
 * metrics the worker exports, as derived from the code (test/helpers/exported-metrics.ts), and the dashboard is one
 * Grafana can import as it is (unique panel ids, every query on the datasource variable).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { exportedMetricNames, lbaasMetrics, metricNamesIn, REPO_ROOT } from '../helpers/exported-metrics';

interface Target {
  expr?: string;
  datasource?: { uid?: string };
}
interface Panel {
  id: number;
  type: string;
  title: string;
  targets?: Target[];
  panels?: Panel[];
  datasource?: { uid?: string };
}
interface Dashboard {
  uid: string;
  panels: Panel[];
  templating: { list: { name: string; type: string; query?: string | { query: string } }[] };
}

const dashboard = JSON.parse(readFileSync(path.join(REPO_ROOT, 'deploy', 'grafana', 'lbaas.json'), 'utf8')) as Dashboard;
const allPanels = (panels: Panel[]): Panel[] => panels.flatMap((p) => [p, ...allPanels(p.panels ?? [])]);

/** Every PromQL expression with where it is, `label_values(metric, label)` of a variable as its metric. */
function queries(): { where: string; expr: string }[] {
  const out: { where: string; expr: string }[] = [];
  for (const p of allPanels(dashboard.panels)) for (const t of p.targets ?? []) if (t.expr) out.push({ where: `panel "${p.title}"`, expr: t.expr });
  for (const v of dashboard.templating.list) {
    if (v.type !== 'query') continue;
    const q = typeof v.query === 'string' ? v.query : (v.query?.query ?? '');
    const m = /^label_values\(\s*([^,]+),\s*\w+\s*\)$/.exec(q.trim());
    assert.ok(m, `variable ${v.name}: label_values(metric, label), got ${q}`);
    out.push({ where: `variable ${v.name}`, expr: m[1] as string });
  }
  return out;
}

test('every metric the dashboard queries is one the worker exports', () => {
  const exported = exportedMetricNames();
  const missing: string[] = [];
  for (const q of queries()) for (const name of metricNamesIn(q.expr)) if (!exported.has(name)) missing.push(`${q.where}: ${name}`);
  assert.deepEqual(missing, []);
});

test('the dashboard shows every lbaas metric the worker exports', () => {
  const shown = new Set(queries().flatMap((q) => metricNamesIn(q.expr).map((n) => n.replace(/_(bucket|sum|count)$/, ''))));
  assert.deepEqual([...lbaasMetrics().keys()].filter((n) => !shown.has(n)).sort(), []);
});

test('the dashboard imports as it is: unique panel ids, every panel with queries, every query on the datasource variable', () => {
  const panels = allPanels(dashboard.panels);
  assert.equal(new Set(panels.map((p) => p.id)).size, panels.length, 'panel ids unique');
  assert.ok(dashboard.templating.list.some((v) => v.name === 'datasource' && v.type === 'datasource'));
  for (const p of panels.filter((x) => x.type !== 'row')) {
    assert.ok((p.targets ?? []).length > 0, `${p.title}: queries`);
    assert.equal(p.datasource?.uid, '${datasource}', `${p.title}: datasource`);
    for (const t of p.targets ?? []) assert.equal(t.datasource?.uid, '${datasource}', `${p.title}: target datasource`);
  }
});
