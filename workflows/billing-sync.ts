import { proxyActivities } from '@temporalio/workflow';
import type { BillingActivities } from '../activities/billing';

const { reportUsage, reconcileInvoices } = proxyActivities<BillingActivities>({
  startToCloseTimeout: '5 minutes',
  retry: { initialInterval: '10 seconds', maximumAttempts: 5 },
});

/**
 * One billing sync, started by the `weft-billing-sync-<task queue>` Temporal Schedule: reports unreported usage
 * to Stripe in batches, then reconciles invoices. Idempotent: each operation is one meter event
 * keyed by its id, and invoices are upserted by their Stripe id.
 */
export async function billingSyncWorkflow(): Promise<number> {
  let total = 0;
  for (let batch = 0; batch < 20; batch += 1) {
    const { reported } = await reportUsage();
    total += reported;
    if (reported === 0) break;
  }
  await reconcileInvoices();
  return total;
}
