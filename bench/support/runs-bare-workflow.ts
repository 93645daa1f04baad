/**
 * The runs bench's peer: a bare Temporal workflow doing what a one-page pipeline run does, in three
 * activities (read one page over HTTP, transform it, upsert it into a PostgreSQL table), with
 * nothing else: no run row, no turn taking, no staging. Registered on its own task queue by an
 * in-process worker of bench/runs.ts. Deterministic: it only calls activities.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { BareActivities } from './runs-bare-activities';

const { readPage, transform, upsertRows } = proxyActivities<BareActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 10 },
});

export async function bareRunWorkflow(input: { url: string; table: string }): Promise<number> {
  const records = await readPage(input.url);
  const rows = await transform(records);
  return upsertRows(input.table, rows);
}
