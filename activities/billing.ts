import type { ServiceDependencies } from '../services/operations/context';
import { reconcileInvoices, reportUsage } from '../services/usage/billing';
import { asActivity } from './as-activity';

export function createBillingActivities(deps: ServiceDependencies) {
  return {
    reportUsage: () => asActivity(() => reportUsage(deps)),
    reconcileInvoices: () => asActivity(() => reconcileInvoices(deps)),
  };
}

export type BillingActivities = ReturnType<typeof createBillingActivities>;
