/**
 * What the Helm chart (deploy/helm/lbaas) shares with the rest of the repository, checked without Helm: Helm reads no
 * file outside the chart's directory, so the chart carries copies of the Prometheus rules and the Grafana dashboard,
 * and the README shows the values file that `npm run test:kube` installs the chart with (test/kube/chart.test.ts).
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';

const ROOT = path.resolve(__dirname, '..', '..', '..');

for (const [copy, original] of [
  ['deploy/helm/lbaas/files/lbaas-rules.yaml', 'deploy/prometheus/lbaas-rules.yaml'],
  ['deploy/helm/lbaas/files/lbaas.json', 'deploy/grafana/lbaas.json'],
] as const) {
  test(`${copy} is ${original}, byte for byte`, async () => {
    const [a, b] = await Promise.all([readFile(path.join(ROOT, copy)), readFile(path.join(ROOT, original))]);
    assert.ok(a.equals(b), `${copy} differs from ${original}; after changing ${original}: cp ${original} ${copy}`);
  });
}

test('the README shows examples/helm-values.yaml verbatim', async () => {
  const [readme, values] = await Promise.all([readFile(path.join(ROOT, 'README.md'), 'utf8'), readFile(path.join(ROOT, 'examples', 'helm-values.yaml'), 'utf8')]);
  assert.ok(readme.includes('```yaml\n' + values + '```'), 'README.md embeds examples/helm-values.yaml verbatim');
});

test("the chart's appVersion, the image tag it runs by default, is package.json's version", async () => {
  const [chart, pkg] = await Promise.all([readFile(path.join(ROOT, 'deploy', 'helm', 'lbaas', 'Chart.yaml'), 'utf8'), readFile(path.join(ROOT, 'package.json'), 'utf8')]);
  const appVersion = /^appVersion:\s*"?([^"\s]+)"?\s*$/m.exec(chart)?.[1];
  assert.equal(appVersion, (JSON.parse(pkg) as { version: string }).version);
});
