/**
 * `lbaas schedule set --every DUR [--destroy-orphans] | describe | pause | unpause | trigger | delete`: the
 * full-resync Schedule `lbaas-full-resync` (see ../schedule.ts for its policies). A schedule that does not exist is
 * invalid input (exit 2), except for `set`, which creates it.
 */
import type { CliIo } from '../io';
import { withTemporal } from '../connect';
import { json, keyValues, type OutputFormat } from '../output';
import { existingSchedule, SCHEDULE_ID, setSchedule, triggerSchedule, viewOf, type ScheduleView } from '../../client/schedule';
import { parseDurationFlag } from '../views';
import { formatDuration } from '../../domain';

export async function scheduleSet(opts: { every: string; destroyOrphans?: boolean }, io: CliIo): Promise<void> {
  const everyMs = parseDurationFlag(opts.every, '--every');
  await withTemporal(io.env, async (t) => {
    const what = await setSchedule(t.client, { everyMs, destroyOrphans: opts.destroyOrphans === true, taskQueue: t.settings.taskQueue });
    io.stdout(
      `${what} schedule ${SCHEDULE_ID}: fullResync every ${formatDuration(everyMs)} on task queue ${t.settings.taskQueue}${opts.destroyOrphans ? ', destroying orphaned objects' : ''}\n`,
    );
  });
}

export type ScheduleActionName = 'describe' | 'pause' | 'unpause' | 'trigger' | 'delete';

export async function scheduleAction(name: ScheduleActionName, opts: { output: OutputFormat }, io: CliIo): Promise<void> {
  await withTemporal(io.env, async (t) => {
    const { handle, description } = await existingSchedule(t.client);
    const out = (doc: unknown, text: string) => io.stdout(opts.output === 'json' ? json(doc) : text);
    switch (name) {
      case 'describe': {
        const v = viewOf(description);
        out(v, describeText(v));
        return;
      }
      case 'pause':
      case 'unpause': {
        if (name === 'pause') await handle.pause('paused with lbaas schedule pause');
        else await handle.unpause('unpaused with lbaas schedule unpause');
        const v = viewOf(await handle.describe());
        out(v, `${name}d schedule ${SCHEDULE_ID}\n`);
        return;
      }
      case 'trigger': {
        const r = await triggerSchedule(t.client);
        const text = r.started
          ? `started full resync ${r.started}\n`
          : r.skippedFor
            ? `skipped: full resync ${r.skippedFor} is still running\n`
            : `triggered schedule ${SCHEDULE_ID}; no run showed up yet (see: lbaas schedule describe)\n`;
        out({ scheduleId: SCHEDULE_ID, started: r.started, skippedFor: r.skippedFor }, text);
        return;
      }
      case 'delete': {
        await handle.delete();
        out({ scheduleId: SCHEDULE_ID, deleted: true }, `deleted schedule ${SCHEDULE_ID}\n`);
        return;
      }
    }
  });
}

function describeText(v: ScheduleView): string {
  const pairs: [string, string][] = [
    ['schedule', v.scheduleId],
    ['state', v.paused ? `paused${v.note ? ` (${v.note})` : ''}` : 'active'],
    ['every', v.every ?? '-'],
    ['runs', `${v.workflowType ?? '-'} on task queue ${v.taskQueue ?? '-'}${v.destroyOrphans ? ', destroying orphaned objects' : ''}`],
    ['overlap', `${v.overlap}, catchup window ${v.catchupWindow}`],
    ['taken', `${v.actionsTaken} runs, ${v.skippedOverlap} skipped (overlap), ${v.missedCatchupWindow} missed (catchup window)`],
    ['running', v.running.length > 0 ? v.running.join('\n') : '-'],
    ['next runs', v.paused ? '- (paused)' : v.nextRuns.slice(0, 3).join('\n') || '-'],
    ['recent runs', v.recentRuns.length > 0 ? v.recentRuns.slice(-5).map((r) => `${r.startedAt}  ${r.workflowId}`).join('\n') : '-'],
  ];
  return keyValues(pairs);
}
