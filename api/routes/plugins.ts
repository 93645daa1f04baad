import { listPluginsOperation } from '../../services/endpoints/plugin-operations';
import { defineRoute } from '../route-spec';

export const pluginRoutes = [
  defineRoute({
    method: 'get',
    path: '/api/v1/plugins',
    operation: listPluginsOperation,
    description: 'Plugins are installed by an operator; the public API installs none.',
    tag: 'Plugins',
  }),
];
