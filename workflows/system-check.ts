import { proxyActivities } from '@temporalio/workflow';
import type { SystemActivities, SystemCheckResult } from '../activities/system-check';

export type { SystemCheckResult };

const { probeDatabase } = proxyActivities<SystemActivities>({
  startToCloseTimeout: '20 seconds',
  retry: { maximumAttempts: 3 },
});

export interface SystemCheckInput {
  /**
   * Keep the database probe busy this long (at most 10 s): lets an operator confirm that a
   * draining worker finishes in-flight activities before it exits.
   */
  holdMs?: number;
}

/** A round trip through a worker and PostgreSQL: proves a worker polls the queue and can reach the database. */
export async function systemCheckWorkflow(input: SystemCheckInput = {}): Promise<SystemCheckResult> {
  return probeDatabase({ holdMs: Math.min(Math.max(input.holdMs ?? 0, 0), 10_000) });
}
