import { SCOPES } from '../../core/scopes';
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
  run: async ({ project }, _input: { projectId: string }) => ({ projectId: project.id }),
});
