/**
 * Ports for processes lbaas starts itself (the dev server and its Web UI, the local cluster, a local API server and
 * etcd) and for the addresses the tests give the processes they start.
 *
 * Every port is drawn from 20000-32767, below the kernel's ephemeral range (32768-60999 on Linux by default), where
 * `listen(0)` and the local end of every outgoing connection land. A port is drawn free, but it is bound only later,
 * by another process, once that process has started: in between, an outgoing connection of any process on the
 * machine (gRPC, HTTP, database connections open by the hundred while tests run side by side) may take an ephemeral
 * port as its local end, and the server then cannot listen. Below the range only another drawer can take it.
 * The range also keeps a port within a SMALLINT, where Temporal's PostgreSQL schema stores membership ports.
 */
import { randomInt } from 'node:crypto';
import net from 'node:net';

/** Where the ports are drawn from: [LOW, HIGH], outside the ephemeral range and within a SMALLINT. */
export const PORT_RANGE = { low: 20_000, high: 32_767 } as const;

/** Whether a listener can bind the port on `host` now. */
export async function bindable(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const srv = net.createServer();
    srv.unref();
    srv.once('error', () => resolve(false));
    srv.listen(port, host, () => srv.close(() => resolve(true)));
  });
}

/**
 * A port of PORT_RANGE that is not in `taken` (ports drawn but not bound yet, or ports the caller binds later) and can
 * be bound now; it is added to `taken`. The search starts at a random port, so that processes drawing at the same time
 * rarely meet, and walks the whole range once before it gives up.
 */
export async function drawPort(taken: Set<number>, host = '127.0.0.1'): Promise<number> {
  const size = PORT_RANGE.high - PORT_RANGE.low + 1;
  const start = randomInt(size);
  for (let i = 0; i < size; i++) {
    const port = PORT_RANGE.low + ((start + i) % size);
    if (taken.has(port) || !(await bindable(port, host))) continue;
    taken.add(port);
    return port;
  }
  throw new Error(`no free port on ${host} between ${PORT_RANGE.low} and ${PORT_RANGE.high}`);
}

/** `count` distinct ports, each drawn as drawPort does. */
export async function drawPorts(count: number, host = '127.0.0.1'): Promise<number[]> {
  const taken = new Set<number>();
  const ports: number[] = [];
  for (let i = 0; i < count; i++) ports.push(await drawPort(taken, host));
  return ports;
}
