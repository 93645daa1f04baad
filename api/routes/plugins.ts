import { listPluginsOperation } from '../../services/endpoints/plugin-operations';
import { defineRoute } from '../route-spec';
import { listResponse } from '../../schemas/common';
import { pluginSchema } from '../../schemas/data-endpoints';

export const pluginRoutes = [
  defineRoute({
    method: 'get',
    path: '/api/v1/plugins',
    operation: listPluginsOperation,
    description: 'Plugins are installed by an operator; the public API installs none.',
    tag: 'Plugins',
    responses: { 200: { description: 'A page of installed capabilities', schema: listResponse('plugins', pluginSchema) } },
  }),
];
