import type { ExecutionDependencies } from '../services/pipelines/run-execution';
import { reconcileInvoices, reportUsage } from '../services/usage/billing';
import { asActivity } from './as-activity';

export function createBillingActivities(deps: ExecutionDependencies) {
  return {
    reportUsage: () => asActivity(() => reportUsage(deps.db)),
    reconcileInvoices: () => asActivity(() => reconcileInvoices(deps.db)),
  };
}

export type BillingActivities = ReturnType<typeof createBillingActivities>;
