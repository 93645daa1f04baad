import { defineRoute } from '../route-spec';
import { UnavailableError } from '../../core/errors';
import { temporalSettings } from '../../core/temporal-config';
import type { SystemCheckResult } from '../../workflows/system-check';

async function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export const healthRoutes = [
  defineRoute({
    method: 'get',
    path: '/healthz',
    operationId: 'liveness',
    summary: 'Liveness: the process is serving',
    tag: 'Health',
    auth: { public: true, reason: 'probed by orchestrators without credentials' },
    internal: true,
    responses: { 200: { description: 'alive' } },
    async handler() {
      return { body: { status: 'ok' } };
    },
  }),
  defineRoute<Record<string, string>, { worker?: boolean }>({
    method: 'get',
    path: '/readyz',
    operationId: 'readiness',
    summary: 'Readiness: PostgreSQL and Temporal reachable; with ?worker=true also a worker round trip',
    tag: 'Health',
    auth: { public: true, reason: 'probed by orchestrators without credentials' },
    internal: true,
    query: { type: 'object', additionalProperties: false, properties: { worker: { type: 'boolean', default: false } } },
    responses: { 200: { description: 'ready' }, 503: { description: 'a dependency is unreachable' } },
    async handler({ deps, query }) {
      const checks: Record<string, string> = {};
      const failures: string[] = [];
      await withTimeout(deps.db.raw('SELECT 1'), 3000).then(() => (checks.postgres = 'ok'), (e: Error) => failures.push(`postgres: ${e.message}`));
      await withTimeout(deps.temporal.connection.workflowService.getSystemInfo({}), 3000).then(
        () => (checks.temporal = 'ok'),
        (e: Error) => failures.push(`temporal: ${e.message}`),
      );
      if (query.worker && failures.length === 0) {
        // A full round trip: the API starts a workflow, a worker runs it and its activity queries PostgreSQL.
        const handle = await deps.temporal.workflow.start('systemCheckWorkflow', {
          taskQueue: temporalSettings().taskQueues.main,
          workflowId: `system-check-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`,
          workflowExecutionTimeout: '15s',
        });
        await withTimeout(handle.result() as Promise<SystemCheckResult>, 10_000).then(
          (result) => (checks.worker = result.workerIdentity),
          (e: Error) => failures.push(`worker: ${e.message}`),
        );
      }
      if (failures.length) throw new UnavailableError('not_ready', `Not ready: ${failures.join('; ')}`, { checks });
      return { body: { status: 'ready', checks } };
    },
  }),
];
