import { getApiLimitsOperation, putApiLimitsOperation } from '../../services/tenancy/api-limit-operations';
import { defineRoute } from '../route-spec';
import { apiLimitsSchema } from '../../schemas/workspace';

export const apiLimitRoutes = [
  defineRoute({
    method: 'get',
    path: '/api/v1/api-limits',
    operation: getApiLimitsOperation,
    tag: 'Request limits',
    responses: { 200: { description: 'The limits', schema: apiLimitsSchema } },
  }),
  defineRoute({
    method: 'put',
    path: '/api/v1/api-limits',
    operation: putApiLimitsOperation,
    tag: 'Request limits',
    responses: { 200: { description: 'The saved limits', schema: apiLimitsSchema } },
  }),
];
