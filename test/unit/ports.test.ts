/**
 * Ports lbaas draws for the processes it starts (common/ports.ts) and the dev server's choice of its ports
 * (dev/devserver.ts chooseDevServerPorts): nothing drawn in the kernel's ephemeral range, nothing drawn twice, and
 * never a port the caller binds later. `lbaas dev --sim-port P` once failed with "cannot listen on 127.0.0.1:P: the
 * port is already in use" because the dev server, started first, had drawn P for one of its own services.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { test } from 'node:test';
import { drawPort, drawPorts, PORT_RANGE } from '../../common/ports';
import { chooseDevServerPorts, type PortDrawer } from '../../dev/devserver';

test('drawn ports lie in 20000-32767, below the ephemeral range where outgoing connections take their local ends, and are distinct', async () => {
  const ports = await drawPorts(20);
  assert.equal(new Set(ports).size, 20);
  assert.deepEqual(ports.filter((p) => p < PORT_RANGE.low || p > PORT_RANGE.high), []);
});

test('drawPort skips taken ports and ports something listens on, walking the whole range before it gives up', async () => {
  const listener = net.createServer();
  const bound = await new Promise<number>((resolve) => listener.listen(PORT_RANGE.low + 1, '127.0.0.1', () => resolve(PORT_RANGE.low + 1)));
  try {
    // Everything taken but two ports, one of which is listened on: the other is the only answer.
    const taken = new Set<number>();
    const last: number = PORT_RANGE.high;
    for (let p: number = PORT_RANGE.low; p <= last; p++) if (p !== bound && p !== last) taken.add(p);
    assert.equal(await drawPort(taken), PORT_RANGE.high);
    assert.ok(taken.has(PORT_RANGE.high), 'the drawn port is added to the taken ones');
    await assert.rejects(drawPort(taken), /no free port on 127\.0\.0\.1 between 20000 and 32767/);
  } finally {
    listener.close();
  }
});

/** A drawer that always offers the lowest port from 30000 on that is not taken: the worst case for clashes. */
const lowestFirst: PortDrawer = async (taken) => {
  let port = 30_000;
  while (taken.has(port)) port++;
  taken.add(port);
  return port;
};
const allFree = async () => true;
const every = (r: Awaited<ReturnType<typeof chooseDevServerPorts>>) => [
  ...Object.values(r.ports).flatMap((v) => (typeof v === 'number' ? [v] : [v.grpc, v.membership])),
  ...(r.uiPort === null ? [] : [r.uiPort]),
];

test('the dev server draws none of its ports where the caller binds later (the simulator of lbaas dev), nor the ports the caller chose, nor one twice', async () => {
  const chosen = await chooseDevServerPorts({ ip: '127.0.0.1', port: 30_001, ui: true, uiPort: 30_003, reserved: [30_000, 30_002] }, lowestFirst, allFree);
  const ports = every(chosen);
  assert.equal(chosen.ports.frontend.grpc, 30_001);
  assert.equal(chosen.uiPort, 30_003);
  assert.equal(ports.length, 11, 'gRPC and membership of four services, HTTP, metrics, the Web UI');
  assert.equal(new Set(ports).size, 11, `no port twice: ${ports.join(', ')}`);
  assert.ok(!ports.includes(30_000) && !ports.includes(30_002), `no reserved port: ${ports.join(', ')}`);

  const drawn = every(await chooseDevServerPorts({ ip: '127.0.0.1', ui: false, reserved: [30_000] }, lowestFirst, allFree));
  assert.equal(drawn.length, 10);
  assert.equal(new Set(drawn).size, 10);
  assert.ok(!drawn.includes(30_000));
});

test('the previous run\'s membership ports are kept when free, unless one is reserved or chosen by the caller', async () => {
  const recorded = { frontend: 31_000, history: 31_001, matching: 31_002, worker: 31_003 };
  const kept = await chooseDevServerPorts({ ip: '127.0.0.1', ui: false, recorded }, lowestFirst, allFree);
  assert.deepEqual(kept.membership, recorded);

  const busy = async (port: number) => port !== 31_002;
  const clash = await chooseDevServerPorts({ ip: '127.0.0.1', port: 31_000, ui: false, reserved: [31_001], recorded }, lowestFirst, busy);
  assert.equal(clash.membership.worker, 31_003, 'a free recorded port is kept');
  for (const name of ['frontend', 'history', 'matching'] as const) assert.ok(clash.membership[name] >= 30_000 && clash.membership[name] < 31_000, `${name} redrawn: ${clash.membership[name]}`);
  assert.equal(new Set(every(clash)).size, every(clash).length);
});
