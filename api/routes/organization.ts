import { defineRoute } from '../route-spec';
import { getOrganization } from '../../services/organization';
import { organizationSchema } from '../schemas/workspace';

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
];
