import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import type { CapabilityContext } from '../../../plugins/capability';
import { managedTableCapability } from '../../../plugins/managed-table';
import { postgresTableCapability } from '../../../plugins/postgres-table';
import { SparqlQueryThreads } from '../../../ontology/sparql-threads/query-pool';
import { sparqlQueryOperation } from '../../../services/ontology/sparql-operations';
import { closeRuntimeState, runtimeState, type ServiceDependencies } from '../../../services/operations/context';
import { invoke } from '../../../services/operations/invoke';
import { principalOfKey } from '../../../services/tenancy/api-keys';
import { putApiLimits } from '../../../services/tenancy/api-limits';
import { admitKeptRequest, authenticateRequest } from '../../../services/tenancy/request-authentication';
import { Metering } from '../../../services/usage/metering';
import { env } from '../../support/environment';
import { externalDatabase, installationSettingsFor } from '../../support/external-postgres';
import { as, heardDefinitionChanges, keyIdOf, newKey, newManagedTableContext, newWorkspace } from '../../support/fixtures';
import { customerOntology, ontologyTenant } from '../../support/ontology';
import { until } from '../../support/polling';

// Metering, request admission and postgres_table's pools are a runtime's dependencies
// (services/usage/metering.ts, services/tenancy/request-authentication.ts, plugins/postgres-table/pool.ts),
// and so are the listeners to committed snapshots (plugins/snapshot-notices.ts) and the SPARQL
// query threads (ontology/sparql-threads/query-pool.ts) and the readiness probe's worker round trip
// (services/shared/worker-round-trips.ts) and the definition cache (services/shared/definition-cache.ts),
// not module state: two sets of dependencies built in one process share no queued charge, no charge
// lease, no flush, no kept key, no request lease, no pool, no listener, no query thread, no SPARQL table read, no round trip
// and no kept definition (the test environment's runtimes share one cache on purpose, test/support/environment.ts). Each set
// here holds its queued charges until asked (a flush an hour away), so what one writes or withdraws
// is decided by what the test asks of it, not by a timer.

const operationsOf = (workspaceId: string) => env().db('metered_operations').where({ workspaceId });
const leasesOf = (workspaceId: string) => env().db('charge_leases').where({ workspaceId });

/** Dependencies whose metering flushes only when asked. */
function holdingDependencies(): ServiceDependencies {
  return env().dependencies({ metering: new Metering(env().db, env().clock, env().definitions, { flushAfterMs: 3_600_000 }) });
}

/** SPARQL charges through `deps` until one is answered from its lease (queued, not written); returns its ref. */
async function chargeUntilLeased(deps: ServiceDependencies, workspaceId: string): Promise<string> {
  for (let i = 0; i < 5000; i += 1) {
    const ref = randomUUID();
    await deps.metering.meter(deps.db, { workspaceId, kind: 'sparql_query', ref, quantities: { query: 1 } });
    if (await deps.metering.leaseCovers(workspaceId, 'sparql_query', ref)) return ref;
  }
  return assert.fail('no charge was answered from a lease');
}

describe('Two runtimes in one process', function () {
  this.timeout(120_000);

  it('share no charge lease, queued charge or flush: each writes, withdraws and returns only its own', async () => {
    const ws = (await newWorkspace()).workspaceId;
    // A change to a workspace hands back its leases, and so does the start of this process's
    // definition listener (what changed before it listened is unknown): the first lease read the
    // workspace's plan through the definition cache, which started the listener, and under load
    // the LISTEN (or the workspace's creation NOTIFY) was confirmed after that lease was taken.
    await heardDefinitionChanges();
    // Held, the clock lets no lease go idle, lapse or be renewed (a renewal writes the queued charges).
    env().clock.set(Date.now());
    const [one, two] = [holdingDependencies(), holdingDependencies()];
    try {
      const first = await chargeUntilLeased(one, ws);
      const [{ holder: firstHolder }] = await leasesOf(ws);

      // The second takes a lease of its own for the same workspace and kind: two holders.
      const second = await chargeUntilLeased(two, ws);
      assert.equal(await two.metering.leaseCovers(ws, 'sparql_query', first), false, "the second does not see the first's queued charge");
      assert.equal(await one.metering.leaseCovers(ws, 'sparql_query', second), false, "nor the first the second's");
      const leases = await leasesOf(ws);
      assert.equal(leases.length, 2, 'one lease per runtime');
      assert.equal(new Set(leases.map((lease: { holder: string }) => lease.holder)).size, 2, 'held by two holders');

      // Settling the second writes its queued charge only.
      await two.metering.settled(ws);
      assert.equal((await operationsOf(ws).where({ operationRef: second })).length, 1, "the second's charge is written");
      assert.equal((await operationsOf(ws).where({ operationRef: first })).length, 0, "the first's is still queued in the first");
      assert.equal(await one.metering.leaseCovers(ws, 'sparql_query', first), true);

      // A withdrawal through the second does not reach the first's queue: the charge is still written by its own runtime.
      await two.metering.withdraw(two.db, ws, 'sparql_query', first);
      assert.equal(await one.metering.leaseCovers(ws, 'sparql_query', first), true, 'still queued in the first');

      // Closing the first writes its charges and returns its lease; the second keeps its own and still answers from it.
      await one.metering.close();
      assert.equal((await operationsOf(ws).where({ operationRef: first })).length, 1, "the first's charge is written when its runtime closes");
      const left = await leasesOf(ws);
      assert.equal(left.length, 1, "the first's lease went back");
      assert.notEqual(left[0].holder, firstHolder, "the one left is the second's");
      const third = randomUUID();
      await two.metering.meter(two.db, { workspaceId: ws, kind: 'sparql_query', ref: third, quantities: { query: 1 } });
      assert.equal(await two.metering.leaseCovers(ws, 'sparql_query', third), true, 'the second still answers from its lease');
    } finally {
      await one.metering.close();
      await two.metering.close();
    }
    assert.deepEqual(await leasesOf(ws), [], 'both leases returned');
    const refs = (await operationsOf(ws)).map((row: { operationRef: string }) => row.operationRef);
    assert.equal(new Set(refs).size, refs.length, 'every charge written once');
  });

  it('keep no key and no request lease of the other: a key the first admits from memory, the second checks in the database', async () => {
    const workspace = await newWorkspace();
    const key = await newKey(workspace, { scopes: ['org:read'] });
    // Buckets large enough to lease from (a default key's 120 are counted one by one).
    await putApiLimits(env(), env().db, workspace.workspaceId, { workspaceRequests: 100_000, apiKeyRequests: 100_000 });
    const [one, two] = [env().dependencies(), env().dependencies()];
    // Counted one by one until the first keeps the key and holds a lease of its buckets.
    let fromMemory = false;
    for (let i = 0; i < 50 && !fromMemory; i += 1) {
      await authenticateRequest(one, key);
      fromMemory = admitKeptRequest(one, key) !== undefined;
    }
    assert.ok(fromMemory, 'the first admits the key from memory');
    assert.equal(admitKeptRequest(two, key), undefined, 'the second keeps neither the key nor a lease');
    assert.equal(two.requests.keptKeyWorkspaces.size, 0);
  });

  it('hold no pool of the other: each reaches an installation through a pool of its own, and closing one ends only its own', async () => {
    const database = `weft_isolation_test_${process.pid}`;
    const { client, drop } = await externalDatabase(database);
    const [one, two] = [env().dependencies(), env().dependencies()];
    try {
      await client.query('CREATE TABLE items (id integer PRIMARY KEY)');
      const { password, ...settings } = installationSettingsFor(database);
      const installation = { id: randomUUID(), workspaceId: randomUUID(), settings, credentials: password ? { password } : {} };
      const contextOf = (deps: ServiceDependencies): CapabilityContext => ({ installation, db: deps.db, managedTables: deps.managedTables, postgresTablePools: deps.postgresTablePools, snapshotNotices: deps.snapshotNotices });

      assert.equal((await postgresTableCapability.checkConnection(contextOf(one), { table: 'items' })).ok, true);
      assert.equal(one.postgresTablePools.holds(installation.id), true, 'the first connected through its own pool');
      assert.equal(two.postgresTablePools.holds(installation.id), false, 'the second holds none');

      const first = await one.postgresTablePools.poolFor(installation);
      const second = await two.postgresTablePools.poolFor(installation);
      assert.notEqual(first, second, 'one pool per runtime for the same installation');

      // Closing the first runtime's state ends its pools; the second's still answers.
      await closeRuntimeState(one);
      assert.equal(first.ended, true, "the first's pool is ended with its runtime");
      assert.equal(one.postgresTablePools.holds(installation.id), false);
      assert.equal(second.ended, false);
      assert.equal((await postgresTableCapability.checkConnection(contextOf(two), { table: 'items' })).ok, true, 'the second still reads through its own');
      assert.equal(await two.postgresTablePools.poolFor(installation), second, 'and keeps it');
    } finally {
      await two.postgresTablePools.close();
      await drop();
    }
  });

  it('tell only their own listeners of a snapshot committed through them', async () => {
    const [one, two] = [env().dependencies(), env().dependencies()];
    const { ctx } = await newManagedTableContext();
    const heard: Record<'one' | 'two', string[]> = { one: [], two: [] };
    one.snapshotNotices.onCommitted((workspaceId) => heard.one.push(workspaceId));
    two.snapshotNotices.onCommitted((workspaceId) => heard.two.push(workspaceId));
    const through = (deps: ServiceDependencies): CapabilityContext => ({ ...ctx, managedTables: deps.managedTables, snapshotNotices: deps.snapshotNotices });
    await managedTableCapability.writeRecords!(through(one), { table: 'items', primaryKey: ['id'] }, { operation: 'append', rows: [{ id: 1 }], provenance: { kind: 'write', id: randomUUID() } });
    assert.deepEqual(heard, { one: [ctx.installation.workspaceId], two: [] }, 'the first runtime heard of its commit, the second did not');
    await managedTableCapability.writeRecords!(through(two), { table: 'items', primaryKey: ['id'] }, { operation: 'append', rows: [{ id: 2 }], provenance: { kind: 'write', id: randomUUID() } });
    assert.deepEqual(heard, { one: [ctx.installation.workspaceId], two: [ctx.installation.workspaceId] });
  });

  it('evaluate their SPARQL queries in threads of their own, started by the first query', async () => {
    const t = await ontologyTenant();
    await customerOntology(t);
    assert.equal((await as(t.ws.apiKey).patch('/api/v1/organization/settings', { semanticConsumerMode: 'read' })).status, 200);
    const principal = await principalOfKey(env(), env().db, t.ws.workspaceId, await keyIdOf(t.key));
    // Threads of their own (the tests' dependencies otherwise share theirs).
    const [one, two] = [env().dependencies({ sparqlQueries: new SparqlQueryThreads() }), env().dependencies({ sparqlQueries: new SparqlQueryThreads() })];
    try {
      const reply = await invoke({ deps: one, principal, door: 'sparql', requestId: randomUUID() }, sparqlQueryOperation, { projectId: t.ws.projectId, text: 'ASK { ?s ?p ?o }', accept: 'application/sparql-results+json' });
      assert.equal(reply.status, 200, JSON.stringify(reply.body));
      assert.equal(one.sparqlQueries.running, true, 'the first evaluated its query in its own threads');
      assert.equal(two.sparqlQueries.running, false, 'the second started none');
      await closeRuntimeState(one);
      assert.equal(one.sparqlQueries.running, false, "the first's threads stop with its runtime");
    } finally {
      await one.sparqlQueries.close();
      await two.sparqlQueries.close();
    }
  });

  it("hold a workspace's SPARQL table reads apart: reads one runtime has under way take none of the other's", async () => {
    const [one, two] = [env().dependencies(), env().dependencies()];
    const { sqlConnections, timeoutMs } = one.sparqlMemory.settings;
    const workspaceId = randomUUID();
    const held = Array.from({ length: sqlConnections }, () => one.sparqlMemory.tableReads.take(workspaceId, sqlConnections, timeoutMs));
    assert.throws(() => one.sparqlMemory.tableReads.take(workspaceId, sqlConnections, timeoutMs), (error: { code?: string }) => error.code === 'sparql_concurrency_limit');
    two.sparqlMemory.tableReads.take(workspaceId, sqlConnections, timeoutMs)();
    for (const release of held) release();
    assert.notEqual(one.sparqlMemory.primaryKeys, two.sparqlMemory.primaryKeys, 'each keeps its own primary keys');
  });

  it('keep no definition of the other: an entry one keeps is not in the other, and closing one leaves the other listening', async () => {
    const { workspaceId } = await newWorkspace();
    // Held still, so no entry reaches its TTL while the test runs, however slowly.
    env().clock.set(Date.now());
    // Runtimes built as a process builds its own: each with a definition cache of its own.
    const [one, two] = [runtimeState(env().db, env().clock), runtimeState(env().db, env().clock)];
    const planOf = (state: typeof one) => state.definitions.get(workspaceId, 'test-plan', async () => (await env().db('workspaces').where({ id: workspaceId }).first('plan')).plan as string);
    const kept = (state: typeof one) => state.definitions.peek<string>(workspaceId, 'test-plan');
    try {
      // A read is kept once the cache's LISTEN is confirmed (the first read starts it).
      await until('the first runtime keeps the plan', async () => (await planOf(one), kept(one)));
      assert.equal(kept(two), undefined, 'the second keeps nothing the first read');
      await until('the second runtime keeps the plan', async () => (await planOf(two), kept(two)));

      await closeRuntimeState(one);
      assert.equal(kept(one), undefined, 'the first forgets its definitions with its runtime');
      assert.equal(kept(two), 'free', 'the second keeps its own');
      // And still listens: a change another connection commits reaches it by NOTIFY.
      const heard = new Promise<void>((resolve) => {
        const stop = two.definitions.onChange((changed) => changed === workspaceId && (stop(), resolve()));
      });
      await env().db('workspaces').where({ id: workspaceId }).update({ plan: 'team' });
      await heard;
      assert.equal(kept(two), undefined, 'the change dropped the second runtime\'s entry');
      assert.equal(await planOf(two), 'team');
    } finally {
      await Promise.all([one, two].map(closeRuntimeState));
    }
  });

  it("share no worker round trip of the readiness probe: each starts its own, and another once its clock has passed the interval", async () => {
    const started: string[] = [];
    // Temporal as far as the round trip goes: the start is counted, the worker answers at once.
    const temporalOf = (runtime: string) => ({ workflow: { start: async () => (started.push(runtime), { result: async () => ({ workerIdentity: runtime }) }) } }) as unknown as Client;
    const [one, two] = [env().dependencies(), env().dependencies()];
    env().clock.set(Date.now());
    await one.workerRoundTrips.check(temporalOf('one'));
    await one.workerRoundTrips.check(temporalOf('one'));
    assert.deepEqual(started, ['one'], 'probes within the interval share the first round trip');
    await two.workerRoundTrips.check(temporalOf('two'));
    assert.deepEqual(started, ['one', 'two'], "the second runtime starts its own, not sharing the first's");
    env().clock.advance(9_999);
    await one.workerRoundTrips.check(temporalOf('one'));
    assert.deepEqual(started, ['one', 'two'], 'still within the interval on its clock');
    env().clock.advance(1);
    await one.workerRoundTrips.check(temporalOf('one'));
    assert.deepEqual(started, ['one', 'two', 'one'], 'a new one once the interval has passed on its clock');
  });
});
