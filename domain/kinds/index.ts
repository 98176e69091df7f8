/** The kinds: one definition per kind (one file each) and what the rest of the project reads from them. */
export { backend, backendKey, desiredBackend } from './backend';
export { bind, desiredBind } from './bind';
export { frontend, desiredFrontend, frontendKey } from './frontend';
export { server, desiredServer } from './server';
export type { ComparedFields, ComparedName, FieldSpec, FieldTable, FieldType, KindDefinition, LinkTarget, OtherName, RequiredOnCreate, ValueOf } from './define';
export * from './registry';
export * from './compare';
