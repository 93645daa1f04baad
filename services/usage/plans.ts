import { CREDIT_LIMITS, CreditLimit, installationCreditLimit } from '../../core/config';
import { NotFoundError } from '../../core/errors';
import type { Executor } from '../../db/connection';
import { MeteredKind, Workspace } from '../../db/models';

// Plans and prices (SPEC 2.7, 4.2): what each plan includes per billing month and what each
// metered item costs, as exact decimal strings (decimal.js in code, numeric in PostgreSQL).

export interface Plan {
  title: string;
  monthlyPrice: string;
  includedCredit: string;
  overage: boolean;
  freeReads: boolean;
}

/** Plans: included credit per billing month; without overage, exhausted credit pauses new paid work. */
export const PLANS: Record<string, Plan> = {
  free: { title: 'Free', monthlyPrice: '0.00', includedCredit: '5.00', overage: false, freeReads: true },
  team: { title: 'Team', monthlyPrice: '49.00', includedCredit: '100.00', overage: true, freeReads: true },
};

/** A workspace's plan by its name; an unknown name is the free plan. */
export const planOf = (name: string): Plan => PLANS[name] ?? PLANS.free;

/** Unit prices per kind and item, as decimal strings (USD). */
export const RATES: Record<MeteredKind, Record<string, string>> = {
  records_read: { request: '0', record: '0.00001' },
  pipeline_run: { run: '0.01', record: '0.0001' },
  query_execution: { execution: '0.002', row: '0.00001' },
  sparql_query: { query: '0.002' },
  governed_write: { action: '0.005', row: '0.0001' },
};

/**
 * Whether a plan's included credit pauses new paid work (core/config.ts, installationCreditLimit):
 * WEFT_CREDIT_LIMIT sets the installation's default, and the operator can set a workspace apart
 * (workspaces.credit_limit, `admin plan set --credit-limit`).
 */
export { CREDIT_LIMITS, installationCreditLimit };
export type { CreditLimit };

/** Kinds that keep working when credit is exhausted, where the plan says reads stay free. */
const READS: MeteredKind[] = ['records_read'];

/** The billing month of a date (YYYY-MM, UTC), and its first instant. */
export const monthOf = (date: Date) => date.toISOString().slice(0, 7);
export const monthStart = (date: Date) => new Date(Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1));

/**
 * The billing month at `now` (a clock's time): its name and its bounds [from, to). Charges carry
 * the database's time, so the month is bounded by its end rather than by `now`: a clock a test
 * holds still still counts the charges made since.
 */
export function billingPeriod(now: number): { period: string; from: Date; to: Date } {
  const at = new Date(now);
  const from = monthStart(at);
  return { period: monthOf(at), from, to: new Date(Date.UTC(from.getUTCFullYear(), from.getUTCMonth() + 1, 1)) };
}

export interface CreditTerms {
  plan: string;
  /** The workspace's own setting; null follows the installation's (installationCreditLimit). */
  creditLimit: CreditLimit | null;
}

/** Whether the plan's credit pauses this workspace's paid work: its own setting, else the installation's. */
export const creditLimited = (terms: CreditTerms) => (terms.creditLimit ?? installationCreditLimit()) === 'plan';

/** Whether spent credit pauses this kind of work in the workspace (free reads and overage never pause). */
export function creditPauses(terms: CreditTerms, kind: MeteredKind): boolean {
  const plan = planOf(terms.plan);
  return creditLimited(terms) && !plan.overage && !(plan.freeReads && READS.includes(kind));
}

export function workspaceRates() {
  return { currency: 'USD', rates: Object.entries(RATES).map(([kind, items]) => ({ kind, items: Object.entries(items).map(([item, unitPrice]) => ({ item, unitPrice })) })) };
}

export function pricing() {
  return { currency: 'USD', plans: Object.entries(PLANS).map(([id, plan]) => ({ id, ...plan })), rates: workspaceRates().rates };
}

/**
 * The operator's setting of a workspace's plan and credit limit (`admin plan set`): for an
 * installation without Stripe, or a workspace the operator bills outside it. With Stripe, the
 * subscription webhooks set the plan again when a subscription changes; the credit limit stays.
 * `default` returns the credit limit to the installation's.
 */
export async function setWorkspacePlan(db: Executor, input: { workspaceId: string; plan?: string; creditLimit?: CreditLimit | 'default' }) {
  const workspace = await Workspace.query(db).findById(input.workspaceId).forUpdate();
  if (!workspace) throw new NotFoundError('workspace', `No workspace ${input.workspaceId}.`);
  const patch: Partial<Pick<Workspace, 'plan' | 'creditLimit'>> = {};
  if (input.plan !== undefined) patch.plan = input.plan;
  if (input.creditLimit !== undefined) patch.creditLimit = input.creditLimit === 'default' ? null : input.creditLimit;
  const updated = await workspace.$query(db).patchAndFetch(patch);
  return { workspaceId: updated.id, plan: updated.plan, creditLimit: updated.creditLimit ?? 'default', pausesPaidWork: creditLimited(updated) && !planOf(updated.plan).overage };
}
