import { getOrganizationOperation, getWorkspaceSettingsOperation, updateWorkspaceSettingsOperation } from '../../services/tenancy/organization-operations';
import { defineRoute } from '../route-spec';

export const organizationRoutes = [
  defineRoute({
    method: 'get',
    path: '/api/v1/organization',
    operation: getOrganizationOperation,
    tag: 'Workspace',
  }),
  defineRoute({
    method: 'get',
    path: '/api/v1/organization/settings',
    operation: getWorkspaceSettingsOperation,
    tag: 'Workspace',
  }),
  defineRoute({
    method: 'patch',
    path: '/api/v1/organization/settings',
    operation: updateWorkspaceSettingsOperation,
    tag: 'Workspace',
  }),
];
