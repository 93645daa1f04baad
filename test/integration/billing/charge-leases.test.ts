import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import Decimal from 'decimal.js';
import { createDb } from '../../../db/connection';
import { meteredAmount, meteredOperations } from '../../../observability/metrics';
import { systemClock } from '../../../core/clock';
import { assertCredit } from '../../../services/usage/credit';
import { DefinitionCache } from '../../../services/shared/definition-cache';
import { Metering } from '../../../services/usage/metering';
import { env } from '../../support/environment';
import { as, newWorkspace, request } from '../../support/fixtures';
import { customerOntology, ontologyTenant, OntologyTenant } from '../../support/ontology';
import { useProcessSettings } from './process-settings';
import { until } from '../../support/polling';

// Leased charge budgets (services/usage/charge-leases.ts): a charge made outside a transaction is
// answered from its workspace's lease and written in batches, exactly once; a lease counts as spent
// against credit; a lease its holder left behind is billed once for its remainder.

const leasesOf = (workspaceId: string) => env().db('charge_leases').where({ workspaceId });
const operationsOf = (workspaceId: string, kind: string) => env().db('metered_operations').where({ workspaceId, kind });
const monthStart = () => new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), 1));

/** Waits (without a fixed sleep) until `check` holds, at most `limitMs`. */
const eventually = (check: () => Promise<boolean>, what: string, limitMs = 20_000) => until(what, check, limitMs, 100);

/** The metering a test charges through directly: the in-process API's, whose usage reads settle it. */
const metering = () => env().apiDependencies.metering;

/** Charges of one kind, one after another, until one is answered from a lease (at most `limit`); returns its ref and every ref charged. */
async function chargeUntilLeased(workspaceId: string, limit = 5000): Promise<{ leasedRef: string; leasedId: string; refs: string[] }> {
  const refs: string[] = [];
  for (let i = 0; i < limit; i += 1) {
    const ref = randomUUID();
    refs.push(ref);
    const operation = await metering().meter(env().db, { workspaceId, kind: 'sparql_query', ref, quantities: { query: 1 } });
    // Still queued here (its write waits for the flush): answered from the lease.
    if (await metering().leaseCovers(workspaceId, 'sparql_query', ref)) return { leasedRef: ref, leasedId: operation!.id, refs };
  }
  return assert.fail(`no charge of ${limit} was answered from a lease`);
}

describe('Charge leases: charges answered without waiting for their commit, exactly once', function () {
  this.timeout(120_000);
  const settings = useProcessSettings(['STRIPE_SECRET_KEY', 'WEFT_CREDIT_LIMIT', 'WEFT_CHARGE_LEASE_MAX', 'WEFT_LEASE_IDLE_MS']);
  beforeEach(() => settings.set({}));

  describe('a burst of SPARQL queries', () => {
    let t: OntologyTenant;
    before(async () => {
      t = await ontologyTenant();
      await customerOntology(t);
      assert.equal((await as(t.ws.apiKey).patch('/api/v1/organization/settings', { semanticConsumerMode: 'read' })).status, 200);
    });

    const ask = () => request('POST', `${t.base}/sparql`, { key: t.key, rawBody: 'ASK {}', headers: { 'Content-Type': 'application/sparql-query', Accept: 'application/sparql-results+json' } });

    it('meters every answered query exactly once, and the lease goes back when the workspace is idle', async () => {
      const ws = t.ws.workspaceId;
      let answered = 0;
      const wave = async () => {
        const answers = await Promise.all(Array.from({ length: 8 }, ask));
        for (const res of answers) assert.ok(res.status === 200 || res.status === 429, `${res.status} ${JSON.stringify(res.body)}`);
        answered += answers.filter((res) => res.status === 200).length;
      };
      // Waves until the workspace holds a lease (queries arriving together take one), then more from it.
      let leased = false;
      for (let i = 0; i < 50 && !leased; i += 1) {
        await wave();
        leased = (await leasesOf(ws)).length > 0;
      }
      assert.ok(leased, 'a burst of queries took a charge lease');
      for (let i = 0; i < 5; i += 1) await wave();
      assert.ok(answered > 0);

      // Reading usage writes this process's queued charges first.
      const usage = (await as(t.ws.apiKey).get('/api/v1/usage')).body.usage;
      assert.equal(usage.byKind.find((k: { kind: string }) => k.kind === 'sparql_query')?.operations, answered, 'one operation per answered query');
      // A pause shorter than WEFT_LEASE_IDLE_MS (10 s by default) keeps the lease for the next burst:
      // the API's clock, held, moves by the pause, and its lease sweep looks the lease over then.
      env().clock.set(Date.now());
      env().clock.advance(2000);
      await metering().leases.sweep();
      assert.equal((await leasesOf(ws)).length, 1, 'the lease is kept through a 2 s pause');
      // Idle: the lease goes back (its last charges written, its row deleted), and nothing changes in the charges.
      settings.set({ WEFT_LEASE_IDLE_MS: '500' });
      await eventually(async () => (await leasesOf(ws)).length === 0, 'the idle lease is returned');
      const stored = await operationsOf(ws, 'sparql_query');
      assert.equal(stored.length, answered);
      assert.equal(stored.reduce((sum: Decimal, row: { amount: string }) => sum.plus(row.amount), new Decimal(0)).toFixed(), new Decimal('0.002').times(answered).toFixed());
    });

    it('with WEFT_CHARGE_LEASE_MAX=0 takes no lease and commits every charge before its answer', async () => {
      settings.set({ WEFT_CHARGE_LEASE_MAX: '0' });
      const ws = t.ws.workspaceId;
      await eventually(async () => (await leasesOf(ws)).length === 0, 'an earlier lease is returned');
      const before = (await operationsOf(ws, 'sparql_query')).length;
      for (let i = 1; i <= 30; i += 1) {
        const res = await ask();
        assert.equal(res.status, 200, JSON.stringify(res.body));
        assert.equal((await operationsOf(ws, 'sparql_query')).length, before + i, 'the charge is committed before the answer');
      }
      const burst = await Promise.all(Array.from({ length: 8 }, ask));
      assert.equal((await operationsOf(ws, 'sparql_query')).length, before + 30 + burst.filter((res) => res.status === 200).length);
      assert.equal((await leasesOf(ws)).length, 0, 'no lease was taken');
    });
  });

  it('withdraws a charge still queued from its lease, and writes the others with the ids they were answered with', async () => {
    const ws = (await newWorkspace()).workspaceId;
    const first = await chargeUntilLeased(ws);
    const second = await chargeUntilLeased(ws);
    await metering().withdraw(env().db, ws, 'sparql_query', first.leasedRef);
    assert.equal(await metering().leaseCovers(ws, 'sparql_query', first.leasedRef), false);
    await metering().settled(ws);
    const stored = await operationsOf(ws, 'sparql_query');
    const refs = [...first.refs, ...second.refs];
    assert.equal(stored.length, refs.length - 1, 'every charge but the withdrawn one');
    assert.ok(!stored.some((row: { operationRef: string }) => row.operationRef === first.leasedRef), 'the withdrawn charge was never written');
    assert.equal(stored.find((row: { operationRef: string }) => row.operationRef === second.leasedRef)?.id, second.leasedId, 'written with the id meter() answered');
    // A charge metered again while its first is queued is metered once.
    const again = await chargeUntilLeased(ws);
    assert.equal(await metering().meter(env().db, { workspaceId: ws, kind: 'sparql_query', ref: again.leasedRef, quantities: { query: 1 } }), undefined);
    await metering().settled(ws);
    assert.equal((await operationsOf(ws, 'sparql_query').where({ operationRef: again.leasedRef })).length, 1);
  });

  it('counts a lease as spent: a free workspace near its credit is granted at most what is left, then refused, never overdrawn', async () => {
    settings.set({ WEFT_CREDIT_LIMIT: 'plan' });
    const ws = (await newWorkspace()).workspaceId;
    // 4.99 of the free plan's 5.00 spent.
    await metering().meter(env().db, { workspaceId: ws, kind: 'pipeline_run', ref: randomUUID(), quantities: { record: 49_900 } });
    const take = async () => (await env().db.raw('SELECT * FROM weft_take_charge_lease(NULL, ?, ?, ?, ?, ?, ?, ?, NULL)', [ws, 'sparql_query', 'test', '0.10', '5.00', monthStart(), 60_000])).rows[0];
    const granted = await take();
    assert.equal(granted.outcome, 'granted');
    assert.equal(new Decimal(granted.granted).toFixed(), '0.01', 'only what the credit leaves');
    assert.equal((await take()).outcome, 'no_credit', 'a second lease finds no credit left');
    // Leased counts as spent: new paid work is refused, and billing says it is paused.
    await assert.rejects(assertCredit(env().apiDependencies, env().db, ws, 'sparql_query', randomUUID()), (error: { code?: string }) => error.code === 'usage_limit_reached');
    await env().db('charge_leases').where({ id: granted.lease_id }).delete();

    // Through meter() and the credit check as the SPARQL endpoint runs them, one after another:
    // five queries of 0.002 fit in the 0.01 left, leased or not, and the sixth is refused.
    let charged = 0;
    for (let i = 0; i < 20; i += 1) {
      const ref = randomUUID();
      const metered = metering().meter(env().db, { workspaceId: ws, kind: 'sparql_query', ref, quantities: { query: 1 } });
      try {
        await Promise.all([assertCredit(env().apiDependencies, env().db, ws, 'sparql_query', ref), metered]);
        charged += 1;
      } catch (error) {
        assert.equal((error as { code?: string }).code, 'usage_limit_reached');
        await metered.then(() => metering().withdraw(env().db, ws, 'sparql_query', ref));
      }
      // One statement: a flush moves an amount from the lease to the charges between two.
      const [{ held, used }] = (await env().db.raw('SELECT (SELECT coalesce(sum(remaining), 0) FROM charge_leases WHERE workspace_id = ?) AS held, (SELECT sum(amount) FROM metered_operations WHERE workspace_id = ?) AS used', [ws, ws])).rows;
      assert.ok(new Decimal(used).plus(held).lte('5.00'), `charged and leased stay within the credit: ${used} + ${held}`);
    }
    await metering().settled(ws);
    assert.equal(charged, 5);
    const [{ used }] = (await env().db.raw('SELECT sum(amount) AS used FROM metered_operations WHERE workspace_id = ?', [ws])).rows;
    assert.equal(new Decimal(used).toFixed(), '5');
  });

  it('counts a billed remainder in the amount, not as an operation of its kind (usage summary and metrics)', async () => {
    const workspace = await newWorkspace();
    const ws = workspace.workspaceId;
    for (let i = 0; i < 3; i += 1) await metering().meter(env().db, { workspaceId: ws, kind: 'records_read', ref: randomUUID(), quantities: { request: 1, record: 100 } });
    await env().db('charge_leases').insert({ workspaceId: ws, kind: 'records_read', holder: 'gone:3:z', remaining: '0.0250000000', expiresAt: new Date(Date.now() - 1000) });
    const counterOf = async (counter: typeof meteredOperations) => (await counter.get()).values.find((value) => value.labels.kind === 'records_read')?.value ?? 0;
    const [operationsBefore, amountBefore] = [await counterOf(meteredOperations), await counterOf(meteredAmount)];
    await metering().billExpiredChargeLeases();
    // Billed by this sweep or the API's own (both in this process): either counts the same.
    assert.equal((await operationsOf(ws, 'records_read').where('operationRef', 'like', 'lease:%')).length, 1);
    assert.equal(await counterOf(meteredOperations), operationsBefore, 'weft_metered_operations_total counts no operation for it');
    assert.ok((await counterOf(meteredAmount)) - amountBefore >= 0.025 - 1e-9, 'weft_metered_amount_total counts its amount');
    const usage = (await as(workspace.apiKey).get('/api/v1/usage')).body.usage;
    assert.deepEqual(usage.byKind.find((k: { kind: string }) => k.kind === 'records_read'), { kind: 'records_read', operations: 3, amount: '0.028' }, 'three reads (0.001 each) and the remainder');
    assert.equal(usage.totalExact, '0.028');
  });

  it('bills a lease its holder left behind once, as its remainder, even with two sweeps at once; a live lease stays', async () => {
    const ws = (await newWorkspace()).workspaceId;
    const [stale] = await env().db('charge_leases').insert({ workspaceId: ws, kind: 'sparql_query', holder: 'gone:1:x', remaining: '0.0370000000', expiresAt: new Date(Date.now() - 1000) }).returning('*');
    const [live] = await env().db('charge_leases').insert({ workspaceId: ws, kind: 'records_read', holder: 'alive:2:y', remaining: '0.05', expiresAt: new Date(Date.now() + 3_600_000) }).returning('*');
    const other = createDb(process.env.DATABASE_URL!, { max: 2 });
    const otherDefinitions = new DefinitionCache(other, systemClock);
    try {
      const billed = await Promise.all([metering().billExpiredChargeLeases(), new Metering(other, systemClock, otherDefinitions).billExpiredChargeLeases()]);
      assert.ok(billed[0] + billed[1] <= 1, 'one of the sweeps billed it (or the API process’s own sweep did)');
    } finally {
      await otherDefinitions.close();
      await other.destroy();
    }
    const remainders = await operationsOf(ws, 'sparql_query');
    assert.equal(remainders.length, 1);
    assert.equal(remainders[0].operationRef, `lease:${stale.id}`);
    assert.equal(new Decimal(remainders[0].amount).toFixed(), '0.037');
    assert.deepEqual(remainders[0].quantities, { unaccountedRemainder: 1 });
    const charges = await env().db('operation_charges').where({ operationId: remainders[0].id });
    assert.deepEqual(charges.map((c: { item: string; amount: string }) => [c.item, new Decimal(c.amount).toFixed()]), [['unaccounted_remainder', '0.037']]);
    assert.deepEqual((await leasesOf(ws)).map((row: { id: string }) => row.id), [live.id]);
    await metering().billExpiredChargeLeases();
    assert.equal((await operationsOf(ws, 'sparql_query')).length, 1, 'a later sweep bills nothing again');
    assert.equal((await operationsOf(ws, 'records_read')).length, 0);
  });
});
