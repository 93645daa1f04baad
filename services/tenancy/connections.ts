import { SCOPES } from '../../core/scopes';
import { uuid } from '../../schemas/common';
import { defineOperation } from '../operations/operation';

/**
 * Opening a connection bound to one project (an MCP session on /mcp/projects/{id}): any key of the
 * workspace whose allowlist holds the project may; each call on it is then checked as its own
 * operation.
 */
export const openProjectConnectionOperation = defineOperation({
  name: 'openProjectConnection',
  summary: 'Bind a connection to one project of the key\'s allowlist.',
  access: { scopes: { anyOf: SCOPES }, project: true },
  effect: 'read',
  output: { 200: { description: 'The project the connection is bound to', schema: { type: 'object', required: ['projectId'], properties: { projectId: uuid } } } },
  run: async ({ project }, _input: { projectId: string }) => ({ projectId: project.id }),
});
