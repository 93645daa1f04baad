import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import Decimal from 'decimal.js';
import { projectRoot } from '../../../core/paths';
import { createDb, Db } from '../../../db/connection';
import { CHARGE_LEASE_TTL_MS, writeLeasedCharges } from '../../../services/usage/charge-leases';
import type { ChargeRow } from '../../../services/usage/charge-rows';
import { DefinitionCache } from '../../../services/shared/definition-cache';
import { Metering } from '../../../services/usage/metering';
import { env } from '../../support/environment';
import { newWorkspace } from '../../support/fixtures';
import { until } from '../../support/polling';

// Charge leases when things go wrong (services/usage/charge-leases.ts): a flush whose reply was
// lost and is sent again, a holder whose renewals fail past the lease's time to live, a lease the
// sweep billed while its holder still had charges queued, and a pool destroyed without
// closing its leases. Time is driven through the holder's clock, never by waiting for it.

const leasesOf = (workspaceId: string) => env().db('charge_leases').where({ workspaceId });
const operationsOf = (workspaceId: string) => env().db('metered_operations').where({ workspaceId });
const sumOf = (rows: Array<{ amount: string }>) => rows.reduce((sum, row) => sum.plus(row.amount), new Decimal(0));

interface Holder {
  ws: string;
  /** What the holder's leases take for now: the test moves it. */
  clock: { now: number };
  db: Db;
  /** The holder's metering, on its pool and clock. */
  metering: Metering;
}

/** Runs `body` with a new workspace and a pool of the test's own, whose charge leases run on a clock the test moves and flush only when asked (settled) or retrying. */
async function withHolder(body: (holder: Holder) => Promise<void>): Promise<void> {
  const ws = (await newWorkspace()).workspaceId;
  const clock = { now: Date.now() };
  const db = createDb(process.env.DATABASE_URL!, { max: 4 });
  // The database keeps its own time (databaseTime null): only this process's view of the leases' ages moves.
  const holderClock = { now: () => clock.now, databaseTime: () => null };
  const definitions = new DefinitionCache(db, holderClock);
  const metering = new Metering(db, holderClock, definitions, { flushAfterMs: 3_600_000 });
  try {
    await body({ ws, clock, db, metering });
  } finally {
    await metering.close();
    await definitions.close();
    await db.destroy();
  }
}

/** The workspace's one lease, its expiry an hour away: however slow this machine, the API's own sweep (every 5 s) leaves it to the test. */
async function keptFromTheSweep(workspaceId: string): Promise<{ id: string; remaining: string }> {
  const [lease] = await leasesOf(workspaceId).update({ expiresAt: new Date(Date.now() + 3_600_000) }).returning('*');
  return lease;
}

/** Meters SPARQL charges through `db` until one is answered from a lease; returns every ref and the leased ones. */
async function chargeUntilLeased(metering: Metering, db: Db, workspaceId: string, leasedWanted = 1): Promise<{ refs: string[]; leased: string[] }> {
  const refs: string[] = [];
  const leased: string[] = [];
  for (let i = 0; i < 5000 && leased.length < leasedWanted; i += 1) {
    const ref = randomUUID();
    refs.push(ref);
    await metering.meter(db, { workspaceId, kind: 'sparql_query', ref, quantities: { query: 1 } });
    if (await metering.leaseCovers(workspaceId, 'sparql_query', ref)) leased.push(ref);
  }
  assert.equal(leased.length, leasedWanted, 'charges were answered from a lease');
  return { refs, leased };
}

/**
 * Makes every insert of the workspace's charges fail until the returned function is called: a
 * trigger in this test run's own database, on that workspace's rows only (a lease statement fails
 * as a whole; one taking or topping up a lease inserts no charge and still goes through).
 */
async function refuseChargesOf(workspaceId: string): Promise<() => Promise<void>> {
  const name = `refuse_charges_${workspaceId.replace(/-/g, '')}`;
  await env().db.raw(`CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'charges refused by the test'; END $$`);
  await env().db.raw(`CREATE TRIGGER ${name} BEFORE INSERT ON metered_operations FOR EACH ROW WHEN (NEW.workspace_id = '${workspaceId}') EXECUTE FUNCTION ${name}()`);
  return async () => {
    await env().db.raw(`DROP TRIGGER ${name} ON metered_operations`);
    await env().db.raw(`DROP FUNCTION ${name}()`);
  };
}

function chargeRow(workspaceId: string, leaseId: string): ChargeRow & { id: string; lease_id: string } {
  return {
    id: randomUUID(), lease_id: leaseId, workspace_id: workspaceId, project_id: null, kind: 'sparql_query', operation_ref: randomUUID(), parent_operation_id: null,
    actor_member_id: null, api_key_id: null, quantities: { query: 1 }, amount: '0.0020000000',
    charges: [{ item: 'query', quantity: '1.000000', unit_price: '0.0020000000', amount: '0.0020000000' }],
  };
}

describe('Charge leases when a flush, a renewal or the pool fails', function () {
  this.timeout(180_000);

  it('a batch sent twice through the flush statement (a lost reply, then the retry) lowers its lease once and inserts each charge once', async () => {
    const ws = (await newWorkspace()).workspaceId;
    const holder = `test:${process.pid}:${randomUUID().slice(0, 8)}`;
    const [lease] = await env().db('charge_leases').insert({ workspaceId: ws, kind: 'sparql_query', holder, remaining: '0.0500000000', expiresAt: new Date(Date.now() + 60_000) }).returning('*');
    const rows = Array.from({ length: 5 }, () => chargeRow(ws, lease.id));
    const batch = { held: [lease.id], returned: [], rows };
    const first = await writeLeasedCharges(env().db, holder, null, batch);
    assert.equal(first.operations.length, 5);
    const again = await writeLeasedCharges(env().db, holder, null, batch);
    assert.deepEqual(again.operations, [], 'the retry inserts nothing');
    assert.deepEqual(again.leases, [lease.id], 'and still renews the lease');

    const [after] = await leasesOf(ws);
    assert.equal(new Decimal(after.remaining).toFixed(), '0.04', 'lowered by the five charges once (0.05 - 5 × 0.002)');
    const stored = await operationsOf(ws);
    assert.deepEqual(stored.map((row: { id: string }) => row.id).sort(), rows.map((row) => row.id).sort(), 'each charge once, with the id it was answered with');
    const charges = await env().db('operation_charges').whereIn('operationId', rows.map((row) => row.id));
    assert.equal(charges.length, 5, 'one charge line per operation, none twice');
  });

  it('a holder whose lease went unrenewed for its time to live answers no more from it: the next charge is committed before its answer', () =>
    withHolder(async ({ ws, clock, db, metering }) => {
      const { refs } = await chargeUntilLeased(metering, db, ws);
      const lease = await keptFromTheSweep(ws);
      // Its time to live passes without a renewal (as when the database fails every flush);
      // the clock moves and the charge is made in one turn, before anything else could run.
      clock.now += CHARGE_LEASE_TTL_MS;
      const ref = randomUUID();
      const metered = metering.meter(db, { workspaceId: ws, kind: 'sparql_query', ref, quantities: { query: 1 } });
      assert.equal(await metering.leaseCovers(ws, 'sparql_query', ref), false, 'not answered from the lapsed lease');
      await metered;
      assert.equal((await operationsOf(ws).where({ operationRef: ref })).length, 1, 'committed before meter() answered');
      // The lapsed lease went back: its queued charges written once, its row deleted.
      await metering.settled(ws);
      assert.deepEqual(await env().db('charge_leases').where({ id: lease.id }), []);
      const stored = await operationsOf(ws);
      assert.equal(stored.length, refs.length + 1, 'every charge written once');
      assert.equal(sumOf(stored).toFixed(), new Decimal('0.002').times(refs.length + 1).toFixed());
    }));

  it('charges queued under a lease the sweep billed are not inserted again when their holder flushes: the workspace pays the lease, not lease + charges', () =>
    withHolder(async ({ ws, db, metering }) => {
      // Three charges answered from the lease and held in its holder's queue (its flush waits to be asked).
      const { refs, leased } = await chargeUntilLeased(metering, db, ws, 3);
      const direct = await operationsOf(ws);
      assert.equal(direct.length, refs.length - leased.length, 'the charges before the lease were committed one by one');
      const [lease] = await leasesOf(ws);
      // The holder could not renew it (its database failed); past its expiry another process's sweep bills it.
      await env().db('charge_leases').where({ id: lease.id }).update({ expiresAt: new Date(Date.now() - 60_000) });
      await env().apiDependencies.metering.billExpiredChargeLeases();
      const [remainder] = await operationsOf(ws).where({ operationRef: `lease:${lease.id}` });
      assert.ok(remainder, 'the sweep billed the lease');
      assert.ok(new Decimal(remainder.amount).gte(new Decimal('0.002').times(leased.length)), 'its remainder pays for the charges answered from it');

      // The database is back: the holder's flush finds the lease gone and inserts none of its charges.
      await metering.settled(ws);
      const stored = await operationsOf(ws);
      assert.deepEqual(stored.filter((row: { operationRef: string }) => leased.includes(row.operationRef)), [], 'no charge of the billed lease inserted');
      assert.equal(sumOf(stored).toFixed(), sumOf(direct).plus(remainder.amount).toFixed(), 'billed: the charges committed one by one plus the lease, nothing more');
      // And the holder answers no more from it.
      const ref = randomUUID();
      await metering.meter(db, { workspaceId: ws, kind: 'sparql_query', ref, quantities: { query: 1 } });
      const covered = await metering.leaseCovers(ws, 'sparql_query', ref);
      const current = (await leasesOf(ws)).map((row: { id: string }) => row.id);
      assert.ok(!current.includes(lease.id));
      if (covered) assert.equal(current.length, 1, 'answered only from a new lease');
    }));

  it('a holder whose flushes fail takes no top-up and no new lease: what it answers and has not written stays within the lease it held', () =>
    withHolder(async ({ ws, db, metering }) => {
      const { refs, leased } = await chargeUntilLeased(metering, db, ws);
      const lease = await keptFromTheSweep(ws);
      const answered = [...leased];
      const allow = await refuseChargesOf(ws);
      let refused: string | undefined;
      try {
        await metering.settled(ws);
        // Answered from what the lease holds until it runs out; then committed one by one (refused here).
        for (let i = 0; i < 200 && !refused; i += 1) {
          const ref = randomUUID();
          const metered = await metering.meter(db, { workspaceId: ws, kind: 'sparql_query', ref, quantities: { query: 1 } }).then(
            () => true,
            (error: Error) => {
              assert.match(error.message, /charges refused by the test/);
              return false;
            },
          );
          if (!metered) refused = ref;
          else {
            assert.equal(await metering.leaseCovers(ws, 'sparql_query', ref), true, 'answered from the lease');
            answered.push(ref);
          }
        }
        assert.ok(refused, 'the lease ran out and a charge took the direct path');
        const held = await leasesOf(ws);
        assert.deepEqual(held.map((row: { id: string }) => row.id), [lease.id], 'no new lease');
        assert.equal(new Decimal(held[0].remaining).toFixed(), new Decimal(lease.remaining).toFixed(), 'not topped up');
        assert.ok(new Decimal('0.002').times(answered.length + 1).gt(lease.remaining), 'answered until the lease ran out');
        assert.ok(new Decimal('0.002').times(answered.length).lte(lease.remaining), 'and no further');
      } finally {
        await allow();
      }
      // Once charges can be written, the queued ones are, once each; the refused one never.
      await metering.settled(ws);
      const stored = await operationsOf(ws);
      assert.deepEqual(stored.map((row: { operationRef: string }) => row.operationRef).sort(), [...refs.filter((ref) => !leased.includes(ref)), ...answered].sort());
    }));

  it("one workspace's failing charges do not hold back another's: its charges are written and its lease renewed (review s30 R5)", () =>
    withHolder(async ({ ws, db, metering }) => {
      const other = (await newWorkspace()).workspaceId;
      const failing = await chargeUntilLeased(metering, db, ws, 2);
      const healthy = await chargeUntilLeased(metering, db, other, 2);
      const [failingLease, healthyLease] = [await keptFromTheSweep(ws), await keptFromTheSweep(other)];
      // Marked to expire in an hour (keptFromTheSweep): a flush that goes through for it renews it to
      // CHARGE_LEASE_TTL_MS from then, well before that.
      const marked = Date.now() + 3_600_000;
      const allow = await refuseChargesOf(ws);
      try {
        // One flush carries both workspaces' queued charges; the refused rows fail its statement.
        await metering.settled(other);
        assert.equal((await operationsOf(other).whereIn('operationRef', healthy.leased)).length, healthy.leased.length, "the healthy workspace's leased charges are written");
        const [renewed] = await leasesOf(other);
        assert.equal(renewed.id, healthyLease.id);
        assert.ok(new Date(renewed.expiresAt).getTime() < marked - 60_000, 'and its lease renewed');
        assert.equal((await operationsOf(ws).whereIn('operationRef', failing.leased)).length, 0, "the failing workspace's are not");
        for (const ref of failing.leased) assert.equal(await metering.leaseCovers(ws, 'sparql_query', ref), true, 'they stay queued');
      } finally {
        await allow();
      }
      await until('the refused charges written after the database accepted them', async () => (await operationsOf(ws).whereIn('operationRef', failing.leased)).length >= failing.leased.length, 60_000, 200);
      assert.equal((await operationsOf(ws)).length, failing.refs.length, 'every charge of the failing workspace once');
      assert.equal((await operationsOf(other)).length, healthy.refs.length, 'every charge of the healthy one once');
      assert.deepEqual((await leasesOf(ws)).map((lease: { id: string }) => lease.id), [failingLease.id]);
    }));

  it('a holder whose flushes fail while its pool is alive keeps its charges queued and writes them once the database answers again', () =>
    withHolder(async ({ ws, db, metering }) => {
      const { refs, leased } = await chargeUntilLeased(metering, db, ws, 2);
      const lease = await keptFromTheSweep(ws);
      const allow = await refuseChargesOf(ws);
      try {
        await metering.settled(ws);
        for (const ref of leased) assert.equal(await metering.leaseCovers(ws, 'sparql_query', ref), true, 'still queued after the failed flush');
        assert.equal((await operationsOf(ws).whereIn('operationRef', leased)).length, 0);
      } finally {
        await allow();
      }
      // Tried again on its own (backoff of at most 5 s): written once, the lease lowered by them.
      await until('the queued charges written after the database answered again', async () => (await operationsOf(ws).whereIn('operationRef', leased)).length >= leased.length, 60_000, 200);
      const stored = await operationsOf(ws);
      assert.equal(stored.length, refs.length, 'every charge once');
      const [after] = await env().db('charge_leases').where({ id: lease.id });
      assert.equal(new Decimal(lease.remaining).minus(after.remaining).toFixed(), new Decimal('0.002').times(leased.length).toFixed(), 'the lease lowered by its written charges');
    }));

  it('a process that destroys its pool without closing its charge leases still exits, logs once, and its queued charge is billed with its lease', async () => {
    const ws = (await newWorkspace()).workspaceId;
    const child = spawn(process.execPath, ['--require', 'tsx/cjs', path.join(projectRoot, 'test/integration/billing/support/destroy-pool-with-leased-charges.ts'), ws], {
      cwd: projectRoot,
      env: { ...process.env, LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk));
    // Generous for a loaded machine; a script kept alive by a retry timer never exits at all.
    const limitMs = 90_000;
    const code = await new Promise<number | null>((resolve, reject) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new Error(`the script did not exit within ${limitMs} ms of starting:\n${output.slice(-3000)}`));
      }, limitMs);
      // 'close', not 'exit': the last line can still be unread when the process exits.
      child.once('close', (exitCode) => {
        clearTimeout(timer);
        resolve(exitCode);
      });
    });
    assert.equal(code, 0, output);
    const lines = output.split('\n');
    assert.equal(lines.filter((line) => line.includes('pool was destroyed')).length, 1, `one line says why it stopped:\n${output}`);
    assert.equal(lines.filter((line) => line.includes('trying again')).length, 0, `no retries:\n${output}`);
    const leasedRef = /\{"leasedRef":"([0-9a-f-]{36})"\}/.exec(output)?.[1];
    assert.ok(leasedRef, `the script printed its leased charge:\n${output}`);

    // Not dropped silently: the charge was never written, and the lease it was answered from is
    // left for the crash sweep, which bills its remainder (the API's own sweep may have already).
    assert.deepEqual(await operationsOf(ws).where({ operationRef: leasedRef }), []);
    await leasesOf(ws).update({ expiresAt: new Date(Date.now() - 60_000) });
    await env().apiDependencies.metering.billExpiredChargeLeases();
    const remainders = await operationsOf(ws).where('operationRef', 'like', 'lease:%');
    assert.equal(remainders.length, 1, 'the lease is billed once');
    assert.ok(new Decimal(remainders[0].amount).gte('0.002'), 'its remainder pays for the queued charge');
  });
});
