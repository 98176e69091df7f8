/** Server: one per backend server and port, `<server>.<port>.<suffix>`, the internal (NodePort) port, checked. */
import { defineKind } from './define';

export const server = defineKind({
  kind: 'server',
  title: 'Server',
  resourceType: '01f321a4875446409d7d8469503a905f',
  fields: {
    name: { type: 'string', compared: true },
    ip: { type: 'string', compared: true },
    port: { type: 'integer', compared: true },
    check: { type: 'string', compared: true, engineDefault: true, omitEmpty: true },
    backend: { type: 'link', compared: true, to: 'backend' },
  },
  dependsOn: 'backend',
  listedUnder: 'backend',
  destroyStage: 0,
});
