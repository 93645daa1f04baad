import { defineRoute } from '../route-spec';
import { listInstalledPlugins } from '../../services/endpoints/plugins';
import type { PageRequest } from '../../services/shared/pagination';
import { listQuery, listResponse } from '../schemas/common';
import { pluginSchema } from '../schemas/data-endpoints';

export const pluginRoutes = [
  defineRoute<Record<string, string>, PageRequest>({
    method: 'get',
    path: '/api/v1/plugins',
    operationId: 'listPlugins',
    summary: 'Capabilities installed in the workspace, with version, roles and target schema.',
    description: 'Plugins are installed by an operator; the public API installs none.',
    tag: 'Plugins',
    auth: { scopes: ['plugins:read'], workspaceResources: true },
    query: listQuery(),
    responses: { 200: { description: 'A page of installed capabilities', schema: listResponse('plugins', pluginSchema) } },
    async handler({ db, principal, query }) {
      return { body: await listInstalledPlugins(db, principal.workspaceId, query) };
    },
  }),
];
