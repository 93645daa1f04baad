import Decimal from 'decimal.js';
import { raw } from 'objection';
import { InputError, NotFoundError } from '../../core/errors';
import { MeteredOperation, OperationCharge, Workspace } from '../../db/models';
import type { OperationContext } from '../operations/context';
import { PageRequest, pageOf } from '../shared/pagination';
import { spend } from './credit';
import { billingPeriod, creditLimited, planOf } from './plans';
import { presentCharge, presentOperation } from './presenters';

// The usage report (SPEC 4.2): what a workspace was charged, by kind and day, its billing month
// against its plan's credit, and each metered operation with its charges. Every read waits for
// the runtime's own charges of the workspace to be written first (Metering.settled).

const DAY = 86_400_000;
export const MAX_USAGE_DAYS = 366;

/** Inclusive UTC dates; default the last 30 days before `now`; at most 366 days. */
export function usageRange(from: string | undefined, to: string | undefined, now: number): { from: Date; to: Date } {
  const today = new Date(now);
  const end = to ? new Date(`${to}T00:00:00Z`) : new Date(Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), today.getUTCDate()));
  const start = from ? new Date(`${from}T00:00:00Z`) : new Date(end.getTime() - 29 * DAY);
  if (Number.isNaN(start.getTime()) || Number.isNaN(end.getTime())) throw new InputError('invalid_date', 'from and to are ISO dates (YYYY-MM-DD).');
  if (start > end) throw new InputError('invalid_range', 'from must not be after to.', [{ path: 'query:from', message: 'is after to' }]);
  const days = Math.round((end.getTime() - start.getTime()) / DAY) + 1;
  if (days > MAX_USAGE_DAYS) throw new InputError('range_too_long', `A usage range covers at most ${MAX_USAGE_DAYS} days; this one covers ${days}.`, [{ path: 'query:from', message: `range of ${days} days exceeds ${MAX_USAGE_DAYS}` }]);
  return { from: start, to: new Date(end.getTime() + DAY) };
}

export async function usageSummary(ctx: OperationContext, params: { from?: string; to?: string }) {
  const { db, principal, deps } = ctx;
  const { from, to } = usageRange(params.from, params.to, deps.clock.now());
  await deps.metering.settled(principal.workspaceId);
  // A crashed holder's lease remainder (`lease:<id>`, charge-leases.ts) counts in the amount, not as an operation of its kind.
  const rows = (await MeteredOperation.query(db)
    .where({ workspaceId: principal.workspaceId })
    .where('createdAt', '>=', from)
    .where('createdAt', '<', to)
    .select('kind', raw(`count(*) FILTER (WHERE operation_ref NOT LIKE 'lease:%') AS operations`))
    .sum('amount as amount')
    .groupBy('kind')) as unknown as Array<{ kind: string; operations: string; amount: string }>;
  const dayRows = (await MeteredOperation.query(db)
    .where({ workspaceId: principal.workspaceId })
    .where('createdAt', '>=', from)
    .where('createdAt', '<', to)
    .select(raw(`to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day`), 'kind', raw(`count(*) FILTER (WHERE operation_ref NOT LIKE 'lease:%') AS operations`))
    .sum('amount as amount')
    .groupByRaw('1, 2')
    .orderByRaw('1, 2')) as unknown as Array<{ day: string; kind: string; operations: string; amount: string }>;
  const total = rows.reduce((sum, r) => sum.plus(r.amount), new Decimal(0));
  // Every day of the range, in order, with the kinds used that day (the console's chart and table).
  const byDay = new Map<string, Array<{ kind: string; operations: number; amount: string }>>();
  for (let day = from.getTime(); day < to.getTime(); day += DAY) byDay.set(new Date(day).toISOString().slice(0, 10), []);
  for (const r of dayRows) byDay.get(r.day)?.push({ kind: r.kind, operations: Number(r.operations), amount: new Decimal(r.amount).toFixed() });
  return {
    from: from.toISOString().slice(0, 10),
    to: new Date(to.getTime() - DAY).toISOString().slice(0, 10),
    currency: 'USD',
    total: total.toFixed(2),
    totalExact: total.toFixed(),
    byKind: rows.map((r) => ({ kind: r.kind, operations: Number(r.operations), amount: new Decimal(r.amount).toFixed() })),
    daily: [...byDay].map(([date, byKind]) => ({ date, byKind })),
  };
}

export async function billingMonth(ctx: OperationContext) {
  const { db, principal, deps } = ctx;
  const workspace = (await Workspace.query(db).findById(principal.workspaceId))!;
  const plan = planOf(workspace.plan);
  const limited = creditLimited(workspace);
  const { period, from, to } = billingPeriod(deps.clock.now());
  await deps.metering.settled(principal.workspaceId);
  // Used is what was charged; paid work pauses as assertCredit says, counting outstanding charge leases too.
  const [used, usedOrLeased] = await Promise.all([false, true].map((leased) => spend(db, principal.workspaceId, from, to, { leased })));
  const credit = new Decimal(plan.includedCredit);
  return {
    period,
    plan: workspace.plan,
    // `none`: this installation meters but never pauses (self-hosted without Stripe, or set by the operator).
    creditLimit: limited ? 'plan' : 'none',
    currency: 'USD',
    includedCredit: credit.toFixed(2),
    used: used.toFixed(),
    remainingCredit: Decimal.max(credit.minus(used), 0).toFixed(),
    overage: plan.overage ? Decimal.max(used.minus(credit), 0).toFixed() : '0',
    paidWorkPaused: limited && !plan.overage && usedOrLeased.gte(credit),
  };
}

export async function listOperations(ctx: OperationContext, page: PageRequest, filter: { parentOperationId?: string }) {
  const { db, principal, deps } = ctx;
  await deps.metering.settled(principal.workspaceId);
  const base = MeteredOperation.query(db).where({ workspaceId: principal.workspaceId });
  if (filter.parentOperationId) base.where('parentOperationId', filter.parentOperationId);
  const { rows, pagination } = await pageOf(base, page, { column: 'createdAt', order: 'desc' });
  return { operations: rows.map(presentOperation), pagination };
}

export async function operationCharges(ctx: OperationContext, operationId: string) {
  const { db, principal, deps } = ctx;
  await deps.metering.settled(principal.workspaceId);
  const operation = await MeteredOperation.query(db).findOne({ id: operationId, workspaceId: principal.workspaceId });
  if (!operation) throw new NotFoundError('operation', 'No metered operation with this id in this workspace.');
  const charges = await OperationCharge.query(db).where({ operationId }).orderBy('item');
  return {
    operation: presentOperation(operation),
    charges: charges.map(presentCharge),
  };
}
