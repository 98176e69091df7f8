/** Frontend: one per port, `<port>.<suffix>`, plain TCP, defaulting to that port's Backend. */
import { defineKind } from './define';

export const frontend = defineKind({
  kind: 'frontend',
  title: 'Frontend',
  resourceType: 'da9d14b9d95840c08213de67f9cee6e2',
  fields: {
    name: { type: 'string', compared: true },
    mode: { type: 'string', compared: true },
    load_balancer: { type: 'link', compared: true, to: 'loadbalancer' },
    default_backend: { type: 'link', compared: true, to: 'backend' },
    client_timeout: { type: 'string', compared: false, omitEmpty: true },
  },
  // Created after the Backend it forwards to, yet listed (and found) under its load balancer.
  dependsOn: 'default_backend',
  listedUnder: 'load_balancer',
  destroyStage: 1,
});
