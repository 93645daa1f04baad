import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import Decimal from 'decimal.js';
import { chargeLeaseMax, leaseIdleMs } from '../../core/config';
import type { Clock } from '../../core/clock';
import { logger } from '../../core/logger';
import type { Db, Executor } from '../../db/connection';
import type { MeteredKind } from '../../db/models';
import type { DefinitionCache } from '../shared/definition-cache';
import { chargeInput, chargeKey, ChargeRow, INSERT_CHARGES } from './charge-rows';
import { monthStart } from './plans';

// Charges answered without a round trip. A charge made outside a caller's transaction (a SPARQL
// query, a records read) is otherwise committed before its request answers. Once a workspace makes
// LEASE_AFTER charges of a kind within RATE_WINDOW_MS in this process, the process takes a charge
// lease (weft_take_charge_lease): a committed amount of about twice what it charged in the last
// SIZE_WINDOW_MS, at most WEFT_CHARGE_LEASE_MAX, that counts as spent wherever credit is checked
// and is granted only from the credit a credit-limited plan has left. Charges are then answered
// from it at once and queued here; a flush (FLUSH_AFTER_MS after the first queued charge, at
// FLUSH_AT queued, and when the process stops) writes them in one statement that also lowers the
// lease by what the batch carried and renews its expiry, so what is metered plus what is leased
// never drops below what was answered. A lease unused for WEFT_LEASE_IDLE_MS (leaseIdleMs) goes
// back (its last charges written, the row deleted in the same statement); one of a workspace whose
// plan pauses paid work when its credit is spent goes back after CREDIT_BOUND_IDLE_MS at most,
// since while it is held it counts as spent and may pause the workspace's other paid work. A
// crash leaves the row: past its expiry any process's sweep (expireChargeLeases) bills its
// remainder as one operation, `lease:<id>`, which paid for the answered charges whose rows were
// lost; the overcharge is at most the lease.
// A failing flush is tried again with backoff while the process runs, and meanwhile no lease is
// taken or topped up; a lease no flush went through for in its time to live answers no more (the
// sweep may have billed it, and then charges queued under it are not written: its remainder paid
// for them). A pool destroyed without closing the leases ends the trying: the leases' remainders
// pay for what was queued.
// A runtime holds one ChargeLeases (Metering.leases, metering.ts). Lease ages are read from the
// runtime's clock, and its database time (Clock.databaseTime) is what the statements renew and
// expire leases by, so a test's clock holds both still; timers stay real, and a test that moves
// its clock sweeps (sweep()) rather than waiting for them.

const LEASE_AFTER = 4;
const RATE_WINDOW_MS = 1000;
const SIZE_WINDOW_MS = 250;
const FLUSH_AFTER_MS = 200;
const FLUSH_AT = 256;
/** How often leases are looked over: idle ones handed back, lapsed ones dropped, renewals sent. */
const SWEEP_MS = 500;
/** The longest a lease of a workspace whose plan pauses paid work is kept unused. */
const CREDIT_BOUND_IDLE_MS = 1000;
/** A lease its holder has not renewed for this long is billed by the sweep; holders renew at every flush. */
export const CHARGE_LEASE_TTL_MS = 10_000;
/** A held lease is renewed by a flush at least this often, even with nothing to write. */
const RENEW_AFTER_MS = CHARGE_LEASE_TTL_MS / 3;
/** A failed flush is tried again after FLUSH_AFTER_MS, doubling per failure up to this. */
const MAX_RETRY_MS = 5000;
/** While flushes keep failing, the failure is logged again at most this often. */
const FAILURE_LOG_EVERY_MS = 60_000;

/** What a workspace's plan says of a lease of one kind. */
export interface LeaseTerms {
  /** The included credit that bounds the lease, or null when the plan never pauses this kind. */
  bound: string | null;
  /** Spent credit pauses some of the workspace's paid work: its leases, counted as spent, should not lie idle long. */
  pausesPaidWork: boolean;
}

export interface ChargeLeaseHooks {
  leaseTerms(db: Db, workspaceId: string, kind: MeteredKind): Promise<LeaseTerms>;
  /** Operations a flush inserted: counted, and their workspaces' alerts checked. */
  inserted(db: Db, operations: InsertedOperation[]): void;
}

export interface ChargeLeaseOptions {
  /** How long after the first queued charge a flush starts (tests hold charges queued with a long one). */
  flushAfterMs?: number;
}

export interface InsertedOperation {
  workspace_id: string;
  kind: MeteredKind;
  amount: string;
}

interface Lease {
  id: string;
  /** Granted and not yet answered from. */
  available: Decimal;
  lastUsedAt: number;
  /**
   * When it was granted or a flush statement last went through for it (renewing it). A top-up
   * renews it too but writes nothing: it does not count, so a lease whose charges cannot be written
   * lapses (answers no more) however it is topped up.
   */
  flushedAt: number;
  /** Below this the lease is topped up (half of what the stream wanted when last asked). */
  lowMark: Decimal;
  /**
   * Its workspace's plan pauses paid work when its credit is spent, and the lease counts as spent
   * (whatever its kind: a free plan's reads never pause, but their lease still counts): handed back
   * sooner when unused (CREDIT_BOUND_IDLE_MS).
   */
  againstCredit: boolean;
}

/** A workspace's charges of one kind in this process: their recent rate, and its lease. */
interface Stream {
  workspaceId: string;
  kind: MeteredKind;
  recent: Array<{ at: number; amount: Decimal }>;
  lease?: Lease;
  /** Its lease statement in flight (a new lease or more for the one held): one at a time. */
  taking?: Promise<void>;
  /** Its charges this process is committing one by one (answer() left them to the caller). */
  writing: number;
  /** No lease is asked for before this (the last ask was refused for want of credit, or failed). */
  notBefore: number;
}

interface Queued {
  row: ChargeRow & { lease_id: string };
  amount: Decimal;
  stream: Stream;
}

/** A leased charge's row as it will be written (its id given now), 'duplicate', or undefined: not leased. */
export type LeasedAnswer = (ChargeRow & { id: string; lease_id: string }) | 'duplicate' | undefined;

/** Drops the stream's charges older than the rate window (they are in time order). */
function trimRecent(stream: Stream, now: number): void {
  let old = 0;
  while (old < stream.recent.length && now - stream.recent[old].at >= RATE_WINDOW_MS) old += 1;
  if (old) stream.recent.splice(0, old);
}

/** The charge leases one runtime holds through its pool (module comment above). */
export class ChargeLeases {
  private readonly holder = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  private readonly streams = new Map<string, Stream>();
  /** Answered charges not yet sent, and those in the statement in flight, by chargeKey. */
  private readonly queue = new Map<string, Queued>();
  private inFlight = new Map<string, Queued>();
  /** Leases to delete with the next flush, with their workspaces. */
  private readonly returning = new Map<string, string>();
  /** Lease statements in flight (close waits for them, so no lease is taken after the last flush). */
  private readonly taking = new Set<Promise<void>>();
  /** Charges waiting for their stream's lease statement, by chargeKey. */
  private readonly waiting = new Map<string, Promise<LeasedAnswer>>();
  private flushing?: Promise<void>;
  private nextFlush?: Promise<void>;
  private flushTimer?: NodeJS.Timeout;
  private flushDue = 0;
  private closing = false;
  /** Flushes failed in a row; a retry waits longer after each (backoff), and none starts before retryAt (on the runtime's clock; the timer that tries it is real). */
  private failures = 0;
  private retryAt = 0;
  private failureLoggedAt = 0;
  private readonly idleSweep: NodeJS.Timeout;
  private readonly stopListening: () => void;
  private readonly flushAfterMs: number;

  constructor(private readonly db: Db, private readonly hooks: ChargeLeaseHooks, private readonly clock: Clock, definitions: DefinitionCache, options: ChargeLeaseOptions = {}) {
    this.flushAfterMs = options.flushAfterMs ?? FLUSH_AFTER_MS;
    this.idleSweep = setInterval(() => this.returnIdle(), SWEEP_MS);
    this.idleSweep.unref();
    // A change to a workspace (its plan or credit limit among others) returns its leases: the next
    // ones are granted under the terms as they are now.
    this.stopListening = definitions.onChange((workspaceId) => {
      for (const stream of this.streams.values()) if (workspaceId === undefined || stream.workspaceId === workspaceId) this.giveBack(stream);
    });
  }

  private now(): number {
    return this.clock.now();
  }

  /**
   * Answers a charge from its workspace's lease when it holds enough: queued to be written, and
   * 'duplicate' when the same reference is already queued. Synchronous, so a credit check that
   * runs beside the charge sees it covered. Undefined: the caller commits it itself, and calls
   * written() when that is done. A charge its lease cannot cover while a lease statement of its
   * workspace and kind is in flight waits for it (a promise of the answer): a lease is never
   * granted beside a charge of this process that it does not see, and a credit check waits too.
   */
  answer(row: ChargeRow, amount: Decimal, again = false): LeasedAnswer | Promise<LeasedAnswer> {
    const now = this.now();
    const stream = this.streamOf(row.workspace_id, row.kind);
    if (!again) stream.recent.push({ at: now, amount });
    // A lease no flush went through for in its time to live (the database failed them) may have been
    // billed by another process's sweep: it answers no more, and its charges take the direct path.
    if (stream.lease && this.lapsed(stream.lease, now)) this.giveBack(stream);
    const lease = this.closing ? undefined : stream.lease;
    if (!lease || lease.available.lt(amount)) {
      if (stream.taking && !again && !this.closing) return this.afterTake(stream, row, amount);
      stream.writing += 1;
      return undefined;
    }
    const key = chargeKey(row);
    if (this.queue.has(key) || this.inFlight.has(key)) return 'duplicate';
    lease.available = lease.available.minus(amount);
    lease.lastUsedAt = now;
    const queued = { ...row, id: randomUUID(), lease_id: lease.id };
    this.queue.set(key, { row: queued, amount, stream });
    this.flushIn(this.queue.size >= FLUSH_AT ? 0 : this.flushAfterMs);
    this.topUp(stream);
    return queued;
  }

  /**
   * A charge answer() left to the caller is committed (or failed). A workspace that has made
   * LEASE_AFTER of them within RATE_WINDOW_MS takes a lease now: after the commit, so a lease
   * bounded by credit counts them as spent.
   */
  written(row: ChargeRow): void {
    const stream = this.streams.get(`${row.workspace_id}\n${row.kind}`);
    if (!stream) return;
    stream.writing -= 1;
    if (this.closing) return;
    if (stream.lease) this.topUp(stream);
    else this.maybeLease(stream);
  }

  private afterTake(stream: Stream, row: ChargeRow, amount: Decimal): Promise<LeasedAnswer> {
    const key = chargeKey(row);
    const answered = stream.taking!.then(() => this.answer(row, amount, true));
    this.waiting.set(key, answered);
    void answered.finally(() => this.waiting.delete(key));
    return answered;
  }

  /** Whether this charge was answered from a lease and is queued or being written (once an answer it waits for is given). */
  async covers(workspaceId: string, kind: MeteredKind, ref: string): Promise<boolean> {
    const key = chargeKey({ workspace_id: workspaceId, kind, operation_ref: ref });
    await this.waiting.get(key);
    return this.queue.has(key) || this.inFlight.has(key);
  }

  /** Takes a queued charge back (its amount returns to its lease); false when it is not queued here (any write of it has finished). */
  async withdraw(workspaceId: string, kind: MeteredKind, ref: string): Promise<boolean> {
    const key = chargeKey({ workspace_id: workspaceId, kind, operation_ref: ref });
    for (;;) {
      const queued = this.queue.get(key);
      if (queued) {
        this.queue.delete(key);
        const lease = queued.stream.lease;
        if (lease?.id === queued.row.lease_id) lease.available = lease.available.plus(queued.amount);
        return true;
      }
      if (!this.inFlight.has(key)) return false;
      await this.flushing?.catch(() => undefined);
    }
  }

  /** Writes this process's queued charges of the workspace (a read of its usage sees them). */
  async settle(workspaceId: string): Promise<void> {
    const holds = (charges: Map<string, Queued>) => [...charges.values()].some((queued) => queued.row.workspace_id === workspaceId);
    if (holds(this.queue) || holds(this.inFlight)) await this.flush().catch(() => undefined);
  }

  private streamOf(workspaceId: string, kind: MeteredKind): Stream {
    const key = `${workspaceId}\n${kind}`;
    let stream = this.streams.get(key);
    if (!stream) this.streams.set(key, (stream = { workspaceId, kind, recent: [], writing: 0, notBefore: 0 }));
    return stream;
  }

  /** About twice what the stream charged in the last SIZE_WINDOW_MS (at least LEASE_AFTER of its largest recent charge), at most the setting. */
  private wanted(stream: Stream, now: number): Decimal {
    trimRecent(stream, now);
    const recent = stream.recent.filter((charge) => now - charge.at < SIZE_WINDOW_MS);
    const sum = recent.reduce((total, charge) => total.plus(charge.amount), new Decimal(0));
    const largest = stream.recent.reduce((max, charge) => Decimal.max(max, charge.amount), new Decimal(0));
    return Decimal.min(Decimal.max(sum.times(2), largest.times(LEASE_AFTER)), chargeLeaseMax());
  }

  /**
   * While flushes fail, no lease is taken or topped up (charges are committed one by one): what is
   * answered and not written stays within the leases held when the failure began.
   */
  private maybeLease(stream: Stream): void {
    const now = this.now();
    if (stream.taking || stream.lease || now < stream.notBefore || this.failures > 0) return;
    const want = this.wanted(stream, now);
    if (stream.recent.length < LEASE_AFTER || want.lte(0)) return;
    this.track(stream, this.take(stream, undefined, want));
  }

  /** Adds to a lease that has less than half of what the stream now wants. */
  private topUp(stream: Stream): void {
    const lease = stream.lease;
    const now = this.now();
    if (!lease || stream.taking || lease.available.gte(lease.lowMark) || now < stream.notBefore || this.failures > 0) return;
    const want = this.wanted(stream, now);
    lease.lowMark = want.dividedBy(2);
    if (lease.available.gte(lease.lowMark)) return;
    this.track(stream, this.take(stream, lease, want.minus(lease.available)));
  }

  private track(stream: Stream, take: Promise<void>): void {
    const taking = take.finally(() => {
      stream.taking = undefined;
      this.taking.delete(taking);
    });
    stream.taking = taking;
    this.taking.add(taking);
  }

  private async take(stream: Stream, lease: Lease | undefined, want: Decimal): Promise<void> {
    try {
      const { bound, pausesPaidWork } = await this.hooks.leaseTerms(this.db, stream.workspaceId, stream.kind);
      // Credit leased while this process's own charges are still being committed would not count
      // them: the last of them asks again.
      if (bound !== null && stream.writing > 0) return;
      const asked = this.now();
      const { rows } = await this.db.raw<{ rows: Array<{ outcome: 'granted' | 'no_credit' | 'gone'; lease_id: string | null; granted: string }> }>(
        'SELECT * FROM weft_take_charge_lease(?, ?, ?, ?, ?, ?, ?, ?, ?)',
        [lease?.id ?? null, stream.workspaceId, stream.kind, this.holder, want.toFixed(10), bound, monthStart(new Date(asked)), CHARGE_LEASE_TTL_MS, this.clock.databaseTime()],
      );
      const [{ outcome, lease_id: leaseId, granted }] = rows;
      if (outcome === 'gone' && stream.lease === lease) stream.lease = undefined;
      // Near the end of a credit-limited plan's credit: its charges are committed one by one (and
      // checked) for a while, without a lease statement each.
      if (outcome === 'no_credit') stream.notBefore = this.now() + RATE_WINDOW_MS;
      if (outcome !== 'granted') return;
      if (lease) {
        // Added to a lease still held here; one given back meanwhile was deleted, or will be with the next flush.
        lease.available = lease.available.plus(granted);
        return;
      }
      const taken: Lease = { id: leaseId!, available: new Decimal(granted), lowMark: want.dividedBy(2), lastUsedAt: this.now(), flushedAt: asked, againstCredit: pausesPaidWork };
      stream.lease = taken;
      if (this.closing) this.giveBack(stream);
    } catch (error) {
      stream.notBefore = this.now() + RATE_WINDOW_MS;
      logger.warn({ err: error, workspaceId: stream.workspaceId, kind: stream.kind }, 'a charge lease could not be taken; charges are committed one by one');
    }
  }

  /** The stream's lease goes back with the next flush (its queued charges are written first, in the same statement). */
  private giveBack(stream: Stream): void {
    const lease = stream.lease;
    if (!lease) return;
    stream.lease = undefined;
    this.returning.set(lease.id, stream.workspaceId);
    this.flushIn(0);
  }

  /**
   * Looks the leases over now, as the timer does every SWEEP_MS (idle ones handed back, lapsed ones
   * dropped, renewals sent), and waits for the flush that carries it out: a test that moves its
   * clock sweeps at the time it set instead of waiting for the timer.
   */
  async sweep(): Promise<void> {
    this.returnIdle();
    await this.flush();
  }

  private returnIdle(): void {
    const now = this.now();
    const idleMs = leaseIdleMs();
    for (const [key, stream] of this.streams) {
      const lease = stream.lease;
      if (lease && (now - lease.lastUsedAt >= (lease.againstCredit ? Math.min(idleMs, CREDIT_BOUND_IDLE_MS) : idleMs) || this.lapsed(lease, now))) this.giveBack(stream);
      trimRecent(stream, now);
      if (!stream.lease && !stream.taking && !stream.writing && stream.recent.length === 0 && now >= stream.notBefore) this.streams.delete(key);
    }
    if (this.renewalDue(now)) this.flushIn(0);
  }

  /**
   * A lease in use whose charges were all withdrawn (failed queries) is flushed with nothing to
   * write: it must still be renewed, or the sweep would bill it as a crashed holder's.
   */
  private renewalDue(now: number): boolean {
    for (const stream of this.streams.values()) if (stream.lease && now - stream.lease.flushedAt > RENEW_AFTER_MS) return true;
    return false;
  }

  /**
   * Whether no flush went through for the lease for its time to live: the sweep may have billed
   * it, and (were top-ups renewing it) its charges answered and not written would keep growing.
   */
  private lapsed(lease: Lease, now: number): boolean {
    return now - lease.flushedAt >= CHARGE_LEASE_TTL_MS;
  }

  /**
   * A flush in `ms` unless one is due sooner; after a failure, not before the backoff's retry
   * (a failure is logged by flush and tried again).
   */
  private flushIn(ms: number): void {
    ms = Math.max(ms, this.retryAt - this.now());
    if (this.flushTimer && (ms > 0 || this.flushDue === 0)) return;
    clearTimeout(this.flushTimer);
    this.flushDue = ms;
    this.flushTimer = setTimeout(() => void this.flush().catch(() => undefined), ms);
  }

  /**
   * Writes every queued charge and returns the leases given back, in one statement; one statement
   * at a time, so a lease's rows are written before its deletion. Resolves when the charges queued
   * now are written (or put back after a failure, to be tried again).
   */
  flush(): Promise<void> {
    if (this.flushing) return (this.nextFlush ??= this.flushing.catch(() => undefined).then(() => {
      this.nextFlush = undefined;
      return this.flush();
    }));
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    if (this.queue.size === 0 && this.returning.size === 0 && !this.renewalDue(this.now())) {
      // Nothing left that a failed flush held back (withdrawn, say): leases may be taken again.
      this.failures = 0;
      this.retryAt = 0;
      return Promise.resolve();
    }
    // Asked of a pool being destroyed, a connection would wait for the acquire timeout (a minute).
    if (poolDestroyed(this.db)) {
      this.abandon();
      return Promise.resolve();
    }
    this.inFlight = new Map(this.queue);
    this.queue.clear();
    const returned = new Map(this.returning);
    this.returning.clear();
    const sent = this.inFlight;
    this.flushing = this.writeEachWorkspaceIfNeeded([...sent.values()], returned)
      .then(({ failed, error }) => {
        if (failed.size === 0) {
          if (this.failures) logger.info({ failures: this.failures }, 'leased charges written again after failed flushes');
          this.failures = 0;
          this.retryAt = 0;
          return;
        }
        // Nothing of these workspaces was written: their charges wait for the next flush, and
        // their returned leases for it too.
        for (const [key, queued] of sent) if (failed.has(queued.row.workspace_id) && !this.queue.has(key)) this.queue.set(key, queued);
        for (const [id, workspaceId] of returned) if (failed.has(workspaceId)) this.returning.set(id, workspaceId);
        if (poolDestroyed(this.db)) this.abandon(error);
        else this.retryLater(error);
        throw error;
      })
      .finally(() => {
        this.inFlight = new Map();
        this.flushing = undefined;
      });
    return this.flushing;
  }

  /**
   * The database is failing (not gone): the charges stay queued, and the next try waits twice as
   * long as the last, up to MAX_RETRY_MS; logged at the first failure and then once a minute.
   */
  private retryLater(error: unknown): void {
    this.failures += 1;
    const delay = Math.min(FLUSH_AFTER_MS * 2 ** Math.min(this.failures - 1, 10), MAX_RETRY_MS);
    const now = this.now();
    if (this.failures === 1 || now - this.failureLoggedAt >= FAILURE_LOG_EVERY_MS) {
      this.failureLoggedAt = now;
      logger.error({ err: error, charges: this.queue.size, failures: this.failures }, 'leased charges could not be written; trying again while the process runs');
    }
    this.retryAt = now + delay;
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    this.flushIn(delay);
  }

  /**
   * The pool was destroyed before close(): nothing here can be written any more, so
   * this process stops trying (no timer keeps it alive). Its leases stay in the table and the
   * crash sweep bills their remainders, which pay for the charges still queued: none goes unbilled.
   */
  private abandon(error?: unknown): void {
    const leases = new Set([...this.queue.values()].map((queued) => queued.row.lease_id));
    for (const stream of this.streams.values()) if (stream.lease) leases.add(stream.lease.id);
    for (const id of this.returning.keys()) leases.add(id);
    logger.error(
      { ...(error === undefined ? {} : { err: error }), charges: this.queue.size, leases: [...leases] },
      'the database pool was destroyed before its charge leases were closed: leased charges not written are billed with their leases’ remainders by the crash sweep',
    );
    this.closing = true;
    clearInterval(this.idleSweep);
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    this.stopListening();
    this.queue.clear();
    this.returning.clear();
    for (const stream of this.streams.values()) stream.lease = undefined;
  }

  /**
   * Writes the batch in one statement. When that fails and the batch spans several workspaces,
   * each workspace is tried alone: a row-specific error of one workspace's charges must not keep
   * every other workspace's charges unwritten and their leases unrenewed (they would lapse, and
   * the sweep would bill their whole remainders). Answers the workspaces nothing was written for.
   */
  private async writeEachWorkspaceIfNeeded(batch: Queued[], returned: Map<string, string>): Promise<{ failed: Set<string>; error?: unknown }> {
    const workspaces = new Set([...batch.map((queued) => queued.row.workspace_id), ...returned.values()]);
    for (const stream of this.streams.values()) if (stream.lease) workspaces.add(stream.workspaceId);
    try {
      await this.write(batch, [...returned.keys()]);
      return { failed: new Set() };
    } catch (error) {
      if (workspaces.size < 2 || poolDestroyed(this.db)) return { failed: workspaces, error };
    }
    const failed = new Set<string>();
    let firstError: unknown;
    for (const workspaceId of workspaces) {
      const rows = batch.filter((queued) => queued.row.workspace_id === workspaceId);
      const leases = [...returned].filter(([, of]) => of === workspaceId).map(([id]) => id);
      try {
        await this.write(rows, leases, workspaceId);
      } catch (error) {
        failed.add(workspaceId);
        firstError ??= error;
      }
    }
    return { failed, error: firstError };
  }

  /** One flush statement: the batch, the returned leases, and every lease held here (of `workspaceId` only, when given) renewed. */
  private async write(batch: Queued[], returned: string[], workspaceId?: string): Promise<void> {
    // Every lease held here is renewed, and lowered by what this batch inserted of it.
    const held = new Set<string>();
    for (const stream of this.streams.values()) if (stream.lease && (workspaceId === undefined || stream.workspaceId === workspaceId)) held.add(stream.lease.id);
    for (const queued of batch) if (!returned.includes(queued.row.lease_id)) held.add(queued.row.lease_id);
    const sentAt = this.now();
    const written = await writeLeasedCharges(this.db, this.holder, this.clock.databaseTime(), { held: [...held], returned, rows: batch.map((queued) => queued.row) });
    const still = new Set(written.leases);
    for (const stream of this.streams.values()) {
      if (!stream.lease || !held.has(stream.lease.id)) continue;
      // A lease the sweep billed (this process could not renew it in time) answers no more; its
      // charges in this batch were paid for by its remainder and are not written.
      if (!still.has(stream.lease.id)) stream.lease = undefined;
      else stream.lease.flushedAt = sentAt;
    }
    const lost = batch.filter((queued) => !still.has(queued.row.lease_id)).length;
    if (lost) logger.warn({ charges: lost }, 'charges answered from a lease that expired before they were written are billed in its remainder');
    if (written.operations.length) this.hooks.inserted(this.db, written.operations);
  }

  /** Writes every queued charge and returns every lease (the process is stopping). */
  async close(): Promise<void> {
    this.closing = true;
    clearInterval(this.idleSweep);
    this.stopListening();
    while (this.taking.size) await Promise.all([...this.taking]);
    for (const stream of this.streams.values()) this.giveBack(stream);
    while (this.flushing || this.queue.size || this.returning.size) {
      try {
        await this.flush();
      } catch {
        // The leases expire and are billed by another process's sweep.
        break;
      }
    }
    clearTimeout(this.flushTimer);
  }
}

/** Whether the pool behind `db` was destroyed (knex drops it; tarn marks it while it drains). */
function poolDestroyed(db: Db): boolean {
  const pool = (db.client as { pool?: { destroyed?: boolean } }).pool;
  return !pool || pool.destroyed === true;
}

/**
 * The flush statement of a holder: deletes the `returned` leases, inserts the charges of those and
 * of the `held` leases still in the table (a charge of a lease the sweep billed is not inserted:
 * its remainder paid for it), and lowers each held lease by what the statement inserted of it, so
 * a batch sent again after a lost reply (inserting nothing the second time) does not lower it
 * twice, and renews it from `now` (a test clock's database time; null: the database's own).
 * Answers the leases still held or returned, and the operations inserted.
 */
export async function writeLeasedCharges(
  db: Executor,
  holder: string,
  now: Date | null,
  batch: { held: string[]; returned: string[]; rows: Array<ChargeRow & { lease_id: string }> },
): Promise<{ leases: string[]; operations: InsertedOperation[] }> {
  const { rows } = await db.raw<{ rows: Array<{ leases: string[]; operations: InsertedOperation[] }> }>(
    `WITH locked AS (
       SELECT id FROM charge_leases WHERE id IN (SELECT value::uuid FROM jsonb_array_elements_text(?::jsonb)) AND holder = ? FOR UPDATE
     ), returned AS (
       DELETE FROM charge_leases WHERE id IN (SELECT value::uuid FROM jsonb_array_elements_text(?::jsonb)) AND holder = ? RETURNING id
     ), kept AS (
       SELECT id FROM locked UNION ALL SELECT id FROM returned
     ), input AS (${chargeInput('WHERE i.lease_id IN (SELECT id FROM kept)')}), ${INSERT_CHARGES},
     held AS (
       UPDATE charge_leases l
          SET remaining = l.remaining - coalesce((SELECT sum(o.amount) FROM operations o WHERE o.id IN (SELECT i.id FROM input i WHERE i.lease_id = l.id)), 0),
              expires_at = coalesce(?::timestamptz, clock_timestamp()) + ? * interval '1 millisecond'
        WHERE l.id IN (SELECT id FROM locked)
       RETURNING l.id
     )
     SELECT (SELECT coalesce(json_agg(id), '[]') FROM (SELECT id FROM held UNION ALL SELECT id FROM returned) still) AS leases,
            (SELECT coalesce(json_agg(json_build_object('workspace_id', workspace_id, 'kind', kind, 'amount', amount)), '[]') FROM operations) AS operations`,
    [JSON.stringify(batch.held), holder, JSON.stringify(batch.returned), holder, JSON.stringify(batch.rows), now, CHARGE_LEASE_TTL_MS],
  );
  return rows[0];
}

/**
 * Bills every lease past its expiry (its holder stopped: a crash) as one operation of its kind
 * for its remainder, ref `lease:<id>`: the remainder paid for answered charges whose rows were
 * lost (usage summaries and metrics count it in amounts, not as an operation). Deleting the lease
 * and inserting its operation is one statement, so of two sweeps one bills it; a holder's flush
 * that renewed it first keeps it. Expiry is read at the clock's database time (null: the database's own).
 */
export async function expireChargeLeases(db: Executor, clock: Clock): Promise<InsertedOperation[]> {
  const { rows } = await db.raw<{ rows: InsertedOperation[] }>(
    `WITH stale AS (
       DELETE FROM charge_leases WHERE expires_at < coalesce(?::timestamptz, clock_timestamp()) RETURNING *
     ), operations AS (
       INSERT INTO metered_operations (workspace_id, kind, operation_ref, quantities, amount)
       SELECT workspace_id, kind, 'lease:' || id, jsonb_build_object('unaccountedRemainder', 1), remaining FROM stale WHERE remaining > 0
       ON CONFLICT (workspace_id, kind, operation_ref) DO NOTHING
       RETURNING *
     ), charges AS (
       INSERT INTO operation_charges (operation_id, item, quantity, unit_price, amount)
       SELECT id, 'unaccounted_remainder', 1, amount, amount FROM operations
     )
     SELECT workspace_id, kind, amount FROM operations`,
    [clock.databaseTime()],
  );
  return rows;
}
