import type { OperationContext } from '../operations/context';
import { defineOperation, Reply, RequestInput } from '../operations/operation';
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
let lastWorkerCheck: { at: number; result: Promise<void> } | undefined;

function workerRoundTrip(deps: { temporal: import('@temporalio/client').Client }): Promise<void> {
  if (lastWorkerCheck && Date.now() - lastWorkerCheck.at < WORKER_CHECK_INTERVAL_MS) return lastWorkerCheck.result;
  const result = (async () => {
    // The API starts a workflow, a worker runs it and its activity queries PostgreSQL.
    const handle = await deps.temporal.workflow.start('systemCheckWorkflow', {
      taskQueue: temporalSettings().taskQueues.main,
      workflowId: `system-check-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`,
      workflowExecutionTimeout: '15s',
    });
    const { workerIdentity } = await withTimeout(handle.result() as Promise<SystemCheckResult>, 10_000);
    // Which worker answered (its pid and host) is for the operator's log, not for anyone who asks.
    logger.debug({ workerIdentity }, 'readiness worker round trip');
  })();
  lastWorkerCheck = { at: Date.now(), result };
  return result;
}

export const readinessOperation = defineOperation({
  name: 'readiness',
  summary: 'Readiness: PostgreSQL and Temporal reachable; with ?worker=true also a worker round trip',
  access: { public: 'probed by orchestrators without credentials' },
  effect: 'read',
  input: { query: { type: 'object', additionalProperties: false, properties: { worker: { type: 'boolean', default: false } } } },
  async run({ deps }: OperationContext, { query }: RequestInput<Record<string, string>, { worker?: boolean }, undefined>): Promise<Reply> {
    const checks: Record<string, string> = {};
    const failures: string[] = [];
    // Details go to the log; the public answer says ok or names the failing dependency, and
    // nothing about a process or host (the probe takes no credential).
    const fail = (name: string) => (error: Error) => {
      failures.push(name);
      logger.warn({ dependency: name, err: error.message }, 'readiness check failed');
    };
    await withTimeout(deps.db.raw('SELECT 1'), 3000).then(() => (checks.postgres = 'ok'), fail('postgres'));
    await withTimeout(deps.temporal.connection.workflowService.getSystemInfo({}), 3000).then(() => (checks.temporal = 'ok'), fail('temporal'));
    if (query.worker && failures.length === 0) {
      await workerRoundTrip(deps).then(() => (checks.worker = 'ok'), fail('worker'));
    }
    if (failures.length) throw new UnavailableError('not_ready', `Not ready: ${failures.join(', ')} unreachable.`, { checks });
    return { body: { status: 'ready', checks } };
  },
});

/** What a live process answers, through the route or the probe answered before the middleware (api/app.ts). */
export const LIVENESS = { status: 'ok' } as const;

export const livenessOperation = defineOperation({
  name: 'liveness',
  summary: 'Liveness: the process is serving',
  access: { public: 'probed by orchestrators without credentials' },
  effect: 'read',
  async run(_ctx: OperationContext, _input: RequestInput): Promise<Reply> {
    return { body: LIVENESS };
  },
});

export const healthOperations = [
  readinessOperation,
  livenessOperation,
];

/**
 * A static page or asset (the API description, the docs page, the SPARQL editor and its code): no
 * data and no key. The route renders it; the operation states that it is public, and why.
 */
export const staticContentOperation = defineOperation({
  name: 'staticContent',
  summary: 'A static page or asset.',
  access: { public: 'Static pages and their code hold no data; the queries a page sends carry the key the user pastes.' },
  effect: 'read',
  run: async (_ctx: OperationContext, input: { render: () => Reply }): Promise<Reply> => input.render(),
});

export const publicOperations = [...healthOperations, staticContentOperation];
