import { randomUUID } from 'node:crypto';
import Decimal from 'decimal.js';
import { CREDIT_LIMITS, CreditLimit, installationCreditLimit } from '../../core/config';
import { InputError, NotFoundError, PaymentRequiredError } from '../../core/errors';
import type { Db, Executor } from '../../db/connection';
import { logger } from '../../core/logger';
import { afterCommit } from '../../db/after-commit';
import { chargeLeases, ChargeLeaseHooks, closeChargeLeases, expireChargeLeases, InsertedOperation, leaseCovers, settleLeasedCharges, withdrawLeasedCharge } from './charge-leases';
import { ChargeRow, insertCharges } from './charge-rows';
import { meteredAmount, meteredOperations } from '../../observability/metrics';
import { definitionCache } from '../shared/definition-cache';
import { raw, snakeCaseMappers } from 'objection';
import { MeteredKind, MeteredOperation, OperationCharge, UsageAlertEvent, UsageAlertSettings, Workspace } from '../../db/models';
import { PageRequest, pageOf } from '../shared/pagination';
import type { OperationContext } from '../operations/context';

/** Raw rows come back with column names; models use properties. */
const columnsToProperties = snakeCaseMappers();

// Usage metering (SPEC 2.7, 4.2): every billable operation is recorded once, priced at the
// workspace plan's rates with exact decimals (decimal.js in code, numeric in PostgreSQL), summed
// without floating point, and checked against the plan's included credit.

/** Plans: included credit per billing month; without overage, exhausted credit pauses new paid work. */
export const PLANS: Record<string, { title: string; monthlyPrice: string; includedCredit: string; overage: boolean; freeReads: boolean }> = {
  free: { title: 'Free', monthlyPrice: '0.00', includedCredit: '5.00', overage: false, freeReads: true },
  team: { title: 'Team', monthlyPrice: '49.00', includedCredit: '100.00', overage: true, freeReads: true },
};

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

export interface MeterInput {
  workspaceId: string;
  projectId?: string | null;
  kind: MeteredKind;
  /** The operation's own id (run, action, execution, request): the same reference is metered once. */
  ref: string;
  parentOperationId?: string | null;
  actor?: { memberId?: string | null; apiKeyId?: string | null };
  /** Quantities per rate item of the kind, e.g. { run: 1, record: 1200 }. */
  quantities: Record<string, number>;
}

const monthOf = (date: Date) => date.toISOString().slice(0, 7);
const monthStart = (date: Date) => new Date(Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1));

/**
 * Records one metered operation with its charges, in the caller's transaction when it has one
 * (so the work and its metering commit together). A reference already metered is a no-op.
 * Returns the operation, or undefined when it was metered before. Outside a transaction, a charge
 * its workspace's charge lease covers (charge-leases.ts) resolves at once, before its row is
 * written: its operation is the one the next flush writes (unless that finds the reference
 * metered before); reads of usage through this module wait for that flush.
 */
export async function meter(db: Executor, input: MeterInput): Promise<MeteredOperation | undefined> {
  return (await record(db, input, true)) as MeteredOperation | undefined;
}

/**
 * meter() for a caller that needs only to know the charge is recorded (a query or read before it
 * answers): true, or false when the reference was metered before. A charge answered from a lease
 * builds no operation model (about 30 µs of a SPARQL request's path).
 */
export async function charge(db: Executor, input: MeterInput): Promise<boolean> {
  return Boolean(await record(db, input, false));
}

/**
 * The charge of one caller's records read (the records route, term reads, shape checks, pipeline
 * previews): one request and the records it read, whatever door or operation read them.
 */
export async function chargeRecordsRead(db: Executor, read: { workspaceId: string; projectId?: string | null; actor: MeterInput['actor']; records: number }): Promise<boolean> {
  return charge(db, { workspaceId: read.workspaceId, projectId: read.projectId, kind: 'records_read', ref: randomUUID(), actor: read.actor, quantities: { request: 1, record: read.records } });
}

interface Priced {
  amount: Decimal;
  amountText: string;
  charges: ChargeRow['charges'];
}

/**
 * Priced charges by kind and quantities. RATES is fixed, and most operations repeat the same
 * quantities (a query is `{ query: 1 }`): pricing them in decimals on every request showed in the
 * request path's profile. Bounded: cleared when full. Entries are frozen, as rows share them.
 */
const pricedCharges = new Map<string, Priced>();
const PRICED_CHARGES_KEPT = 1024;

function priced(kind: MeteredKind, quantities: Record<string, number>): Priced {
  const key = `${kind}${JSON.stringify(quantities)}`;
  const kept = pricedCharges.get(key);
  if (kept) return kept;
  const rates = RATES[kind];
  const charges = Object.entries(quantities)
    .filter(([item]) => item in rates)
    .map(([item, quantity]) => ({ item, quantity: new Decimal(quantity), unitPrice: new Decimal(rates[item]) }))
    .map((c) => ({ ...c, amount: c.quantity.times(c.unitPrice) }));
  const amount = charges.reduce((sum, c) => sum.plus(c.amount), new Decimal(0));
  const result: Priced = Object.freeze({
    amount,
    amountText: amount.toFixed(10),
    charges: Object.freeze(charges.map((c) => Object.freeze({ item: c.item, quantity: c.quantity.toFixed(6), unit_price: c.unitPrice.toFixed(10), amount: c.amount.toFixed(10) }))) as ChargeRow['charges'],
  });
  if (pricedCharges.size >= PRICED_CHARGES_KEPT) pricedCharges.clear();
  pricedCharges.set(key, result);
  return result;
}

async function record(db: Executor, input: MeterInput, asOperation: boolean): Promise<MeteredOperation | boolean | undefined> {
  const { amount, amountText, charges } = priced(input.kind, input.quantities);
  const row: ChargeRow = {
    workspace_id: input.workspaceId, project_id: input.projectId ?? null, kind: input.kind, operation_ref: input.ref, parent_operation_id: input.parentOperationId ?? null,
    // A member signed in to the console has no key: its principal's apiKeyId is empty, not an id.
    actor_member_id: input.actor?.memberId ?? null, api_key_id: input.actor?.apiKeyId || null, quantities: input.quantities, amount: amountText,
    charges,
  };
  // In a caller's transaction the charge and its alert are part of its unit of work. A charge
  // made on its own (a query, a read) is answered from its workspace's charge lease when it holds
  // one, else goes with the others that wait at the same time, in one statement and one commit;
  // its alert is checked after the request, off its critical path.
  if (db.isTransaction) {
    const [inserted] = await insertCharges(db, [row]);
    if (!inserted) return undefined;
    afterCommit(db, () => counted([row]));
    await raiseAlerts(db, input.workspaceId);
    return MeteredOperation.fromDatabaseJson(columnsToProperties.parse(inserted));
  }
  const leases = chargeLeases(db as Db, LEASE_HOOKS);
  const answered = leases.answer(row, amount);
  const leased = answered instanceof Promise ? await answered : answered;
  if (leased === 'duplicate') return undefined;
  if (leased) {
    if (!asOperation) return true;
    const { id, workspace_id, project_id, kind, operation_ref, parent_operation_id, actor_member_id, api_key_id, quantities } = leased;
    const operation = { id, workspace_id, project_id, kind, operation_ref, parent_operation_id, actor_member_id, api_key_id, quantities, amount: leased.amount, reported_at: null, created_at: new Date() };
    return MeteredOperation.fromDatabaseJson(columnsToProperties.parse(operation));
  }
  let batcher = chargeBatchers.get(db as Db);
  if (!batcher) chargeBatchers.set(db as Db, (batcher = new ChargeBatcher(db as Db)));
  const inserted = await batcher.insert(row).finally(() => leases.written(row));
  if (!inserted) return undefined;
  counted([row]);
  checkAlertsSoon(db as Db, input.workspaceId);
  return MeteredOperation.fromDatabaseJson(columnsToProperties.parse(inserted));
}

/**
 * The metrics of operations written. A lease's billed remainder (`lease:<id>`) is an amount, not an
 * operation anyone made: it adds to the amount only.
 */
function counted(operations: Array<Pick<InsertedOperation, 'kind' | 'amount'>>, remainders = false): void {
  for (const operation of operations) {
    if (!remainders) meteredOperations.inc({ kind: operation.kind });
    meteredAmount.inc({ kind: operation.kind }, Number(operation.amount));
  }
}

/** Counts written operations and checks their workspaces' alerts soon. */
function afterInserted(db: Db, operations: InsertedOperation[], remainders = false): void {
  counted(operations, remainders);
  for (const workspaceId of new Set(operations.map((operation) => operation.workspace_id))) checkAlertsSoon(db, workspaceId);
}

/** What charge leases ask of metering: the credit that bounds them, and what follows a write. */
export const LEASE_HOOKS: ChargeLeaseHooks = {
  async leaseTerms(db, workspaceId, kind) {
    const terms = await creditTermsOf(db, workspaceId);
    const plan = PLANS[terms.plan] ?? PLANS.free;
    return { bound: creditPauses(terms, kind) ? plan.includedCredit : null, pausesPaidWork: creditLimited(terms) && !plan.overage };
  },
  inserted: afterInserted,
};

/**
 * The housekeeping sweep of every process (scripts/runtime.ts): bills the remainder of each charge
 * lease whose holder stopped renewing it (charge-leases.ts, expireChargeLeases).
 */
export async function billExpiredChargeLeases(db: Db): Promise<number> {
  const operations = await expireChargeLeases(db);
  afterInserted(db, operations, true);
  return operations.length;
}

/** Waits until this process's charges of the workspace are written and their alerts checked: a read of its usage sees them. */
export async function settledCharges(workspaceId: string): Promise<void> {
  await settleLeasedCharges(workspaceId);
  await settledAlerts(workspaceId);
}

/**
 * Writes this process's leased charges and returns its leases, then waits for the alert checks
 * that charges started: call before destroying the pool, so no check meets a destroyed one.
 */
export async function closeMetering(db: Db): Promise<void> {
  await closeChargeLeases(db);
  while (alertChecks.size) await Promise.all([...alertChecks.values()].map((state) => state.running));
}

/** How many statements one process keeps in flight, and how many charges one statement carries at most. */
const CHARGE_BATCHES_IN_FLIGHT = 2;
const MAX_CHARGE_BATCH = 256;

/**
 * Charges that arrive while statements are in flight go together in the next one: a lone charge
 * goes at once, and under load one statement and one commit serve many requests. Each request
 * still waits for its own charge's commit, so a charge is committed or the request fails.
 */
class ChargeBatcher {
  private readonly waiting: Array<{ row: ChargeRow; resolve(inserted: Record<string, unknown> | undefined): void; reject(error: unknown): void }> = [];
  private inFlight = 0;

  constructor(private readonly db: Db) {}

  insert(row: ChargeRow): Promise<Record<string, unknown> | undefined> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ row, resolve, reject });
      this.send();
    });
  }

  private send(): void {
    if (this.inFlight >= CHARGE_BATCHES_IN_FLIGHT || this.waiting.length === 0) return;
    const batch = this.waiting.splice(0, MAX_CHARGE_BATCH);
    this.inFlight += 1;
    insertCharges(this.db, batch.map((waiting) => waiting.row))
      .then(
        (inserted): unknown => batch.forEach((waiting, i) => waiting.resolve(inserted[i])),
        // One bad charge must not fail the others that happened to share its statement: each alone.
        (error: unknown): unknown => (batch.length === 1
          ? batch[0].reject(error)
          : Promise.all(batch.map((waiting) => insertCharges(this.db, [waiting.row]).then(([inserted]) => waiting.resolve(inserted), waiting.reject)))),
      )
      .finally(() => {
        this.inFlight -= 1;
        this.send();
      });
  }
}

const chargeBatchers = new WeakMap<Db, ChargeBatcher>();

/**
 * Withdraws the charge of a request that failed after it was metered (metering ran beside the
 * work): one still queued from a charge lease leaves the queue (its amount goes back to the lease),
 * one written is deleted.
 */
export async function withdrawCharge(db: Executor, workspaceId: string, kind: MeteredKind, ref: string): Promise<void> {
  if (await withdrawLeasedCharge(workspaceId, kind, ref)) return;
  await db.raw('DELETE FROM metered_operations WHERE workspace_id = ? AND kind = ? AND operation_ref = ? AND reported_at IS NULL', [workspaceId, kind, ref]);
}

/**
 * Alert checks of charges committed on their own: at most one running and one waiting per
 * workspace, so a burst of charges is checked once or twice, not once per charge. A failure is
 * logged; the next charge checks again (events are per period and threshold, so a late check
 * records the same event).
 */
const alertChecks = new Map<string, { running: Promise<void>; again: boolean }>();

function checkAlertsSoon(db: Db, workspaceId: string): void {
  const pending = alertChecks.get(workspaceId);
  if (pending) {
    pending.again = true;
    return;
  }
  const state = { running: Promise.resolve(), again: false };
  const run = async (): Promise<void> => {
    do {
      state.again = false;
      await raiseAlerts(db, workspaceId).catch((error) => logger.error({ err: error, workspaceId }, 'usage alert check failed'));
    } while (state.again);
    alertChecks.delete(workspaceId);
  };
  alertChecks.set(workspaceId, state);
  state.running = run();
}

/** Waits for this process's alert checks of the workspace (a read of the alerts sees its own charges). */
async function settledAlerts(workspaceId: string): Promise<void> {
  await alertChecks.get(workspaceId)?.running;
}

/** The workspace's alert settings, from the definition cache outside transactions. */
function alertSettings(db: Executor, workspaceId: string): Promise<UsageAlertSettings | undefined> {
  const read = async () => UsageAlertSettings.query(db).findById(workspaceId);
  return db.isTransaction ? read() : definitionCache().get(db as Db, workspaceId, 'usage-alert-settings', read);
}

interface CreditTerms {
  plan: string;
  /** The workspace's own setting; null follows the installation's (installationCreditLimit). */
  creditLimit: CreditLimit | null;
}

/** The workspace's plan and credit-limit setting, from the definition cache outside transactions. */
async function creditTermsOf(db: Executor, workspaceId: string): Promise<CreditTerms> {
  const read = async (): Promise<CreditTerms> => {
    const workspace = await Workspace.query(db).findById(workspaceId).select('plan', 'creditLimit');
    return { plan: workspace?.plan ?? 'free', creditLimit: workspace?.creditLimit ?? null };
  };
  return db.isTransaction ? read() : definitionCache().get(db as Db, workspaceId, 'credit-terms', read);
}

/** Whether the plan's credit pauses this workspace's paid work: its own setting, else the installation's. */
const creditLimited = (terms: CreditTerms) => (terms.creditLimit ?? installationCreditLimit()) === 'plan';

/** Whether spent credit pauses this kind of work in the workspace (free reads and overage never pause). */
function creditPauses(terms: CreditTerms, kind: MeteredKind): boolean {
  const plan = PLANS[terms.plan] ?? PLANS.free;
  return creditLimited(terms) && !plan.overage && !(plan.freeReads && READS.includes(kind));
}

/**
 * The exact total of a workspace's charges in [from, to), as a Decimal; with `leased`, plus what
 * its charge leases hold (answered or answerable without a round trip, so spent as far as credit
 * is concerned), read in the same statement as the charges.
 */
async function spend(db: Executor, workspaceId: string, from: Date, to: Date, options: { excluding?: { kind: MeteredKind; ref: string }; leased?: boolean } = {}): Promise<Decimal> {
  const { excluding, leased } = options;
  const charged = `SELECT coalesce(sum(amount), 0) FROM metered_operations WHERE workspace_id = ? AND created_at >= ? AND created_at < ?${excluding ? ' AND NOT (kind = ? AND operation_ref = ?)' : ''}`;
  const held = leased ? ' + (SELECT coalesce(sum(remaining), 0) FROM charge_leases WHERE workspace_id = ?)' : '';
  const bindings = [workspaceId, from, to, ...(excluding ? [excluding.kind, excluding.ref] : []), ...(leased ? [workspaceId] : [])];
  const { rows } = await db.raw<{ rows: Array<{ total: string }> }>(`SELECT (${charged})${held} AS total`, bindings);
  return new Decimal(rows[0].total);
}

/** Crossing a threshold of the monthly budget records an alert event once per period; it never stops work. */
async function raiseAlerts(db: Executor, workspaceId: string): Promise<void> {
  const settings = await alertSettings(db, workspaceId);
  if (!settings?.monthlyBudget) return;
  const now = new Date();
  const total = await spend(db, workspaceId, monthStart(now), new Date(now.getTime() + 1000));
  const budget = new Decimal(settings.monthlyBudget);
  for (const threshold of settings.thresholds) {
    if (total.gte(budget.times(threshold).dividedBy(100))) {
      await UsageAlertEvent.query(db).insert({ workspaceId, period: monthOf(now), threshold, amount: total.toFixed(10) }).onConflict(['workspaceId', 'period', 'threshold']).ignore();
    }
  }
}

/**
 * Refuses new paid work once the plan's included credit for this month is spent (402
 * usage_limit_reached). `chargingRef` names the work's own charge when it is written beside this
 * check: the credit is what was spent before it.
 */
export async function assertCredit(db: Executor, workspaceId: string, kind: MeteredKind, chargingRef?: string): Promise<void> {
  // A charge answered from a charge lease was paid from credit when the lease was granted.
  if (chargingRef && (await leaseCovers(workspaceId, kind, chargingRef))) return;
  const terms = await creditTermsOf(db, workspaceId);
  if (!creditPauses(terms, kind)) return;
  const plan = PLANS[terms.plan] ?? PLANS.free;
  const now = new Date();
  const used = await spend(db, workspaceId, monthStart(now), new Date(now.getTime() + 1000), { excluding: chargingRef ? { kind, ref: chargingRef } : undefined, leased: true });
  if (used.gte(plan.includedCredit)) {
    throw new PaymentRequiredError('usage_limit_reached', `This workspace has used its ${plan.title} plan’s included credit for ${monthOf(now)} (${plan.includedCredit}); new paid work is paused until the next month or an upgrade. Raising request limits does not help; work already running finishes.`, {
      includedCredit: plan.includedCredit,
      used: used.toFixed(2),
    });
  }
}

const DAY = 86_400_000;
export const MAX_USAGE_DAYS = 366;

/** Inclusive UTC dates; default the last 30 days; at most 366 days. */
export function usageRange(from?: string, to?: string): { from: Date; to: Date } {
  const end = to ? new Date(`${to}T00:00:00Z`) : new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate()));
  const start = from ? new Date(`${from}T00:00:00Z`) : new Date(end.getTime() - 29 * DAY);
  if (Number.isNaN(start.getTime()) || Number.isNaN(end.getTime())) throw new InputError('invalid_date', 'from and to are ISO dates (YYYY-MM-DD).');
  if (start > end) throw new InputError('invalid_range', 'from must not be after to.', [{ path: 'query:from', message: 'is after to' }]);
  const days = Math.round((end.getTime() - start.getTime()) / DAY) + 1;
  if (days > MAX_USAGE_DAYS) throw new InputError('range_too_long', `A usage range covers at most ${MAX_USAGE_DAYS} days; this one covers ${days}.`, [{ path: 'query:from', message: `range of ${days} days exceeds ${MAX_USAGE_DAYS}` }]);
  return { from: start, to: new Date(end.getTime() + DAY) };
}

export async function usageSummary(ctx: OperationContext, params: { from?: string; to?: string }) {
  const { db, principal } = ctx;
  const { from, to } = usageRange(params.from, params.to);
  await settledCharges(principal.workspaceId);
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
  const { db, principal } = ctx;
  const workspace = (await Workspace.query(db).findById(principal.workspaceId))!;
  const plan = PLANS[workspace.plan] ?? PLANS.free;
  const limited = creditLimited(workspace);
  const now = new Date();
  await settledCharges(principal.workspaceId);
  // Used is what was charged; paid work pauses as assertCredit says, counting outstanding charge leases too.
  const [used, usedOrLeased] = await Promise.all([false, true].map((leased) => spend(db, principal.workspaceId, monthStart(now), new Date(now.getTime() + 1000), { leased })));
  const credit = new Decimal(plan.includedCredit);
  return {
    period: monthOf(now),
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

export function workspaceRates() {
  return { currency: 'USD', rates: Object.entries(RATES).map(([kind, items]) => ({ kind, items: Object.entries(items).map(([item, unitPrice]) => ({ item, unitPrice })) })) };
}

export function pricing() {
  return { currency: 'USD', plans: Object.entries(PLANS).map(([id, plan]) => ({ id, ...plan })), rates: workspaceRates().rates };
}

const presentOperation = (o: MeteredOperation) => ({
  id: o.id,
  kind: o.kind,
  operationRef: o.operationRef,
  projectId: o.projectId,
  parentOperationId: o.parentOperationId,
  actorMemberId: o.actorMemberId,
  apiKeyId: o.apiKeyId,
  quantities: o.quantities,
  amount: new Decimal(o.amount).toFixed(),
  reportedAt: o.reportedAt?.toISOString() ?? null,
  createdAt: o.createdAt.toISOString(),
});

export async function listOperations(ctx: OperationContext, page: PageRequest, filter: { parentOperationId?: string }) {
  const { db, principal } = ctx;
  await settledCharges(principal.workspaceId);
  const base = MeteredOperation.query(db).where({ workspaceId: principal.workspaceId });
  if (filter.parentOperationId) base.where('parentOperationId', filter.parentOperationId);
  const { rows, pagination } = await pageOf(base, page, { column: 'createdAt', order: 'desc' });
  return { operations: rows.map(presentOperation), pagination };
}

export async function operationCharges(ctx: OperationContext, operationId: string) {
  const { db, principal } = ctx;
  await settledCharges(principal.workspaceId);
  const operation = await MeteredOperation.query(db).findOne({ id: operationId, workspaceId: principal.workspaceId });
  if (!operation) throw new NotFoundError('operation', 'No metered operation with this id in this workspace.');
  const charges = await OperationCharge.query(db).where({ operationId }).orderBy('item');
  return {
    operation: presentOperation(operation),
    charges: charges.map((c) => ({ item: c.item, quantity: new Decimal(c.quantity).toFixed(), unitPrice: new Decimal(c.unitPrice).toFixed(), amount: new Decimal(c.amount).toFixed() })),
  };
}

export async function getAlerts(ctx: OperationContext) {
  const { db, principal } = ctx;
  await settledCharges(principal.workspaceId);
  const settings = await UsageAlertSettings.query(db).findById(principal.workspaceId);
  const events = await UsageAlertEvent.query(db).where({ workspaceId: principal.workspaceId }).orderBy('createdAt', 'desc').limit(50);
  return {
    monthlyBudget: settings?.monthlyBudget ? new Decimal(settings.monthlyBudget).toFixed() : null,
    thresholds: settings?.thresholds ?? [50, 80, 100],
    events: events.map((e) => ({ period: e.period, threshold: e.threshold, amount: new Decimal(e.amount).toFixed(), createdAt: e.createdAt.toISOString() })),
  };
}

export async function putAlerts(ctx: OperationContext, input: { monthlyBudget: string | null; thresholds: number[] }) {
  const { db, principal } = ctx;
  const fields = { monthlyBudget: input.monthlyBudget, thresholds: [...new Set(input.thresholds)].sort((a, b) => a - b), updatedAt: new Date() };
  await UsageAlertSettings.query(db).insert({ workspaceId: principal.workspaceId, ...fields }).onConflict('workspaceId').merge();
  return getAlerts(ctx);
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
  return { workspaceId: updated.id, plan: updated.plan, creditLimit: updated.creditLimit ?? 'default', pausesPaidWork: creditLimited(updated) && !(PLANS[updated.plan] ?? PLANS.free).overage };
}
