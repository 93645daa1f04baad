import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { env } from '../../support/environment';
import { as, request } from '../../support/fixtures';
import { createPipeline, EventsApi, eventsSource, getRun, launch, linearDocument, PipelineTenant, tableDestination, useEventsApi, waitForRun } from '../../support/pipelines';
import { useProcessSettings } from './process-settings';

describe('Usage metering, credit and the usage routes', function () {
  this.timeout(120_000);
  const fixture = useEventsApi(() => EventsApi.events(60));
  const settings = useProcessSettings(['STRIPE_SECRET_KEY', 'WEFT_CREDIT_LIMIT']);
  let t: PipelineTenant;
  let admin: ReturnType<typeof as>;
  beforeEach(() => {
    t = fixture.t;
    admin = as(t.ws.apiKey);
  });

  it('meters charges that arrive together in shared statements, each exactly once with its own charges', async () => {
    const ws = t.ws.workspaceId;
    const refs = Array.from({ length: 300 }, (_, i) => `burst-${i}`);
    // All at once: they share statements (at most 256 each); a ref sent twice in the burst is metered once.
    const results = await Promise.all([...refs, 'burst-5', 'burst-299'].map((ref, i) => env().apiDependencies.metering.meter(env().db, { workspaceId: ws, kind: 'governed_write', ref, quantities: { action: 1, row: i % 7 } })));
    assert.equal(results.filter(Boolean).length, 300, 'one operation per ref, whichever call carried it');
    const stored = await env().db('metered_operations').where({ workspaceId: ws, kind: 'governed_write' }).whereIn('operationRef', refs);
    assert.equal(stored.length, 300);
    const charges = await env().db('operation_charges').whereIn('operationId', stored.map((row: { id: string }) => row.id));
    assert.equal(charges.length, 600, 'two charges (action, row) per operation, none twice');
    // Each call got its own operation back, and of a ref sent twice exactly one call got it.
    for (const [i, ref] of refs.entries()) if (ref !== 'burst-5' && ref !== 'burst-299') assert.equal(results[i]?.operationRef, ref);
    assert.equal([results[5], results[300]].filter((result) => result?.operationRef === 'burst-5').length, 1);
    assert.equal([results[299], results[301]].filter((result) => result?.operationRef === 'burst-299').length, 1);
  });

  it('sums many small charges exactly, and meters one operation once', async () => {
    const ws = t.ws.workspaceId;
    const before = (await admin.get('/api/v1/usage')).body.usage;
    const base = before.byKind.find((k: { kind: string }) => k.kind === 'sparql_query')?.amount ?? '0';
    assert.equal(base, '0');
    // 0.002 a thousand times is 2 exactly; in binary floating point it would drift.
    for (let i = 0; i < 1000; i += 1) await env().apiDependencies.metering.meter(env().db, { workspaceId: ws, kind: 'sparql_query', ref: `q-${i}`, quantities: { query: 1 } });
    await env().apiDependencies.metering.meter(env().db, { workspaceId: ws, kind: 'sparql_query', ref: 'q-7', quantities: { query: 1 } });
    const usage = (await admin.get('/api/v1/usage')).body.usage;
    const sparql = usage.byKind.find((k: { kind: string }) => k.kind === 'sparql_query');
    assert.equal(sparql.operations, 1000, 'q-7 was metered once');
    assert.equal(sparql.amount, '2');

    const operations = await admin.get('/api/v1/usage/operations?limit=1');
    assert.equal(operations.status, 200);
    const charges = await admin.get(`/api/v1/usage/operations/${operations.body.operations[0].id}/charges`);
    assert.deepEqual(charges.body.charges, [{ item: 'query', quantity: '1', unitPrice: '0.002', amount: '0.002' }]);
    // The repeated ref added no charges either: operation and charges are written together or not at all.
    const repeated = await env().db('metered_operations').where({ workspaceId: ws, kind: 'sparql_query', operationRef: 'q-7' });
    assert.equal(repeated.length, 1);
    assert.equal((await env().db('operation_charges').where({ operationId: repeated[0].id })).length, 1);

    // Several items: one charge each, and the operation's amount is their exact sum.
    const write = await env().apiDependencies.metering.meter(env().db, { workspaceId: ws, kind: 'governed_write', ref: randomUUID(), quantities: { action: 1, row: 3 } });
    // A charge answered from a charge lease is written by the next flush (usage reads wait for it; this direct read asks).
    await env().apiDependencies.metering.settled(ws);
    const items = await env().db('operation_charges').where({ operationId: write!.id }).orderBy('item');
    assert.deepEqual(items.map((c: { item: string }) => c.item), ['action', 'row']);
    const sum = items.reduce((total: number, c: { amount: string }) => total + Number(c.amount), 0);
    assert.equal(Number((await env().db('metered_operations').where({ id: write!.id }).first()).amount).toFixed(10), sum.toFixed(10));
  });

  it('defaults to the last 30 UTC days and refuses a range over 366 days', async () => {
    const today = new Date().toISOString().slice(0, 10);
    const usage = (await admin.get('/api/v1/usage')).body.usage;
    assert.equal(usage.to, today);
    assert.equal(usage.from, new Date(Date.parse(today) - 29 * 86_400_000).toISOString().slice(0, 10));
    assert.equal((await admin.get('/api/v1/usage?from=2025-01-01&to=2026-01-01')).status, 200, '366 days inclusive');
    const tooLong = await admin.get('/api/v1/usage?from=2025-01-01&to=2026-01-02');
    assert.equal(tooLong.status, 422);
    assert.equal(tooLong.body.code, 'range_too_long');
    assert.equal((await admin.get('/api/v1/usage?from=2026-02-01&to=2026-01-01')).status, 422);
    assert.equal((await admin.get('/api/v1/usage?from=yesterday')).status, 422);
  });

  it('records an alert when spending crosses a threshold of the monthly budget, without stopping work', async () => {
    const saved = await admin.put('/api/v1/usage/alerts', { monthlyBudget: '10', thresholds: [100, 20] });
    assert.equal(saved.status, 200, JSON.stringify(saved.body));
    assert.deepEqual(saved.body.alerts.thresholds, [20, 100]);
    await env().apiDependencies.metering.meter(env().db, { workspaceId: t.ws.workspaceId, kind: 'governed_write', ref: randomUUID(), quantities: { action: 1, row: 1000 } });
    const alerts = (await admin.get('/api/v1/usage/alerts')).body.alerts;
    assert.deepEqual(alerts.events.map((e: { threshold: number }) => e.threshold), [20]);
  });

  it('publishes pricing without a credential', async () => {
    const pricing = await request('GET', '/api/v1/pricing', { key: null });
    assert.equal(pricing.status, 200);
    assert.ok(pricing.body.plans.some((p: { id: string; includedCredit: string }) => p.id === 'free' && p.includedCredit === '5.00'));
  });

  it('answers 402 usage_limit_reached to new paid work once credit is spent (with Stripe configured), while a running run finishes and reads stay free', async () => {
    // The installation's default: with Stripe, the free plan's credit pauses paid work (self-hosted.test.ts: without it, nothing pauses).
    settings.set({ STRIPE_SECRET_KEY: 'sk_test_123' });
    fixture.api.delayMs = 400;
    const destination = await tableDestination(t, `t_${Date.now()}`, ['id']);
    const pipeline = await createPipeline(t, linearDocument(await eventsSource(t, fixture.api), destination, { writeMode: 'upsert' }));
    const running = await launch(t, pipeline.id);
    // Spend the free plan's credit while the run reads its pages.
    await env().apiDependencies.metering.meter(env().db, { workspaceId: t.ws.workspaceId, kind: 'pipeline_run', ref: randomUUID(), quantities: { record: 60_000 } });
    const refused = await t.client.post(`/api/v1/projects/${t.projectId}/pipelines/${pipeline.id}/execute`);
    assert.equal(refused.status, 402, JSON.stringify(refused.body));
    assert.equal(refused.body.code, 'usage_limit_reached');
    const finished = await waitForRun(t, running.id);
    assert.equal(finished.status, 'succeeded', JSON.stringify((await getRun(t, running.id)).error));
    const billing = (await admin.get('/api/v1/usage/billing')).body.billing;
    assert.equal(billing.paidWorkPaused, true);
    const read = await t.client.get(`/api/v1/data-endpoints/${destination}/records?limit=5`);
    assert.equal(read.status, 200, 'reading existing data stays free');
    const runOperation = (await admin.get('/api/v1/usage/operations?limit=200')).body.operations.find((o: { kind: string; operationRef: string }) => o.kind === 'pipeline_run' && o.operationRef === running.id);
    assert.equal(runOperation.quantities.record, 60, 'the finished run was metered with its records');
  });
});
