/** The worker's log settings and JSON lines (worker/logging.ts). */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CliError } from '../../common/errors';
import { JsonLogger, logSettings, workflowIdFields } from '../../worker/logging';

test('LBAAS_LOG_FORMAT and LBAAS_LOG_LEVEL: text and INFO by default, case-insensitive; anything else is invalid input naming the variable', () => {
  assert.deepEqual(logSettings({}), { format: 'text', level: 'INFO' });
  assert.deepEqual(logSettings({ LBAAS_LOG_FORMAT: 'JSON', LBAAS_LOG_LEVEL: 'debug' }), { format: 'json', level: 'DEBUG' });
  const invalid = (env: NodeJS.ProcessEnv, message: string) => assert.throws(() => logSettings(env), (e: unknown) => e instanceof CliError && e.exitCode === 2 && e.message === message);
  invalid({ LBAAS_LOG_FORMAT: 'logfmt' }, 'LBAAS_LOG_FORMAT: must be text or json, got "logfmt"');
  invalid({ LBAAS_LOG_LEVEL: 'verbose' }, 'LBAAS_LOG_LEVEL: must be one of TRACE, DEBUG, INFO, WARN, ERROR, got "verbose"');
});

test('service uid and load balancer come from the workflow id; other ids add nothing', () => {
  assert.deepEqual(workflowIdFields('lbaas/u-1'), { service_uid: 'u-1' });
  assert.deepEqual(workflowIdFields('lbaas/u-1/pass/3'), { service_uid: 'u-1' });
  assert.deepEqual(workflowIdFields('lbaas/u-1/lb/abc'), { service_uid: 'u-1', load_balancer: 'abc' });
  assert.deepEqual(workflowIdFields('something-else'), {});
});

test('a JSON line: level threshold, SDK attribute names mapped (workflowRunId and runId are run_id), task tokens dropped, errors as name and message', () => {
  const lines: string[] = [];
  const logger = new JsonLogger('INFO', (l) => lines.push(l));
  logger.debug('dropped');
  logger.warn('Activity failed', { workflowId: 'lbaas/u-1/lb/abc', workflowRunId: 'r-1', taskToken: 'dG9rZW4=', attempt: 2, error: new TypeError('boom') });
  assert.equal(lines.length, 1);
  assert.ok(lines[0]?.endsWith('\n'));
  const { time, ...rest } = JSON.parse(lines[0] as string) as Record<string, unknown>;
  assert.ok(!Number.isNaN(Date.parse(String(time))));
  assert.deepEqual(rest, {
    level: 'WARN',
    message: 'Activity failed',
    workflow_id: 'lbaas/u-1/lb/abc',
    run_id: 'r-1',
    attempt: 2,
    error: { name: 'TypeError', message: 'boom' },
    service_uid: 'u-1',
    load_balancer: 'abc',
  });
});
