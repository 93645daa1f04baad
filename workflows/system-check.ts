import { proxyActivities } from '@temporalio/workflow';
import type { SystemActivities } from '../activities/system-check';

const { probeDatabase } = proxyActivities<SystemActivities>({
  startToCloseTimeout: '10 seconds',
  retry: { maximumAttempts: 3 },
});

export interface SystemCheckResult {
  databaseTime: string;
  workerIdentity: string;
}

/** A round trip through a worker and PostgreSQL: proves a worker polls the queue and can reach the database. */
export async function systemCheckWorkflow(): Promise<SystemCheckResult> {
  return probeDatabase();
}
