/**
 * `--state FILE`: objects, tags and the identifier stream survive restarts. Saves are throttled (at most one per
 * second while changes keep coming, plus one on close) and atomic (write a temporary file, then rename).
 */
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { isPending, KINDS, type SimObject, type StateId } from './model';
import type { Simulator } from './sim';

const StateIdSchema = z.enum(['0', '1', '2', '3', '4']);
const nullableNumber = z.number().nullable();

const FileSchema = z.object({
  version: z.literal(1),
  ids: z.tuple([z.number(), z.number(), z.number(), z.number()]),
  tagIds: z.record(z.string(), z.string()),
  objects: z.array(
    z.object({
      kind: z.enum(KINDS),
      identifier: z.string().min(1),
      name: z.string(),
      state: StateIdSchema,
      tags: z.array(z.string()),
      fields: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])),
      createdAt: z.number(),
      updatedAt: z.number(),
      deployMs: nullableNumber,
      deployStartedAt: nullableNumber,
      deployedAt: nullableNumber,
      pendingResult: StateIdSchema.nullable(),
    }),
  ),
});

type StateFile = z.infer<typeof FileSchema>;

function snapshot(sim: Simulator): StateFile {
  const objects: StateFile['objects'] = [];
  for (const o of sim.store.byId.values()) {
    if (o.deleting) continue;
    objects.push({
      kind: o.kind,
      identifier: o.identifier,
      name: o.name,
      state: o.state,
      tags: [...o.tags],
      fields: o.fields,
      createdAt: o.createdAt,
      updatedAt: o.updatedAt,
      deployMs: o.deployMs,
      deployStartedAt: o.deployStartedAt,
      deployedAt: o.deployedAt,
      pendingResult: o.pendingResult,
    });
  }
  return { version: 1, ids: sim.ids.state, tagIds: Object.fromEntries(sim.store.tagIds), objects };
}

/** Loads a state file into an empty simulator. Returns false when the file does not exist. */
export function loadState(sim: Simulator, file: string): boolean {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw new Error(`cannot read state file ${file}: ${(err as Error).message}`);
  }
  let data: StateFile;
  try {
    data = FileSchema.parse(JSON.parse(text));
  } catch (err) {
    const why = err instanceof z.ZodError ? err.issues.map((i) => `${i.path.join('.')}: ${i.message}`).slice(0, 3).join('; ') : (err as Error).message;
    throw new Error(`state file ${file} is not a simulator state file (${why})`);
  }
  sim.ids.state = data.ids;
  for (const [tag, id] of Object.entries(data.tagIds)) sim.store.tagIds.set(tag, id);
  const now = Date.now();
  for (const p of data.objects) {
    const o: SimObject = {
      ...p,
      state: p.state as StateId,
      tags: new Set(p.tags),
      deploySeenAt: null,
      deleting: false,
      deleteMs: null,
      timer: null,
    };
    sim.store.insert(o);
    if (isPending(o.state) && o.pendingResult !== null) {
      const due = (o.deployStartedAt ?? now) + (o.deployMs ?? 0);
      sim.armDeploy(o, due - now);
    }
  }
  return true;
}

export class Persister {
  private timer: NodeJS.Timeout | null = null;
  private chain: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(
    private readonly sim: Simulator,
    readonly file: string,
    private readonly intervalMs = 1000,
  ) {}

  /** Called on every change: schedules a save unless one is already scheduled. */
  changed(): void {
    if (this.closed || this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.save();
    }, this.intervalMs);
    this.timer.unref();
  }

  /** Writes the current state now (after any save in flight). */
  save(): Promise<void> {
    const text = JSON.stringify(snapshot(this.sim));
    this.chain = this.chain
      .then(() => writeAtomic(this.file, text))
      .catch((err: unknown) => this.sim.log(`cannot save state to ${this.file}: ${(err as Error).message}`));
    return this.chain;
  }

  async close(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.closed = true;
    await this.save();
  }
}

async function writeAtomic(file: string, text: string): Promise<void> {
  await fs.promises.mkdir(path.dirname(path.resolve(file)), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  await fs.promises.writeFile(tmp, text, 'utf8');
  await fs.promises.rename(tmp, file);
}
