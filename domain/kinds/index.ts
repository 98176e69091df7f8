/** Dispatch from the kind of an object to its rules, with the kind narrowed so every call is type-checked. */
import { matchesWith } from '../diff';
import type { DesiredObject, ObservedObject } from '../types';
import { backendRules } from './backend';
import { bindRules } from './bind';
import { frontendRules } from './frontend';
import { serverRules } from './server';

export { backendKey, desiredBackend } from './backend';
export { desiredBind } from './bind';
export { desiredFrontend, frontendKey } from './frontend';
export { desiredServer } from './server';
export { backendRules, bindRules, frontendRules, serverRules };

/** Whether `observed` stands for `desired` when the desired object's parent was kept as `parentId`. */
export function matches(desired: DesiredObject, observed: ObservedObject, parentId: string): boolean {
  switch (desired.kind) {
    case 'backend':
      return observed.kind === 'backend' && matchesWith(backendRules, desired.fields, observed.fields, parentId);
    case 'frontend':
      return observed.kind === 'frontend' && matchesWith(frontendRules, desired.fields, observed.fields, parentId);
    case 'bind':
      return observed.kind === 'bind' && matchesWith(bindRules, desired.fields, observed.fields, parentId);
    case 'server':
      return observed.kind === 'server' && matchesWith(serverRules, desired.fields, observed.fields, parentId);
  }
}

/** The identifier an existing object links to, or null for a Backend. */
export function parentIdOf(observed: ObservedObject): string | null {
  switch (observed.kind) {
    case 'backend':
      return backendRules.parentOf(observed.fields);
    case 'frontend':
      return frontendRules.parentOf(observed.fields);
    case 'bind':
      return bindRules.parentOf(observed.fields);
    case 'server':
      return serverRules.parentOf(observed.fields);
  }
}
