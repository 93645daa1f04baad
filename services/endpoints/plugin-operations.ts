import type { OperationContext } from '../operations/context';
import { defineOperation, Reply, RequestInput } from '../operations/operation';
import { listInstalledPlugins } from './plugins';
import type { PageRequest } from '../shared/pagination';
import { listQuery, listResponse } from '../../schemas/common';
import { pluginSchema } from '../../schemas/data-endpoints';

export const listPluginsOperation = defineOperation({
  name: 'listPlugins',
  summary: 'Capabilities installed in the workspace, with version, roles and target schema.',
  access: { scopes: { anyOf: ['plugins:read'] }, workspaceResources: true },
  effect: 'read',
  input: { query: listQuery() },
  output: { 200: { description: 'A page of installed capabilities', schema: listResponse('plugins', pluginSchema) } },
  async run(ctx: OperationContext, { query }: RequestInput<Record<string, string>, PageRequest, undefined>): Promise<Reply> {
    return { body: await listInstalledPlugins(ctx, query) };
  },
});

export const pluginOperations = [
  listPluginsOperation,
];
