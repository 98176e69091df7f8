/**
 * The fault model (docs/engine-api.md#fault-model): delays, failure rates and the real Engine's
 * manners (manners.ts), drawn from seeded PRNG streams so that a run is reproducible. `PUT /_sim/faults` replaces
 * the whole model; keys left out take the defaults of the given `profile`, or of the startup profile.
 */
import { z } from 'zod';
import { DEFAULT_RATE_LIMIT, type Manners, PROFILES, type Profile, type Range, type Sparse } from './manners';

export type { Range } from './manners';

export interface FaultRates {
  serverError: number;
  rateLimited: number;
  dropAfterCommit: number;
  deploymentError: number;
}

/** How a dropped-after-commit answer looks: a 502, a reset connection, or either (drawn per request). */
export type DropMode = '502' | 'reset' | 'mixed';

export interface FaultModel extends Manners {
  /** The profile the keys left out were taken from. */
  profile: Profile;
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
    profile: z.enum(PROFILES).optional(),
    rateLimit: z
      .object({
        rps: z.number().positive().max(1_000_000),
        burst: z.number().int().min(1).max(1_000_000),
        retryAfter: z.boolean(),
      })
      .partial()
      .strict()
      .nullable()
      .optional(),
    deleteListed: z.boolean().optional(),
    tagLagMs: RangeSchema.optional(),
    tagInFlightMs: z.number().int().min(0).max(MAX_MS).optional(),
    tagConflictStatus: z.number().int().min(400).max(599).optional(),
    sparse: z
      .union([
        z.boolean(),
        z
          .object({
            nullFields: z.boolean(),
            tagsNull: z.boolean(),
            zonelessTimes: z.boolean(),
            typeOnlyState: z.boolean(),
            noTotalPages: z.boolean(),
          })
          .partial()
          .strict(),
      ])
      .optional(),
  })
  .strict();

export type FaultInput = z.input<typeof FaultInputSchema>;

export const NO_RATES: FaultRates = { serverError: 0, rateLimited: 0, dropAfterCommit: 0, deploymentError: 0 };

/**
 * Builds the effective model from an input and the baselines (one per profile; `profile` in the input picks one,
 * otherwise the startup profile's). Throws a zod error on bad input.
 */
export function buildFaults(input: unknown, baselines: Record<Profile, FaultModel>, startup: Profile): FaultModel {
  const p = FaultInputSchema.parse(input);
  const baseline = baselines[p.profile ?? startup];
  const sparse = p.sparse === undefined ? baseline.sparse : typeof p.sparse === 'boolean' ? allSparse(p.sparse) : { ...baseline.sparse, ...stripUndefined(p.sparse) };
  return {
    profile: baseline.profile,
    seed: p.seed ?? baseline.seed,
    latencyMs: p.latencyMs ?? { ...baseline.latencyMs },
    deployMs: p.deployMs ?? { ...baseline.deployMs },
    deleteMs: p.deleteMs ?? { ...baseline.deleteMs },
    rates: { ...baseline.rates, ...stripUndefined(p.rates ?? {}) },
    routes: p.routes === undefined || p.routes === '' ? baseline.routes : p.routes,
    dropMode: p.dropMode ?? baseline.dropMode,
    rateLimit:
      p.rateLimit === undefined
        ? baseline.rateLimit && { ...baseline.rateLimit }
        : p.rateLimit === null
          ? null
          : { ...(baseline.rateLimit ?? DEFAULT_RATE_LIMIT), ...stripUndefined(p.rateLimit) },
    deleteListed: p.deleteListed ?? baseline.deleteListed,
    tagLagMs: p.tagLagMs ?? { ...baseline.tagLagMs },
    tagInFlightMs: p.tagInFlightMs ?? baseline.tagInFlightMs,
    tagConflictStatus: p.tagConflictStatus ?? baseline.tagConflictStatus,
    sparse,
  };
}

function allSparse(on: boolean): Sparse {
  return { nullFields: on, tagsNull: on, zonelessTimes: on, typeOnlyState: on, noTotalPages: on };
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
