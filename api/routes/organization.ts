import { defineRoute } from '../route-spec';
import { getOrganization, getWorkspaceSettings, updateWorkspaceSettings, WorkspaceSettings } from '../../services/tenancy/organization';
import { organizationSchema, workspaceSettingsSchema } from '../schemas/workspace';

export const organizationRoutes = [
  defineRoute({
    method: 'get',
    path: '/api/v1/organization',
    operationId: 'getOrganization',
    summary: "The API key's workspace. Also the way to verify a key.",
    tag: 'Workspace',
    auth: { scopes: ['org:read'] },
    responses: { 200: { description: 'The workspace', schema: { type: 'object', required: ['organization'], properties: { organization: organizationSchema } } } },
    async handler({ db, principal }) {
      return { body: { organization: await getOrganization(db, principal) } };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/v1/organization/settings',
    operationId: 'getWorkspaceSettings',
    summary: 'Workspace settings: the semantic consumer mode of the SPARQL endpoint.',
    tag: 'Workspace',
    auth: { scopes: ['org:read'] },
    responses: { 200: { description: 'The settings', schema: { type: 'object', required: ['settings'], properties: { settings: workspaceSettingsSchema } } } },
    async handler({ db, principal }) {
      return { body: { settings: await getWorkspaceSettings(db, principal.workspaceId) } };
    },
  }),
  defineRoute<Record<string, string>, Record<string, never>, Partial<WorkspaceSettings>>({
    method: 'patch',
    path: '/api/v1/organization/settings',
    operationId: 'updateWorkspaceSettings',
    summary: 'Change workspace settings (unrestricted org:manage). semanticConsumerMode turns the SPARQL endpoint on for queries (read) or queries and updates (write).',
    tag: 'Workspace',
    auth: { scopes: ['org:manage'], unrestrictedKey: true, accountableActor: true },
    body: { type: 'object', additionalProperties: false, minProperties: 1, properties: { semanticConsumerMode: workspaceSettingsSchema.properties.semanticConsumerMode } },
    responses: { 200: { description: 'The settings', schema: { type: 'object', required: ['settings'], properties: { settings: workspaceSettingsSchema } } } },
    async handler({ db, principal, body }) {
      return { body: { settings: await updateWorkspaceSettings(db, principal.workspaceId, body) } };
    },
  }),
];
