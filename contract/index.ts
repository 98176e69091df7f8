/**
 * The Temporal contract of lbaas: the one module workflows, activities, the worker and clients all import for
 * workflow types and ids, search attributes, messages, failure types and what crosses the boundary
 * (docs/spec.md, "Temporal surface"). Workflow-safe: it runs in the workflow sandbox, so no Node built-ins
 * (eslint.config.mjs enforces it), and it imports nothing but domain types and Temporal's definitions.
 */
export * from './ids';
export * from './messages';
export * from './payloads';
export * from './schema';
export * from './workflow-types';
