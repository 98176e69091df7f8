/**
 * The fault model (docs/engine-api.md#fault-model): delays and failure rates, drawn from seeded PRNG streams so that
 * a run is reproducible. `PUT /_sim/faults` replaces the whole model; keys left out take the simulator's
 * startup defaults.
 */
import { z } from 'zod';

export interface Range {
  min: number;
  max: number;
}

export interface FaultRates {
  serverError: number;
  rateLimited: number;
  dropAfterCommit: number;
  deploymentError: number;
}

/** How a dropped-after-commit answer looks: a 502, a reset connection, or either (drawn per request). */
export type DropMode = '502' | 'reset' | 'mixed';

export interface FaultModel {
  seed: number;
  latencyMs: Range;
  deployMs: Range;
  deleteMs: Range;
  rates: FaultRates;
  routes: string | null;
  dropMode: DropMode;
}

const MAX_MS = 3_600_000;

const RangeSchema = z.union([
  z.number().int().min(0).max(MAX_MS).transform((n) => ({ min: n, max: n })),
  z
    .object({ min: z.number().int().min(0).max(MAX_MS), max: z.number().int().min(0).max(MAX_MS) })
    .strict()
    .refine((r) => r.min <= r.max, { message: 'min must not exceed max' }),
]);

const Rate = z.number().min(0).max(1);

export const FaultInputSchema = z
  .object({
    seed: z.number().int().optional(),
    latencyMs: RangeSchema.optional(),
    deployMs: RangeSchema.optional(),
    deleteMs: RangeSchema.optional(),
    rates: z
      .object({
        serverError: Rate.optional(),
        rateLimited: Rate.optional(),
        dropAfterCommit: Rate.optional(),
        deploymentError: Rate.optional(),
      })
      .strict()
      .optional(),
    routes: z
      .string()
      .nullable()
      .optional()
      .refine(
        (r) => {
          if (r === null || r === undefined || r === '') return true;
          try {
            new RegExp(r);
            return true;
          } catch {
            return false;
          }
        },
        { message: 'not a valid regular expression' },
      ),
    dropMode: z.enum(['502', 'reset', 'mixed']).optional(),
  })
  .strict();

export type FaultInput = z.input<typeof FaultInputSchema>;

export const NO_RATES: FaultRates = { serverError: 0, rateLimited: 0, dropAfterCommit: 0, deploymentError: 0 };

/** Builds the effective model from an input and the startup baseline. Throws a zod error on bad input. */
export function buildFaults(input: unknown, baseline: FaultModel): FaultModel {
  const p = FaultInputSchema.parse(input);
  return {
    seed: p.seed ?? baseline.seed,
    latencyMs: p.latencyMs ?? { ...baseline.latencyMs },
    deployMs: p.deployMs ?? { ...baseline.deployMs },
    deleteMs: p.deleteMs ?? { ...baseline.deleteMs },
    rates: { ...baseline.rates, ...stripUndefined(p.rates ?? {}) },
    routes: p.routes === undefined || p.routes === '' ? baseline.routes : p.routes,
    dropMode: p.dropMode ?? baseline.dropMode,
  };
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** Field path -> message, for the error shape's `validation`. */
export function zodValidation(err: z.ZodError): Record<string, string> {
  const out: Record<string, string> = {};
  for (const issue of err.issues) {
    const key = issue.path.length ? issue.path.map(String).join('.') : '(body)';
    out[key] ??= issue.message;
  }
  return out;
}

export function compileRoutes(routes: string | null): RegExp | null {
  return routes ? new RegExp(routes) : null;
}
