/**
 * cli/connect.ts, temporalError: what the CLI prints for a call Temporal refused. `lbaas list` against a dev server
 * that refused a large listing printed only "lbaas: Failed to list workflows" (the SDK's message, naming the call); the
 * server's status and details are what say why. The listing here is LbaasClient.list on the real SDK client, whose
 * connection answers ListWorkflowExecutions with a gRPC error shaped as @grpc/grpc-js makes them, metadata included.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Client, ServiceError, type ConnectionLike } from '@temporalio/client';
import { LbaasClient } from '../../client/service-client';
import { temporalError } from '../../cli/connect';
import { EXIT } from '../../common/errors';
import type { TemporalSettings } from '../../common/settings';

const SECRET = 'Bearer secret-api-key-0123456789';

/** A gRPC error as @grpc/grpc-js throws it: "<code> <NAME>: <details>", with the call's metadata. */
function grpcError(code: number, name: string, details: string): Error {
  return Object.assign(new Error(`${code} ${name}: ${details}`), {
    code,
    details,
    metadata: { get: (key: string) => (key === 'authorization' ? [SECRET] : []), getMap: () => ({ authorization: SECRET }) },
  });
}

/** A real SDK client whose every listing fails with `err`. */
function clientFailingListsWith(err: Error): Client {
  const connection = {
    workflowService: {
      listWorkflowExecutions: async () => {
        throw err;
      },
    },
    operatorService: {},
    healthService: {},
    withDeadline: <R>(_deadline: unknown, fn: () => Promise<R>) => fn(),
    withMetadata: <R>(_metadata: unknown, fn: () => Promise<R>) => fn(),
    withAbortSignal: <R>(_signal: unknown, fn: () => Promise<R>) => fn(),
    ensureConnected: async () => undefined,
    close: async () => undefined,
  } as unknown as ConnectionLike;
  return new Client({ connection, namespace: 'lbaas-test' });
}

const settings = { connection: { address: 'temporal.example:7233' }, namespace: 'lbaas-test', taskQueue: 'lbaas' } as unknown as TemporalSettings;

test('a listing Temporal refuses (RESOURCE_EXHAUSTED) is reported with the SDK message, the status name and the details, exit 1, without the metadata', async () => {
  const lbaas = new LbaasClient(clientFailingListsWith(grpcError(8, 'RESOURCE_EXHAUSTED', 'System Persistence Max QPS Reached.')), 'lbaas');
  const err = await lbaas.list().then(
    () => assert.fail('the listing should fail'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof ServiceError, 'the SDK wraps the gRPC error');
  assert.equal(err.message, 'Failed to list workflows');

  const shown = temporalError(err, settings);
  assert.ok(shown, 'a ServiceError with a gRPC cause is rendered');
  assert.equal(shown.message, 'Failed to list workflows: RESOURCE_EXHAUSTED: System Persistence Max QPS Reached.');
  assert.equal(shown.exitCode, EXIT.failed);
  assert.doesNotMatch(shown.message, /secret-api-key/);
});

test('UNAVAILABLE on a listing still means Temporal cannot be reached: exit 4, naming the address and namespace', async () => {
  const lbaas = new LbaasClient(clientFailingListsWith(grpcError(14, 'UNAVAILABLE', 'connection refused')), 'lbaas');
  const err = await lbaas.list().then(
    () => assert.fail('the listing should fail'),
    (e: unknown) => e,
  );
  const shown = temporalError(err, settings);
  assert.ok(shown);
  assert.equal(shown.message, 'cannot reach Temporal at temporal.example:7233 (namespace lbaas-test): connection refused');
  assert.equal(shown.exitCode, EXIT.unreachable);
});

test('an error that is not Temporal\'s is left to the caller', () => {
  assert.equal(temporalError(new Error('disk full'), settings), null);
});
