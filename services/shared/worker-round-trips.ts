import type { Client } from '@temporalio/client';
import type { Clock } from '../../core/clock';
import { logger } from '../../core/logger';
import { temporalSettings } from '../../core/temporal-config';
import type { SystemCheckResult } from '../../workflows/system-check';

/** `work`, or a rejection once `ms` have passed. */
export async function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
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

const WORKER_CHECK_INTERVAL_MS = 10_000;

/**
 * The worker round trip starts a workflow, so unauthenticated callers share one result per
 * interval instead of each starting their own. One runtime's last round trip, on its clock: the
 * runtime builds it (runtimeState: ServiceDependencies.workerRoundTrips).
 */
export class WorkerRoundTrips {
  private last?: { at: number; result: Promise<void> };

  constructor(private readonly clock: Clock) {}

  /** The round trip through `temporal` started within the interval, or a new one. */
  check(temporal: Client): Promise<void> {
    if (this.last && this.clock.now() - this.last.at < WORKER_CHECK_INTERVAL_MS) return this.last.result;
    const result = (async () => {
      // The API starts a workflow, a worker runs it and its activity queries PostgreSQL.
      const handle = await temporal.workflow.start('systemCheckWorkflow', {
        taskQueue: temporalSettings().taskQueues.main,
        workflowId: `system-check-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`,
        workflowExecutionTimeout: '15s',
      });
      const { workerIdentity } = await withTimeout(handle.result() as Promise<SystemCheckResult>, 10_000);
      // Which worker answered (its pid and host) is for the operator's log, not for anyone who asks.
      logger.debug({ workerIdentity }, 'readiness worker round trip');
    })();
    this.last = { at: this.clock.now(), result };
    return result;
  }
}
