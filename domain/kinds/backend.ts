/** Backend: one per port, `<port>.<suffix>`, plain TCP with the upstream TCP health check. */
import { defineKind } from './define';

export const backend = defineKind({
  kind: 'backend',
  title: 'Backend',
  resourceType: '33164a3066a04a52be43c607f0c5dd8c',
  fields: {
    name: { type: 'string', compared: true },
    mode: { type: 'string', compared: true },
    health_check: { type: 'string', compared: true, engineDefault: true, omitEmpty: true },
    load_balancer: { type: 'link', compared: true, to: 'loadbalancer' },
    server_timeout: { type: 'integer', compared: false, omitEmpty: true },
  },
  // The load balancer is given, not one of the service's objects: a Backend is created first.
  dependsOn: null,
  listedUnder: 'load_balancer',
  destroyStage: 2,
});
