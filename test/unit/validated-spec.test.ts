/**
 * The spec is validated once, where it enters (docs/architecture.md#where-the-spec-is-validated), and travels as a
 * ValidatedSpec: a type only validateSpec (and resolvePool, from one) makes, so code that takes one cannot be handed
 * an unchecked document without a cast. These tests hold the type and the list of places that validate.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { resolvePool, validateSpec, type ServiceSpec, type ValidatedSpec } from '../../domain';
import type { PlanObservedInput } from '../../activities/plan-observed';
import { productSources, REPO_ROOT } from '../helpers/sources';

const ROOT = REPO_ROOT;

const doc = {
  serviceUid: 'svc-1',
  nameSuffix: 'web',
  loadBalancers: ['lb-1'],
  externalAddresses: ['2001:DB8::1'],
  ports: { http: { external: 80, internal: 30080 } },
  servers: [{ name: 'node-1', address: '10.0.0.11' }],
  readiness: { initialInterval: '2s' },
};

const sources = (): string[] => productSources();

describe('ValidatedSpec', () => {
  test('validateSpec makes one, canonical: what the passes take without parsing it again', () => {
    const r = validateSpec(doc);
    assert.ok(r.ok);
    const spec: ValidatedSpec = r.spec;
    assert.deepEqual(spec.externalAddresses, ['2001:db8::1']);
    assert.equal(spec.readiness.initialIntervalMs, 2000);
    // The activity that observes and plans takes the validated value itself: this line compiles only with one.
    const input: PlanObservedInput = { spec };
    assert.equal(input.spec, spec);
  });

  test('a spec literal, or a ServiceSpec that did not come from validateSpec, is not one (the compiler refuses it)', () => {
    const unchecked: ServiceSpec = { ...doc, externalAddresses: ['2001:DB8::1'], readiness: { initialIntervalMs: 2000, backoffCoefficient: 1.5, maximumIntervalMs: 300_000, maximumAttempts: 30 }, failedResources: 'recover' };
    // @ts-expect-error a ServiceSpec is not a ValidatedSpec: only validateSpec brands one (tsc fails if this compiles)
    const forged: ValidatedSpec = unchecked;
    // @ts-expect-error neither is a document as written
    const input: PlanObservedInput = { spec: doc };
    assert.ok(forged && input);
  });

  test('resolvePool keeps it validated: the pool members are checked, not the spec again', () => {
    const { servers: _inline, ...rest } = doc;
    const r = validateSpec({ ...rest, serverPool: 'nodes' });
    assert.ok(r.ok);
    const resolved = resolvePool(r.spec, [{ name: 'node-2', address: '10.0.0.12' }]);
    assert.ok(resolved.ok);
    const spec: ValidatedSpec = resolved.spec;
    assert.deepEqual(spec.servers, [{ name: 'node-2', address: '10.0.0.12' }]);
    assert.equal('serverPool' in spec, false);
  });

  test('only validateSpec, resolvePool and the pass input read from a parent brand a spec', () => {
    const casts = sources().filter((f) => /as ValidatedSpec\b/.test(readFileSync(path.join(ROOT, f), 'utf8')));
    assert.deepEqual(casts, ['domain/pool.ts', 'domain/spec.ts', 'workflows/input.ts']);
  });

  test('validateSpec is called only where a spec enters, as docs/architecture.md lists them; never by an activity', () => {
    const callers = sources().filter((f) => f !== 'domain/spec.ts' && /\bvalidateSpec\(/.test(readFileSync(path.join(ROOT, f), 'utf8')));
    assert.deepEqual(callers, [
      // lbaas import: the specs it builds from what the Engine holds (domain/import.ts), checked before they are planned.
      'cli/commands/import.ts',
      // lbaas apply, plan and dev: a spec file.
      'client/spec-file.ts',
      'domain/import.ts',
      // resolveSpecDocument: the document `lbaas plan` sends for a spec on a pool (client/service-client.ts).
      'domain/pool.ts',
      // lbaas kube: a Service mapped to a spec.
      'kube/mapping.ts',
      // The controller's apply (validator and handler, checkApplied) and its continue-as-new snapshot.
      'workflows/controller-state.ts',
      // fullResync: the teardown spec of an orphan, made from what the Engine lists.
      'workflows/full-resync.ts',
      // specOf: planService, and a pass started directly by a client.
      'workflows/input.ts',
      // The previous release's loop, kept verbatim for one release: its apply validator.
      'workflows/legacy/controller.ts',
    ]);
    const docs = readFileSync(path.join(ROOT, 'docs', 'architecture.md'), 'utf8');
    for (const f of callers) assert.ok(docs.includes(`\`${f}\``), `docs/architecture.md names ${f} among the places that validate`);
  });
});
