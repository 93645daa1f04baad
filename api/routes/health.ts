import { livenessOperation, readinessOperation } from '../../services/shared/health-operations';
import { defineRoute } from '../route-spec';

export const healthRoutes = [
  defineRoute({
    method: 'get',
    path: '/healthz',
    operation: livenessOperation,
    tag: 'Health',
    internal: true,
    responses: { 200: { description: 'alive' } },
  }),
  defineRoute({
    method: 'get',
    path: '/readyz',
    operation: readinessOperation,
    tag: 'Health',
    internal: true,
    responses: { 200: { description: 'ready' }, 503: { description: 'a dependency is unreachable' } },
  }),
];
