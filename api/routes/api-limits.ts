import { getApiLimitsOperation, putApiLimitsOperation } from '../../services/tenancy/api-limit-operations';
import { defineRoute } from '../route-spec';

export const apiLimitRoutes = [
  defineRoute({
    method: 'get',
    path: '/api/v1/api-limits',
    operation: getApiLimitsOperation,
    tag: 'Request limits',
  }),
  defineRoute({
    method: 'put',
    path: '/api/v1/api-limits',
    operation: putApiLimitsOperation,
    tag: 'Request limits',
  }),
];
