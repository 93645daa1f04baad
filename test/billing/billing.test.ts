import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import Stripe from 'stripe';
import { BILLING_SCHEDULE_ID, ensureBillingSchedule, reportUsage } from '../../services/usage/billing';
import { meter } from '../../services/usage/usage';
import { env } from '../support/environment';
import { as, newWorkspace, raiseRequestLimits, request } from '../support/fixtures';
import { useStripeMock } from '../support/stripe-mock';
import { useProcessSettings } from './process-settings';

const SECRET = 'whsec_test_secret';
const signer = new Stripe('sk_test_123');

describe('Billing through Stripe (stripe-mock) and the signed webhook', function () {
  this.timeout(60_000);
  const mock = useStripeMock();
  const settings = useProcessSettings(['STRIPE_SECRET_KEY', 'STRIPE_API_URL', 'STRIPE_WEBHOOK_SECRET', 'WEFT_PUBLIC_URL']);
  let admin: ReturnType<typeof as>;
  let workspaceId: string;

  before(async () => {
    const ws = await newWorkspace();
    await raiseRequestLimits(ws.workspaceId);
    admin = as(ws.apiKey);
    workspaceId = ws.workspaceId;
  });
  const configure = () => settings.set({ STRIPE_SECRET_KEY: 'sk_test_123', STRIPE_API_URL: mock.url, STRIPE_WEBHOOK_SECRET: SECRET, WEFT_PUBLIC_URL: env().baseUrl });

  it('answers 503 billing_unavailable on every billing route while Stripe is not configured', async () => {
    settings.set({});
    const res = await admin.post('/api/v1/billing/checkout', {});
    assert.equal(res.status, 503, JSON.stringify(res.body));
    assert.equal(res.body.code, 'billing_unavailable');
    assert.equal((await admin.get('/api/v1/billing/invoices')).status, 503);
    assert.equal((await request('POST', '/api/v1/billing/stripe-webhook', { key: null, rawBody: '{}', headers: { 'Content-Type': 'application/json' } })).status, 503);
  });

  it('returns checkout and portal URLs, and refuses a returnPath on another origin', async () => {
    configure();
    const checkout = await admin.post('/api/v1/billing/checkout', { returnPath: '/settings/billing' });
    assert.equal(checkout.status, 200, JSON.stringify(checkout.body));
    assert.match(checkout.body.url, /^https:\/\//);
    const portal = await admin.post('/api/v1/billing/portal', {});
    assert.equal(portal.status, 200, JSON.stringify(portal.body));
    for (const returnPath of ['//evil.example/x', 'https://evil.example/', 'settings']) {
      const refused = await admin.post('/api/v1/billing/checkout', { returnPath });
      assert.equal(refused.status, 422, returnPath);
      assert.equal(refused.body.code, 'return_path_not_same_origin');
    }
  });

  async function deliver(event: Record<string, unknown>, options: { secret?: string; timestamp?: number } = {}) {
    const payload = JSON.stringify(event);
    const header = signer.webhooks.generateTestHeaderString({ payload, secret: options.secret ?? SECRET, ...(options.timestamp ? { timestamp: options.timestamp } : {}) });
    return request('POST', '/api/v1/billing/stripe-webhook', { key: null, rawBody: payload, headers: { 'Content-Type': 'application/json', 'Stripe-Signature': header } });
  }
  const plan = async () => (await env().db('workspaces').where({ id: workspaceId }).first()).plan;

  it('verifies the webhook signature, applies subscription and invoice events once, and ignores replays', async () => {
    configure();
    const customer = (await env().db('workspaces').where({ id: workspaceId }).first()).stripeCustomerId;
    assert.ok(customer, 'checkout created the customer');
    const subscription = (status: string, id = `evt_${randomUUID()}`) => ({ id, object: 'event', type: 'customer.subscription.updated', data: { object: { id: 'sub_1', object: 'subscription', customer, status } } });

    const forged = await deliver(subscription('active'), { secret: 'whsec_wrong' });
    assert.equal(forged.status, 400);
    assert.equal(forged.body.code, 'invalid_signature');
    const stale = await deliver(subscription('active'), { timestamp: Math.floor(Date.now() / 1000) - 400 });
    assert.equal(stale.status, 400);
    assert.equal(await plan(), 'free', 'a refused event changes nothing');

    const event = subscription('active');
    const first = await deliver(event);
    assert.equal(first.status, 200, JSON.stringify(first.body));
    assert.equal(await plan(), 'team');
    const replay = await deliver({ ...event, data: { object: { ...event.data.object, status: 'canceled' } } });
    assert.equal(replay.body.duplicate, true);
    assert.equal(await plan(), 'team', 'a replayed event id is a no-op');

    const invoice = await deliver({ id: `evt_${randomUUID()}`, object: 'event', type: 'invoice.paid', data: { object: { id: 'in_1', object: 'invoice', customer, status: 'paid', amount_due: 4900, amount_paid: 4900, currency: 'usd', period_start: 1_790_000_000, period_end: 1_792_600_000 } } });
    assert.equal(invoice.status, 200);
    const invoices = await admin.get('/api/v1/billing/invoices');
    assert.deepEqual(invoices.body.invoices.map((i: { id: string; amountPaid: string }) => [i.id, i.amountPaid]), [['in_1', '49.00']]);

    const down = await admin.post('/api/v1/billing/downgrade', {});
    assert.equal(down.status, 200, JSON.stringify(down.body));
    assert.equal(await plan(), 'free');
  });

  it('reports unreported usage to Stripe as meter events, once per operation', async () => {
    configure();
    const operation = await meter(env().db, { workspaceId, kind: 'sparql_query', ref: randomUUID(), quantities: { query: 3 } });
    const first = await reportUsage(env().db, 10_000);
    assert.ok(first.reported >= 1);
    assert.ok((await env().db('metered_operations').where({ id: operation!.id }).first()).reportedAt);
    const again = await reportUsage(env().db, 10_000);
    assert.equal(again.reported, 0);
  });

  it('runs the billing sync as a Temporal workflow from its schedule', async () => {
    configure();
    await meter(env().db, { workspaceId, kind: 'governed_write', ref: randomUUID(), quantities: { action: 1 } });
    assert.equal(await ensureBillingSchedule(env().temporal, env().taskQueue), true);
    assert.equal(await ensureBillingSchedule(env().temporal, env().taskQueue), true, 'creating it again is harmless');
    const schedule = env().temporal.schedule.getHandle(BILLING_SCHEDULE_ID);
    try {
      await schedule.trigger();
      let workflowId: string | undefined;
      for (let i = 0; i < 40 && !workflowId; i += 1) {
        workflowId = (await schedule.describe()).info.recentActions[0]?.action.workflow.workflowId;
        if (!workflowId) await new Promise((resolve) => setTimeout(resolve, 250));
      }
      assert.ok(workflowId, 'the schedule started a workflow');
      const reported = await env().temporal.workflow.getHandle(workflowId).result();
      assert.ok(Number(reported) >= 1);
      assert.equal(Number((await env().db('metered_operations').whereNull('reported_at').whereIn('workspace_id', [workspaceId]).count({ n: '*' }))[0].n), 0);
      const reconciled = await env().db('invoices').where({ workspace_id: workspaceId }).whereNot({ id: 'in_1' });
      assert.ok(reconciled.length >= 1 && reconciled.every((i: { id: string }) => i.id.startsWith('in_')), 'invoices reconciled from Stripe');
    } finally {
      await schedule.delete();
    }
  });
});
