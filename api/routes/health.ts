import { livenessOperation, readinessOperation } from '../../services/shared/health-operations';
import { defineRoute } from '../route-spec';

export const healthRoutes = [
  defineRoute({
    method: 'get',
    path: '/healthz',
    operation: livenessOperation,
    tag: 'Health',
    internal: true,
    // Probes are HTTP's alone (orchestrators read the status, not a body), and outside the document.
    responses: { 200: { description: 'alive' } },
  }),
  defineRoute({
    method: 'get',
    path: '/readyz',
    operation: readinessOperation,
    tag: 'Health',
    internal: true,
    // As liveness: the 503 is the probe's answer, read by the orchestrator.
    responses: { 200: { description: 'ready' }, 503: { description: 'a dependency is unreachable' } },
  }),
];
