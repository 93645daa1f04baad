import { randomUUID } from 'node:crypto';
import Decimal from 'decimal.js';
import { snakeCaseMappers } from 'objection';
import type { Clock } from '../../core/clock';
import type { Db, Executor } from '../../db/connection';
import type { DefinitionCache } from '../shared/definition-cache';
import { afterCommit } from '../../db/after-commit';
import { MeteredKind, MeteredOperation } from '../../db/models';
import { meteredAmount, meteredOperations } from '../../observability/metrics';
import { AlertChecks, raiseAlerts } from './alerts';
import { ChargeLeaseOptions, ChargeLeases, expireChargeLeases, InsertedOperation } from './charge-leases';
import { ChargeRow, insertCharges } from './charge-rows';
import { leaseTerms } from './credit';
import { RATES } from './plans';

// Usage metering (SPEC 2.7, 4.2): every billable operation is recorded once, priced at the
// plan's rates with exact decimals (decimal.js in code, numeric in PostgreSQL), summed without
// floating point; credit.ts checks the sum against the plan's included credit.

/** Raw rows come back with column names; models use properties. */
const columnsToProperties = snakeCaseMappers();

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
class PricedCharges {
  private static readonly KEPT = 1024;
  private readonly kept = new Map<string, Priced>();

  of(kind: MeteredKind, quantities: Record<string, number>): Priced {
    const key = `${kind}${JSON.stringify(quantities)}`;
    const kept = this.kept.get(key);
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
    if (this.kept.size >= PricedCharges.KEPT) this.kept.clear();
    this.kept.set(key, result);
    return result;
  }
}

/** How many statements one runtime keeps in flight, and how many charges one statement carries at most. */
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

/**
 * The metering of one runtime: its priced charges, the batcher of charges made on their own, its
 * charge leases (charge-leases.ts) and the alert checks its charges start. The runtime builds it
 * (scripts/runtime.ts, workerDependencies) with its pool and clock and closes it before destroying
 * the pool; services reach it through ctx.deps.metering, so two runtimes in one process share no
 * queued charge, lease or check.
 */
export class Metering {
  private readonly prices = new PricedCharges();
  private readonly batcher: ChargeBatcher;
  private readonly alerts: AlertChecks;
  /** Built on the first charge made on its own: a runtime that never meters holds no timer. */
  private heldLeases?: ChargeLeases;

  /** `definitions`: the runtime's cache, which answers a workspace's credit terms and alert settings. */
  constructor(private readonly db: Db, private readonly clock: Clock, private readonly definitions: DefinitionCache, private readonly leaseOptions: ChargeLeaseOptions = {}) {
    this.batcher = new ChargeBatcher(db);
    this.alerts = new AlertChecks(db, { clock, definitions });
  }

  /** This runtime's charge leases. */
  get leases(): ChargeLeases {
    return (this.heldLeases ??= new ChargeLeases(this.db, {
      leaseTerms: (db, workspaceId, kind) => leaseTerms(this.definitions, db, workspaceId, kind),
      inserted: (_db, operations) => this.afterInserted(operations),
    }, this.clock, this.definitions, this.leaseOptions));
  }

  /**
   * Records one metered operation with its charges, in the caller's transaction when it has one
   * (so the work and its metering commit together). A reference already metered is a no-op.
   * Returns the operation, or undefined when it was metered before. Outside a transaction, a
   * charge its workspace's charge lease covers resolves at once, before its row is written: its
   * operation is the one the next flush writes (unless that finds the reference metered before);
   * reads of usage wait for that flush (settled()). Outside a transaction the charge goes through
   * this runtime's pool, whatever executor is passed.
   */
  async meter(db: Executor, input: MeterInput): Promise<MeteredOperation | undefined> {
    return (await this.record(db, input, true)) as MeteredOperation | undefined;
  }

  /**
   * meter() for a caller that needs only to know the charge is recorded (a query or read before it
   * answers): true, or false when the reference was metered before. A charge answered from a lease
   * builds no operation model (about 30 µs of a SPARQL request's path).
   */
  async charge(db: Executor, input: MeterInput): Promise<boolean> {
    return Boolean(await this.record(db, input, false));
  }

  /**
   * The charge of one caller's records read (the records route, term reads, shape checks, pipeline
   * previews): one request and the records it read, whatever door or operation read them.
   */
  chargeRecordsRead(db: Executor, read: { workspaceId: string; projectId?: string | null; actor: MeterInput['actor']; records: number }): Promise<boolean> {
    return this.charge(db, { workspaceId: read.workspaceId, projectId: read.projectId, kind: 'records_read', ref: randomUUID(), actor: read.actor, quantities: { request: 1, record: read.records } });
  }

  private async record(db: Executor, input: MeterInput, asOperation: boolean): Promise<MeteredOperation | boolean | undefined> {
    const { amount, amountText, charges } = this.prices.of(input.kind, input.quantities);
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
      await raiseAlerts({ clock: this.clock, definitions: this.definitions }, db, input.workspaceId);
      return MeteredOperation.fromDatabaseJson(columnsToProperties.parse(inserted));
    }
    const leases = this.leases;
    const answered = leases.answer(row, amount);
    const leased = answered instanceof Promise ? await answered : answered;
    if (leased === 'duplicate') return undefined;
    if (leased) {
      if (!asOperation) return true;
      const { id, workspace_id, project_id, kind, operation_ref, parent_operation_id, actor_member_id, api_key_id, quantities } = leased;
      const operation = { id, workspace_id, project_id, kind, operation_ref, parent_operation_id, actor_member_id, api_key_id, quantities, amount: leased.amount, reported_at: null, created_at: new Date() };
      return MeteredOperation.fromDatabaseJson(columnsToProperties.parse(operation));
    }
    const inserted = await this.batcher.insert(row).finally(() => leases.written(row));
    if (!inserted) return undefined;
    counted([row]);
    this.alerts.soon(input.workspaceId);
    return MeteredOperation.fromDatabaseJson(columnsToProperties.parse(inserted));
  }

  /** Counts written operations and checks their workspaces' alerts soon. */
  private afterInserted(operations: InsertedOperation[], remainders = false): void {
    counted(operations, remainders);
    for (const workspaceId of new Set(operations.map((operation) => operation.workspace_id))) this.alerts.soon(workspaceId);
  }

  /**
   * Withdraws the charge of a request that failed after it was metered (metering ran beside the
   * work): one still queued from a charge lease leaves the queue (its amount goes back to the
   * lease), one written is deleted.
   */
  async withdraw(db: Executor, workspaceId: string, kind: MeteredKind, ref: string): Promise<void> {
    if (await this.heldLeases?.withdraw(workspaceId, kind, ref)) return;
    await db.raw('DELETE FROM metered_operations WHERE workspace_id = ? AND kind = ? AND operation_ref = ? AND reported_at IS NULL', [workspaceId, kind, ref]);
  }

  /** Whether this runtime answered the charge from a lease and has not yet finished writing it. */
  async leaseCovers(workspaceId: string, kind: MeteredKind, ref: string): Promise<boolean> {
    return (await this.heldLeases?.covers(workspaceId, kind, ref)) ?? false;
  }

  /** Waits until this runtime's charges of the workspace are written and their alerts checked: a read of its usage sees them. */
  async settled(workspaceId: string): Promise<void> {
    await this.heldLeases?.settle(workspaceId);
    await this.alerts.settled(workspaceId);
  }

  /**
   * The housekeeping sweep of every process (scripts/runtime.ts): bills the remainder of each charge
   * lease whose holder stopped renewing it (charge-leases.ts, expireChargeLeases).
   */
  async billExpiredChargeLeases(): Promise<number> {
    const operations = await expireChargeLeases(this.db, this.clock);
    this.afterInserted(operations, true);
    return operations.length;
  }

  /**
   * Writes this runtime's leased charges and returns its leases, then waits for the alert checks
   * that charges started: call before destroying the pool, so no check meets a destroyed one.
   */
  async close(): Promise<void> {
    await this.heldLeases?.close();
    await this.alerts.close();
  }
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
