import Decimal from 'decimal.js';
import { PaymentRequiredError } from '../../core/errors';
import type { Db, Executor } from '../../db/connection';
import { MeteredKind, Workspace } from '../../db/models';
import type { ServiceDependencies } from '../operations/context';
import type { DefinitionCache } from '../shared/definition-cache';
import type { LeaseTerms } from './charge-leases';
import { billingPeriod, creditLimited, creditPauses, CreditTerms, planOf } from './plans';

// Credit (SPEC 2.7): a plan's included credit per billing month, spent by the charges metered
// (metering.ts) and held by charge leases; once spent, a credit-limited plan without overage pauses
// new paid work.

/** The workspace's plan and credit-limit setting, from the definition cache outside transactions. */
export async function creditTermsOf(definitions: DefinitionCache, db: Executor, workspaceId: string): Promise<CreditTerms> {
  const read = async (): Promise<CreditTerms> => {
    const workspace = await Workspace.query(db).findById(workspaceId).select('plan', 'creditLimit');
    return { plan: workspace?.plan ?? 'free', creditLimit: workspace?.creditLimit ?? null };
  };
  return db.isTransaction ? read() : definitions.get(workspaceId, 'credit-terms', read);
}

/** What a workspace's plan says of a charge lease of one kind (charge-leases.ts): the credit that bounds it. */
export async function leaseTerms(definitions: DefinitionCache, db: Db, workspaceId: string, kind: MeteredKind): Promise<LeaseTerms> {
  const terms = await creditTermsOf(definitions, db, workspaceId);
  const plan = planOf(terms.plan);
  return { bound: creditPauses(terms, kind) ? plan.includedCredit : null, pausesPaidWork: creditLimited(terms) && !plan.overage };
}

/**
 * The exact total of a workspace's charges in [from, to), as a Decimal; with `leased`, plus what
 * its charge leases hold (answered or answerable without a round trip, so spent as far as credit
 * is concerned), read in the same statement as the charges.
 */
export async function spend(db: Executor, workspaceId: string, from: Date, to: Date, options: { excluding?: { kind: MeteredKind; ref: string }; leased?: boolean } = {}): Promise<Decimal> {
  const { excluding, leased } = options;
  const charged = `SELECT coalesce(sum(amount), 0) FROM metered_operations WHERE workspace_id = ? AND created_at >= ? AND created_at < ?${excluding ? ' AND NOT (kind = ? AND operation_ref = ?)' : ''}`;
  const held = leased ? ' + (SELECT coalesce(sum(remaining), 0) FROM charge_leases WHERE workspace_id = ?)' : '';
  const bindings = [workspaceId, from, to, ...(excluding ? [excluding.kind, excluding.ref] : []), ...(leased ? [workspaceId] : [])];
  const { rows } = await db.raw<{ rows: Array<{ total: string }> }>(`SELECT (${charged})${held} AS total`, bindings);
  return new Decimal(rows[0].total);
}

/**
 * Refuses new paid work once the plan's included credit for this month is spent (402
 * usage_limit_reached). `chargingRef` names the work's own charge when it is written beside this
 * check: the credit is what was spent before it.
 */
export async function assertCredit(deps: Pick<ServiceDependencies, 'metering' | 'clock' | 'definitions'>, db: Executor, workspaceId: string, kind: MeteredKind, chargingRef?: string): Promise<void> {
  // A charge answered from a charge lease was paid from credit when the lease was granted.
  if (chargingRef && (await deps.metering.leaseCovers(workspaceId, kind, chargingRef))) return;
  const terms = await creditTermsOf(deps.definitions, db, workspaceId);
  if (!creditPauses(terms, kind)) return;
  const plan = planOf(terms.plan);
  const { period, from, to } = billingPeriod(deps.clock.now());
  const used = await spend(db, workspaceId, from, to, { excluding: chargingRef ? { kind, ref: chargingRef } : undefined, leased: true });
  if (used.gte(plan.includedCredit)) {
    throw new PaymentRequiredError('usage_limit_reached', `This workspace has used its ${plan.title} plan’s included credit for ${period} (${plan.includedCredit}); new paid work is paused until the next month or an upgrade. Raising request limits does not help; work already running finishes.`, {
      includedCredit: plan.includedCredit,
      used: used.toFixed(2),
    });
  }
}
