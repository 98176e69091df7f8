/** The shape Engine route matchers share with the dispatcher. */
import type { Reply } from '../http';
import type { Simulator } from '../sim';

export interface RequestContext {
  sim: Simulator;
  query: URLSearchParams;
  /** The raw request body (read and drained before the handler runs). */
  body: string;
}

export type Handler = (ctx: RequestContext) => Reply;

export interface RouteMatch {
  /** The route pattern for stats, with `{id}` and `{tag}` placeholders. */
  pattern: string;
  /** Handlers by HTTP method; any other method is a 405. */
  methods: Partial<Record<string, Handler>>;
}
