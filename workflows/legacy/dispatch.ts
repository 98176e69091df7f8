/**
 * Which loop an entity run runs: the previous release's (this directory) or today's. Asked by serviceController
 * (workflows/controller.ts) and serverPool (workflows/pool.ts) before anything else, and deleted with this directory
 * (docs/architecture.md, "Removing the legacy module", says how and when).
 *
 * A run without `v` is the previous release's. A run with `v: 2` is today's, unless the previous release ran its first
 * task (a `v: 2` start by a new client while that release was still current, or a continue-as-new onto it in a
 * rollback): that release wrote the history, so only its loop replays it. The input cannot tell the two apart, the
 * `entity-loop-v2` marker can: today's loop writes it in its first task, the previous release never did. This is the
 * one patch outside the legacy loops, and it lives here because it exists only for the move from that release.
 */
import { patched } from '@temporalio/workflow';
import { SCHEMA_VERSION } from '../../contract';
import { ENTITY_LOOP_PATCH } from './controller';

export function runsPreviousLoop(input: unknown): boolean {
  const v = (input as { v?: unknown } | undefined)?.v;
  return v === undefined || (v === SCHEMA_VERSION && !patched(ENTITY_LOOP_PATCH));
}
