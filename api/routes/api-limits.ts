import { defineRoute } from '../route-spec';
import { getApiLimits, putApiLimits } from '../../services/tenancy/api-limits';
import { apiLimitsSchema, putApiLimitsBody } from '../schemas/workspace';

export const apiLimitRoutes = [
  defineRoute({
    method: 'get',
    path: '/api/v1/api-limits',
    operationId: 'getApiLimits',
    summary: 'Request limits per 60-second window: the saved settings, or the defaults.',
    tag: 'Request limits',
    auth: { scopes: ['org:manage'] },
    responses: { 200: { description: 'The limits', schema: apiLimitsSchema } },
    async handler({ db, principal }) {
      return { body: await getApiLimits(db, principal.workspaceId) };
    },
  }),
  defineRoute<Record<string, string>, Record<string, never>, { workspaceRequests: number; apiKeyRequests: number }>({
    method: 'put',
    path: '/api/v1/api-limits',
    operationId: 'putApiLimits',
    summary: 'Save both request limits. The current window’s usage is kept.',
    tag: 'Request limits',
    auth: { scopes: ['org:manage'], accountableActor: true },
    body: putApiLimitsBody,
    responses: { 200: { description: 'The saved limits', schema: apiLimitsSchema } },
    async handler({ db, principal, body }) {
      return { body: await putApiLimits(db, principal.workspaceId, body) };
    },
  }),
];
