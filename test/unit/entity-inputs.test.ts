/**
 * The entities' start and continue-as-new inputs (workflows/entity-inputs.ts) read strictly: a field they do not
 * know, a field of the wrong type and a missing required field are refused with InvalidInput naming the field; what
 * the previous release writes (test/fixtures/previous-release/, continued as new into `v: 2` by its loops) is read.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { ApplicationFailure } from '@temporalio/common';
import { SCHEMA_VERSION } from '../../contract';
import { ControllerState } from '../../workflows/controller-state';
import { readControllerInput, readPoolInput } from '../../workflows/entity-inputs';
import { PoolMembersState } from '../../workflows/pool-members';

const DIR = path.resolve(__dirname, '..', '..', '..', 'test', 'fixtures', 'previous-release');
const fixture = (file: string) => (JSON.parse(readFileSync(path.join(DIR, file), 'utf8')) as { value: { state: Record<string, unknown>; historyLimit?: number } }).value;

/** The InvalidInput message `read(input)` throws. */
function refusal(read: (input: unknown) => unknown, input: unknown): string {
  try {
    read(input);
  } catch (err) {
    assert.ok(err instanceof ApplicationFailure, String(err));
    assert.equal(err.type, 'InvalidInput');
    assert.equal(err.nonRetryable, true);
    return err.message;
  }
  return 'read';
}

test("the previous release's controller snapshot, continued as new by its loop with v: 2, is read whole (its flat work fields included)", () => {
  const input = { ...fixture('controller-input.json'), v: SCHEMA_VERSION };
  const read = readControllerInput(input);
  assert.equal(read.serviceUid, 'previous-release-service');
  assert.equal(read.state, input.state);
  assert.equal(read.historyLimit, input.historyLimit);
  const again = new ControllerState(read.serviceUid, read.state, () => 0).snapshot();
  assert.equal(readControllerInput({ v: SCHEMA_VERSION, serviceUid: read.serviceUid, state: again }).state, again, "this build's own snapshot reads back");
});

test("the previous release's pool snapshot, continued as new by its loop with v: 2 and deliveryRound, is read; so is this build's", () => {
  const input = { ...fixture('pool-input.json'), v: SCHEMA_VERSION, deliveryRound: 100 };
  const read = readPoolInput(input);
  assert.equal(read.name, 'previous-release-pool');
  assert.equal(read.state, input.state);
  const st = new PoolMembersState(read.name, read.state);
  st.beginRound((n) => `round-${n}`);
  const snapshot = st.snapshot();
  assert.equal(readPoolInput({ v: SCHEMA_VERSION, name: read.name, state: snapshot, roundPageSize: 5, minRunMs: 0 }).state, snapshot);
});

test('a controller input with a field it does not know, of the wrong type or without a required one is refused naming the field', () => {
  const state = fixture('controller-input.json').state;
  const { passCount: _, ...withoutPassCount } = state;
  const base = { v: SCHEMA_VERSION, serviceUid: 'svc-1' };
  const cases: [unknown, string][] = [
    [{ ...base, historyLimt: 50 }, 'serviceController: historyLimt: not a field of its input (it takes v, serviceUid, state, historyLimit)'],
    [{ ...base, historyLimit: '50' }, 'serviceController: historyLimit: must be an integer from 20 to 50000'],
    [{ v: SCHEMA_VERSION }, 'serviceController: serviceUid: '],
    [[base], 'serviceController: input must be an object with "v" and "serviceUid"'],
    [{ ...base, state: 'x' }, 'serviceController: state: must be a snapshot, an object with spec, revision, passCount, lastResult'],
    [{ ...base, state: { ...state, revison: 1 } }, 'serviceController: state.revison: not a field of its snapshot'],
    [{ ...base, state: { ...state, revision: -1 } }, 'serviceController: state.revision: must be an integer from 0'],
    [{ ...base, state: { ...state, work: 'idle' } }, 'serviceController: state.work: must be a phase {tag, ...}'],
    [{ ...base, state: { ...state, supersededCreates: [1] } }, 'serviceController: state.supersededCreates: must be a list of Engine identifiers'],
    [{ ...base, state: withoutPassCount }, 'serviceController: state.passCount: required'],
  ];
  for (const [input, prefix] of cases) {
    const message = refusal(readControllerInput, input);
    assert.ok(message.startsWith(prefix), `${JSON.stringify(input).slice(0, 80)}: ${message}`);
  }
});

test('a pool input with a field it does not know, of the wrong type or without a required one is refused naming the field', () => {
  const base = { v: SCHEMA_VERSION, name: 'pool-1' };
  const state = { servers: [{ name: 'n1', address: '10.0.0.1' }], revision: 1, rounds: 0, round: null, delivered: 0 };
  const cases: [unknown, string][] = [
    [{ ...base, roundPagesize: 5 }, 'serverPool: roundPagesize: not a field of its input (it takes v, name, state, historyLimit, roundPageSize, minRunMs)'],
    [{ ...base, minRunMs: -1 }, 'serverPool: minRunMs: must be an integer from 0 to 60000'],
    [{ v: SCHEMA_VERSION }, 'serverPool: name: '],
    [{ ...base, state: { ...state, member: [] } }, 'serverPool: state.member: not a field of its snapshot'],
    [{ ...base, state: { servers: [] } }, 'serverPool: state.revision: required'],
    [{ ...base, state: { ...state, round: { workflowId: 7 } } }, 'serverPool: state.round: must be a round {workflowId, revision, number} or null'],
    [{ ...base, state: { ...state, servers: [{ name: 'n1', adress: '10.0.0.1' }] } }, 'serverPool: invalid members:\nstate.servers[0].adress'],
  ];
  for (const [input, prefix] of cases) {
    const message = refusal(readPoolInput, input);
    assert.ok(message.startsWith(prefix), `${JSON.stringify(input).slice(0, 80)}: ${message}`);
  }
});
