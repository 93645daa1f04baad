import assert from 'node:assert/strict';
import Decimal from 'decimal.js';
import { chargeLeaseMax } from '../../core/config';
import { CHARGE_LEASE_TTL_MS } from '../../services/usage/charge-leases';
import { env } from '../support/environment';
import { as, requestAt } from '../support/fixtures';
import { customerOntology, ontologyTenant } from '../support/ontology';
import { publishSlowQuery, SLOW_QUERY_ROWS } from './support/slow-query';
import { killHard, RunningScript, startApiScript } from '../support/processes';
import { action, currentSnapshot, managedTable, memberKey, putPolicy, writeTenant } from '../support/source-writes';

/**
 * The API process holds no state a user needs: a job or an approval wait lives in Temporal and
 * PostgreSQL. These tests SIGKILL a separate API process (as `npm run api` runs it) while such work
 * is open, start another, and finish the work through it.
 */
describe('API process killed during open work', function () {
  this.timeout(8 * 60_000);
  let api: RunningScript | undefined;
  let baseUrl = '';

  // A 100 ms synchronous budget: the slow query below becomes a job on the worker.
  const startApi = async () => {
    ({ api, url: baseUrl } = await startApiScript({ WEFT_QUERY_SYNC_BUDGET_MS: '100' }, 180_000));
  };
  const call = (key: string, method: string, path: string, body?: unknown) => requestAt(baseUrl, method, path, { key, body });

  afterEach(async () => {
    if (api && api.child.exitCode === null) await api.stop('SIGTERM');
    api = undefined;
  });

  it('an asynchronous query job finishes while the API is down, and its rows are read through the restarted API', async () => {
    const t = await ontologyTenant();
    // A genuinely slow query (support/slow-query.ts), so the execution is still running when the API process dies.
    await startApi();
    const { key, executePath } = await publishSlowQuery(t, call);

    const pending = await call(key, 'POST', executePath, { input: { minAge: 18 } });
    assert.equal(pending.status, 202, JSON.stringify(pending.body));
    await killHard(api!);

    await startApi();
    let answer = await call(key, 'POST', `${executePath}?cursor=${pending.body.metadata.continuation}`, {});
    for (let i = 0; i < 120 && answer.status === 202; i++) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      answer = await call(key, 'POST', `${executePath}?cursor=${pending.body.metadata.continuation}`, {});
    }
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    assert.deepEqual(answer.body.data, SLOW_QUERY_ROWS);
  });

  it('a governed write waiting for approval survives the kill, is approved through the restarted API, and applies once', async () => {
    const t = await writeTenant();
    const endpointId = await managedTable(t);
    await putPolicy(t, endpointId, { approval: { required: true, approvers: 1 } });
    const approver = await memberKey(t);
    const body = action(t, await currentSnapshot(t.writer, endpointId), { operation: 'upsert', rows: [{ id: 1, name: 'Ada' }] });

    await startApi();
    const proposed = await call(t.writerKey, 'POST', `/api/v1/data-endpoints/${endpointId}/writes`, body);
    assert.equal(proposed.status, 202, JSON.stringify(proposed.body));
    await killHard(api!);

    await startApi();
    const url = `/api/v1/data-endpoints/${endpointId}/writes/${body.actionId}`;
    assert.equal((await call(t.writerKey, 'GET', url)).body.writeAction.status, 'pending_approval');
    // The proposer's retry of the same request, through the new process, changes nothing.
    const retried = await call(t.writerKey, 'POST', `/api/v1/data-endpoints/${endpointId}/writes`, body);
    assert.equal(retried.body.writeAction.status, 'pending_approval', JSON.stringify(retried.body));

    const approved = await call(approver.key, 'POST', `${url}/approve`, {});
    assert.equal(approved.status, 200, JSON.stringify(approved.body));
    assert.equal(approved.body.writeAction.status, 'applied');
    const replay = await call(t.writerKey, 'POST', `/api/v1/data-endpoints/${endpointId}/writes`, body);
    assert.equal(replay.body.writeAction.status, 'applied');
    const snapshot = await call(t.writerKey, 'GET', `/api/v1/data-endpoints/${endpointId}/snapshot`);
    assert.equal(snapshot.body.snapshot.version, '1', 'applied exactly once');
    const rows = await call(t.writerKey, 'GET', `/api/v1/data-endpoints/${endpointId}/records?limit=10`);
    assert.deepEqual(rows.body.data.map((r: { name: string }) => r.name), ['Ada']);
  });

  /** A workspace whose SPARQL queries the API process answers from a charge lease: waves of queries until it holds one. */
  async function leasedQueries() {
    const t = await ontologyTenant();
    await customerOntology(t);
    assert.equal((await as(t.ws.apiKey).patch('/api/v1/organization/settings', { semanticConsumerMode: 'read' })).status, 200);
    await startApi();
    const leases = () => env().db('charge_leases').where({ workspaceId: t.ws.workspaceId });
    let answered = 0;
    for (let i = 0; i < 50 && (await leases()).length === 0; i += 1) {
      const answers = await Promise.all(Array.from({ length: 8 }, () => requestAt(baseUrl, 'POST', `${t.base}/sparql`, { key: t.key, rawBody: 'ASK {}', headers: { 'Content-Type': 'application/sparql-query' } })));
      answered += answers.filter((res) => res.status === 200).length;
    }
    assert.ok((await leases()).length > 0, 'the burst took a charge lease');
    return { ws: t.ws.workspaceId, leases, answered };
  }

  it('a drained API (SIGTERM) writes the charges it answered from its lease and returns the lease', async () => {
    const { ws, leases, answered } = await leasedQueries();
    await api!.stop('SIGTERM');
    assert.equal((await leases()).length, 0, 'the lease went back with the drain');
    const operations = await env().db('metered_operations').where({ workspaceId: ws, kind: 'sparql_query' });
    assert.equal(operations.length, answered, 'one charge per answered query, none billed as a remainder');
  });

  it('SPARQL queries answered from a charge lease stay billed when the API is killed: the lease left behind is billed once for its remainder', async () => {
    const { ws, leases, answered } = await leasedQueries();
    await killHard(api!);

    // No process renews the lease now. A sweep before its expiry leaves it; past its expiry (the
    // clock moved, not waited for) a sweep, this one or another process's, bills it.
    await env().apiDependencies.metering.billExpiredChargeLeases();
    assert.ok((await leases()).length > 0, 'the lease is kept until it expires');
    env().clock.advance(CHARGE_LEASE_TTL_MS + 1000);
    await env().apiDependencies.metering.billExpiredChargeLeases();
    assert.equal((await leases()).length, 0, 'the lease was billed');
    const operations = await env().db('metered_operations').where({ workspaceId: ws, kind: 'sparql_query' });
    const remainders = operations.filter((o: { operationRef: string }) => o.operationRef.startsWith('lease:'));
    assert.ok(remainders.length <= 1, 'one lease held at the kill, billed once');
    const written = operations.length - remainders.length;
    assert.ok(written <= answered, `never more charges than answered queries: ${written} of ${answered}`);
    // Every answered query is paid for: by its own charge, or (its row lost with the process) by the lease's remainder.
    const billed = operations.reduce((sum: Decimal, o: { amount: string }) => sum.plus(o.amount), new Decimal(0));
    const owed = new Decimal('0.002').times(answered);
    assert.ok(billed.gte(owed), `billed ${billed} for ${answered} answered queries (${owed})`);
    assert.ok(billed.lte(owed.plus(chargeLeaseMax())), `the overcharge is at most the lease: ${billed} for ${owed}`);
  });
});
