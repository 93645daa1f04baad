import { defineRoute } from '../route-spec';
import { UnavailableError } from '../../core/errors';
import { temporalSettings } from '../../core/temporal-config';
import { logger } from '../../core/logger';
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

/**
 * The worker round trip starts a workflow, so unauthenticated callers share one result per
 * interval instead of each starting their own.
 */
const WORKER_CHECK_INTERVAL_MS = 10_000;
let lastWorkerCheck: { at: number; result: Promise<string> } | undefined;

function workerRoundTrip(deps: { temporal: import('@temporalio/client').Client }): Promise<string> {
  if (lastWorkerCheck && Date.now() - lastWorkerCheck.at < WORKER_CHECK_INTERVAL_MS) return lastWorkerCheck.result;
  const result = (async () => {
    // The API starts a workflow, a worker runs it and its activity queries PostgreSQL.
    const handle = await deps.temporal.workflow.start('systemCheckWorkflow', {
      taskQueue: temporalSettings().taskQueues.main,
      workflowId: `system-check-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`,
      workflowExecutionTimeout: '15s',
    });
    return (await withTimeout(handle.result() as Promise<SystemCheckResult>, 10_000)).workerIdentity;
  })();
  lastWorkerCheck = { at: Date.now(), result };
  return result;
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
      // Details go to the log; the public answer names only the failing dependency.
      const fail = (name: string) => (error: Error) => {
        failures.push(name);
        logger.warn({ dependency: name, err: error.message }, 'readiness check failed');
      };
      await withTimeout(deps.db.raw('SELECT 1'), 3000).then(() => (checks.postgres = 'ok'), fail('postgres'));
      await withTimeout(deps.temporal.connection.workflowService.getSystemInfo({}), 3000).then(() => (checks.temporal = 'ok'), fail('temporal'));
      if (query.worker && failures.length === 0) {
        await workerRoundTrip(deps).then((identity) => (checks.worker = identity), fail('worker'));
      }
      if (failures.length) throw new UnavailableError('not_ready', `Not ready: ${failures.join(', ')} unreachable.`, { checks });
      return { body: { status: 'ready', checks } };
    },
  }),
];
