/** An Engine error answer: the HTTP status and the error shape's message and per-field validation. */
import type { Validation } from './validate';

export class SimError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly validation?: Validation,
  ) {
    super(message);
  }
}
