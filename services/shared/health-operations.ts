import type { OperationContext } from '../operations/context';
import { defineOperation, Reply, RequestInput } from '../operations/operation';
import { UnavailableError } from '../../core/errors';
import { logger } from '../../core/logger';
import { withTimeout } from './worker-round-trips';

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
      await deps.workerRoundTrips.check(deps.temporal).then(() => (checks.worker = 'ok'), fail('worker'));
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
