import type { StateClass, StateName } from './types';

/**
 * How the planner treats an Engine state. Deployed and Updated are ready. NewlyCreated and Updating are still
 * settling: waited for, never duplicated (the upstream controller also treats Updating as not ready, although
 * the Engine reports it with the ok type). DeploymentError failed. A state id we do not know is most likely a
 * transition we have not seen: waiting for it, bounded by the readiness policy, is safer than destroying it.
 */
export function classifyState(state: StateName): StateClass {
  switch (state) {
    case 'Deployed':
    case 'Updated':
      return 'ok';
    case 'NewlyCreated':
    case 'Updating':
    case 'Unknown':
      return 'progressing';
    case 'DeploymentError':
      return 'failed';
  }
}
