import { getOrganizationOperation, getWorkspaceSettingsOperation, updateWorkspaceSettingsOperation } from '../../services/tenancy/organization-operations';
import { defineRoute } from '../route-spec';
import { organizationSchema, workspaceSettingsSchema } from '../../schemas/workspace';

export const organizationRoutes = [
  defineRoute({
    method: 'get',
    path: '/api/v1/organization',
    operation: getOrganizationOperation,
    tag: 'Workspace',
    responses: { 200: { description: 'The workspace', schema: { type: 'object', required: ['organization'], properties: { organization: organizationSchema } } } },
  }),
  defineRoute({
    method: 'get',
    path: '/api/v1/organization/settings',
    operation: getWorkspaceSettingsOperation,
    tag: 'Workspace',
    responses: { 200: { description: 'The settings', schema: { type: 'object', required: ['settings'], properties: { settings: workspaceSettingsSchema } } } },
  }),
  defineRoute({
    method: 'patch',
    path: '/api/v1/organization/settings',
    operation: updateWorkspaceSettingsOperation,
    tag: 'Workspace',
    responses: { 200: { description: 'The settings', schema: { type: 'object', required: ['settings'], properties: { settings: workspaceSettingsSchema } } } },
  }),
];
