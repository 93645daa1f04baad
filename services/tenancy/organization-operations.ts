import type { OperationContext } from '../operations/context';
import { defineOperation, Reply, RequestInput } from '../operations/operation';
import { getOrganization, getWorkspaceSettings, updateWorkspaceSettings, WorkspaceSettings } from './organization';
import { organizationSchema, updateWorkspaceSettingsBody, workspaceSettingsSchema } from '../../schemas/workspace';

export const getOrganizationOperation = defineOperation({
  name: 'getOrganization',
  summary: "The API key's workspace. Also the way to verify a key.",
  access: { scopes: { anyOf: ['org:read'] } },
  effect: 'read',
  output: { 200: { description: 'The workspace', schema: { type: 'object', required: ['organization'], properties: { organization: organizationSchema } } } },
  async run(ctx: OperationContext, _input: RequestInput<Record<string, string>, Record<string, never>, undefined>): Promise<Reply> {
    return { body: { organization: await getOrganization(ctx) } };
  },
});

export const getWorkspaceSettingsOperation = defineOperation({
  name: 'getWorkspaceSettings',
  summary: 'Workspace settings: the semantic consumer mode of the SPARQL endpoint.',
  access: { scopes: { anyOf: ['org:read'] } },
  effect: 'read',
  output: { 200: { description: 'The settings', schema: { type: 'object', required: ['settings'], properties: { settings: workspaceSettingsSchema } } } },
  async run(ctx: OperationContext, _input: RequestInput<Record<string, string>, Record<string, never>, undefined>): Promise<Reply> {
    return { body: { settings: await getWorkspaceSettings(ctx) } };
  },
});

export const updateWorkspaceSettingsOperation = defineOperation({
  name: 'updateWorkspaceSettings',
  summary: 'Change workspace settings (unrestricted org:manage). semanticConsumerMode turns the SPARQL endpoint on for queries (read) or queries and updates (write).',
  access: { scopes: { anyOf: ['org:manage'] }, unrestrictedKey: true, actor: 'accountable' as const },
  effect: 'write',
  input: { body: updateWorkspaceSettingsBody },
  output: { 200: { description: 'The settings', schema: { type: 'object', required: ['settings'], properties: { settings: workspaceSettingsSchema } } } },
  async run(ctx: OperationContext, { body }: RequestInput<Record<string, string>, Record<string, never>, Partial<WorkspaceSettings>>): Promise<Reply> {
    return { body: { settings: await updateWorkspaceSettings(ctx, body) } };
  },
});

export const organizationOperations = [
  getOrganizationOperation,
  getWorkspaceSettingsOperation,
  updateWorkspaceSettingsOperation,
];
