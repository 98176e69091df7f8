/** The kinds: one definition per kind (one file each) and what the rest of the project reads from them. */
export { backend } from './backend';
export { bind } from './bind';
export { frontend } from './frontend';
export { server } from './server';
export type { ComparedFields, ComparedName, FieldSpec, FieldTable, FieldType, KindDefinition, LinkTarget, OtherName, RequiredOnCreate, ValueOf } from './define';
export * from './registry';
export * from './compare';
