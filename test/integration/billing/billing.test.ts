import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Stripe from 'stripe';
import { billingScheduleId, ensureBillingSchedule, reportUsage } from '../../../services/usage/billing';
import { env } from '../../support/environment';
import { as, newWorkspace, raiseRequestLimits, request } from '../../support/fixtures';
import { useStripeMock } from '../../support/stripe-mock';
import { useProcessSettings } from './process-settings';
import { until } from '../../support/polling';

const SECRET = 'whsec_test_secret';

/**
 * A front for stripe-mock that passes every call on, after asking PostgreSQL from a connection of
 * its own whether a transaction holds the row lock of a watched workspace (FOR UPDATE NOWAIT): the
 * webhook's and the downgrade's transactions take that lock, so a call made while one is open is
 * seen as 'held'.
 */
async function startLockProbingFront(upstream: string, watched: () => string[]) {
  const calls: Array<{ method: string; path: string; workspaceRow: string }> = [];
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const workspaceRow = await env()
      .db.transaction((trx) => trx('workspaces').whereIn('id', watched()).forUpdate().noWait())
      .then(
        () => 'free',
        (error: { code?: string; message: string }) => (error.code === '55P03' ? 'held' : `probe failed: ${error.message}`),
      );
    calls.push({ method: req.method!, path: new URL(req.url!, upstream).pathname, workspaceRow });
    const forwarded = http.request(new URL(req.url!, upstream), { method: req.method, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode!, answer.headers);
      answer.pipe(res);
    });
    forwarded.on('error', (error) => res.destroy(error));
    forwarded.end(Buffer.concat(chunks));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
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
  const now = () => Math.floor(Date.now() / 1000);

  it('verifies the webhook signature, applies subscription and invoice events once, and ignores replays', async () => {
    configure();
    const customer = (await env().db('workspaces').where({ id: workspaceId }).first()).stripeCustomerId;
    assert.ok(customer, 'checkout created the customer');
    const subscription = (status: string, id = `evt_${randomUUID()}`) => ({ id, object: 'event', type: 'customer.subscription.updated', created: now(), data: { object: { id: 'sub_1', object: 'subscription', customer, status } } });

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

    const invoice = await deliver({ id: `evt_${randomUUID()}`, object: 'event', type: 'invoice.paid', created: now(), data: { object: { id: 'in_1', object: 'invoice', customer, status: 'paid', amount_due: 4900, amount_paid: 4900, currency: 'usd', period_start: 1_790_000_000, period_end: 1_792_600_000 } } });
    assert.equal(invoice.status, 200);
    const invoices = await admin.get('/api/v1/billing/invoices');
    assert.deepEqual(invoices.body.invoices.map((i: { id: string; amountPaid: string }) => [i.id, i.amountPaid]), [['in_1', '49.00']]);

    const down = await admin.post('/api/v1/billing/downgrade', {});
    assert.equal(down.status, 200, JSON.stringify(down.body));
    assert.equal(await plan(), 'free');
  });

  /** A workspace of its own with a customer id of its own (stripe-mock answers every customer create with the same id). */
  async function customerWorkspace() {
    const ws = await newWorkspace();
    const customer = `cus_test_${randomUUID().replaceAll('-', '')}`;
    await env().db('workspaces').where({ id: ws.workspaceId }).update({ stripe_customer_id: customer });
    const state = async () => {
      const row = await env().db('workspaces').where({ id: ws.workspaceId }).first();
      return { plan: row.plan, subscription: row.stripeSubscriptionId };
    };
    return { ws, customer, state };
  }
  const T = Math.floor(Date.now() / 1000) - 3600;
  const subscriptionEvent = (customer: string, id: string, type: 'updated' | 'deleted', status: string, created: number, started = T - 86_400) => ({
    id: `evt_${randomUUID()}`, object: 'event', type: `customer.subscription.${type}`, created,
    data: { object: { id, object: 'subscription', customer, status, created: started } },
  });
  const invoiceEvent = (customer: string, id: string, type: string, status: string, amountPaid: number, created: number) => ({
    id: `evt_${randomUUID()}`, object: 'event', type, created,
    data: { object: { id, object: 'invoice', customer, status, amount_due: 4900, amount_paid: amountPaid, currency: 'usd' } },
  });
  async function applied(event: Record<string, unknown>, outcome: string) {
    const res = await deliver(event);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.outcome, outcome, `${(event as { type: string }).type} at ${(event as { created: number }).created}`);
  }

  describe('event order per subscription and invoice', () => {
    it('a late active after the deletion does not restore the plan, and an older event is stale', async () => {
      configure();
      const { customer, state } = await customerWorkspace();
      const sub = `sub_${randomUUID().slice(0, 8)}`;
      await applied(subscriptionEvent(customer, sub, 'updated', 'active', T), 'applied');
      assert.deepEqual(await state(), { plan: 'team', subscription: sub });
      await applied(subscriptionEvent(customer, sub, 'updated', 'past_due', T + 20), 'applied');
      await applied(subscriptionEvent(customer, sub, 'updated', 'unpaid', T + 10), 'stale');
      assert.deepEqual(await state(), { plan: 'team', subscription: sub }, 'past_due still pays; the older unpaid changed nothing');

      await applied(subscriptionEvent(customer, sub, 'deleted', 'canceled', T + 30), 'applied');
      assert.deepEqual(await state(), { plan: 'free', subscription: null });
      await applied(subscriptionEvent(customer, sub, 'updated', 'active', T + 25), 'stale');
      // Even an event timed after the deletion: a canceled subscription never comes back at Stripe.
      await applied(subscriptionEvent(customer, sub, 'updated', 'active', T + 40), 'stale');
      assert.deepEqual(await state(), { plan: 'free', subscription: null });
      const kept = await env().db('stripe_subscriptions').where({ id: sub }).first();
      assert.equal(kept.status, 'canceled');
      assert.equal(kept.stateAt.getTime(), (T + 30) * 1000);
    });

    it('the deletion of a superseded subscription does not downgrade the workspace', async () => {
      configure();
      const { customer, state } = await customerWorkspace();
      const [old, current] = [`sub_old_${randomUUID().slice(0, 8)}`, `sub_new_${randomUUID().slice(0, 8)}`];
      await applied(subscriptionEvent(customer, old, 'updated', 'active', T, T - 86_400), 'applied');
      await applied(subscriptionEvent(customer, current, 'updated', 'active', T + 10, T + 5), 'applied');
      assert.deepEqual(await state(), { plan: 'team', subscription: current }, 'the newer subscription');
      // The old subscription's late news does not move the workspace back to it.
      await applied(subscriptionEvent(customer, old, 'updated', 'active', T + 15, T - 86_400), 'applied');
      assert.deepEqual(await state(), { plan: 'team', subscription: current });
      await applied(subscriptionEvent(customer, old, 'deleted', 'canceled', T + 20, T - 86_400), 'applied');
      assert.deepEqual(await state(), { plan: 'team', subscription: current });
      await applied(subscriptionEvent(customer, current, 'updated', 'incomplete', T + 8, T + 5), 'stale');
      assert.deepEqual(await state(), { plan: 'team', subscription: current });
      await applied(subscriptionEvent(customer, current, 'deleted', 'canceled', T + 30, T + 5), 'applied');
      assert.deepEqual(await state(), { plan: 'free', subscription: null });
    });

    it('events in the same second as the kept state take the object as Stripe has it now', async () => {
      configure();
      const { ws, customer, state } = await customerWorkspace();
      const sub = `sub_${randomUUID().slice(0, 8)}`;
      await applied(subscriptionEvent(customer, sub, 'updated', 'unpaid', T), 'applied');
      assert.deepEqual(await state(), { plan: 'free', subscription: null });
      // Which of two same-second events is newer is unknown: Weft asks Stripe (stripe-mock answers "active").
      const tie = subscriptionEvent(customer, sub, 'updated', 'incomplete', T);
      await applied(tie, 'applied');
      assert.deepEqual(await state(), { plan: 'team', subscription: sub });
      assert.equal((await env().db('stripe_subscriptions').where({ id: sub }).first()).lastEventId, tie.id);

      const invoiceOf = (type: string, status: string, amountPaid: number, created: number) => invoiceEvent(customer, `in_${ws.workspaceId.slice(0, 8)}`, type, status, amountPaid, created);
      const invoice = async () => (await as(ws.apiKey).get('/api/v1/billing/invoices')).body.invoices.map((i: { status: string; amountDue: string; amountPaid: string }) => [i.status, i.amountDue, i.amountPaid]);
      await applied(invoiceOf('invoice.paid', 'paid', 4900, T + 10), 'applied');
      await applied(invoiceOf('invoice.finalized', 'open', 0, T + 5), 'stale');
      assert.deepEqual(await invoice(), [['paid', '49.00', '49.00']], 'the late finalized event did not reopen the paid invoice');
      await applied(invoiceOf('invoice.updated', 'void', 0, T + 10), 'applied');
      assert.deepEqual(await invoice(), [['draft', '10.00', '0.00']], 'stored as stripe-mock has it now');
    });

    it('refuses an event without its created time, changing nothing', async () => {
      configure();
      const { customer, state } = await customerWorkspace();
      const untimed: Record<string, unknown> = subscriptionEvent(customer, 'sub_untimed', 'updated', 'active', T);
      delete untimed.created;
      const res = await deliver(untimed);
      assert.equal(res.status, 422, JSON.stringify(res.body));
      assert.deepEqual(await state(), { plan: 'free', subscription: null });
    });
  });

  describe('Stripe calls with no transaction open', () => {
    let front: Awaited<ReturnType<typeof startLockProbingFront>>;
    const watched: string[] = [];
    before(async () => {
      front = await startLockProbingFront(mock.url, () => watched);
    });
    after(async () => {
      await front?.close();
    });
    const configureThroughFront = () => settings.set({ STRIPE_SECRET_KEY: 'sk_test_123', STRIPE_API_URL: front.url, STRIPE_WEBHOOK_SECRET: SECRET, WEFT_PUBLIC_URL: env().baseUrl });
    /** A workspace whose row lock the front probes before passing each call to Stripe on. */
    async function watchedWorkspace() {
      const workspace = await customerWorkspace();
      watched.push(workspace.ws.workspaceId);
      return workspace;
    }

    it('the webhook fetches a same-second subscription and invoice from Stripe while their workspace is not locked', async () => {
      configureThroughFront();
      const { ws, customer, state } = await watchedWorkspace();
      const [sub, invoiceId] = [`sub_${randomUUID().slice(0, 8)}`, `in_${randomUUID().slice(0, 8)}`];
      await applied(subscriptionEvent(customer, sub, 'updated', 'unpaid', T), 'applied');
      await applied(subscriptionEvent(customer, sub, 'updated', 'incomplete', T), 'applied');
      assert.deepEqual(await state(), { plan: 'team', subscription: sub }, 'as stripe-mock has it now: active');
      await applied(invoiceEvent(customer, invoiceId, 'invoice.paid', 'paid', 4900, T + 10), 'applied');
      await applied(invoiceEvent(customer, invoiceId, 'invoice.updated', 'void', 0, T + 10), 'applied');
      assert.equal((await env().db('invoices').where({ workspace_id: ws.workspaceId }).first()).status, 'draft', 'as stripe-mock has it now');
      assert.deepEqual(front.calls.splice(0), [
        { method: 'GET', path: `/v1/subscriptions/${sub}`, workspaceRow: 'free' },
        { method: 'GET', path: `/v1/invoices/${invoiceId}`, workspaceRow: 'free' },
      ]);
    });

    it('a downgrade cancels at Stripe while the workspace is not locked, then records it', async () => {
      configureThroughFront();
      const { ws, customer, state } = await watchedWorkspace();
      const sub = `sub_${randomUUID().slice(0, 8)}`;
      await applied(subscriptionEvent(customer, sub, 'updated', 'active', T), 'applied');
      const down = await as(ws.apiKey).post('/api/v1/billing/downgrade', {});
      assert.equal(down.status, 200, JSON.stringify(down.body));
      assert.deepEqual(await state(), { plan: 'free', subscription: null });
      assert.equal((await env().db('stripe_subscriptions').where({ id: sub }).first()).status, 'canceled');
      assert.deepEqual(front.calls.splice(0), [{ method: 'DELETE', path: `/v1/subscriptions/${sub}`, workspaceRow: 'free' }]);
    });

    it('racing deliveries converge: the same event twice and another of the same second apply once each', async () => {
      configureThroughFront();
      const { customer, state } = await customerWorkspace();
      const sub = `sub_${randomUUID().slice(0, 8)}`;
      await applied(subscriptionEvent(customer, sub, 'updated', 'unpaid', T), 'applied');
      const [event, other] = [subscriptionEvent(customer, sub, 'updated', 'incomplete', T), subscriptionEvent(customer, sub, 'updated', 'past_due', T)];
      const answers = await Promise.all([deliver(event), deliver(event), deliver(other)]);
      assert.deepEqual(answers.map((res) => res.status), [200, 200, 200]);
      const outcomes = (delivered: Array<(typeof answers)[number]>) => delivered.map((res) => (res.body.duplicate ? 'duplicate' : res.body.outcome)).sort();
      assert.deepEqual(outcomes(answers.slice(0, 2)), ['applied', 'duplicate']);
      assert.equal(answers[2].body.outcome, 'applied');
      assert.deepEqual(await state(), { plan: 'team', subscription: sub }, 'as stripe-mock has it now: active');
      const recorded = await env().db('stripe_events').whereIn('id', [event.id, other.id]).select('id', 'outcome');
      assert.deepEqual(recorded.map((row: { outcome: string }) => row.outcome), ['applied', 'applied']);
      front.calls.splice(0);
    });
  });

  it('reports unreported usage to Stripe as meter events, once per operation', async () => {
    configure();
    const operation = await env().apiDependencies.metering.meter(env().db, { workspaceId, kind: 'sparql_query', ref: randomUUID(), quantities: { query: 3 } });
    const first = await reportUsage(env().dependencies(), 10_000);
    assert.ok(first.reported >= 1);
    assert.ok((await env().db('metered_operations').where({ id: operation!.id }).first()).reportedAt);
    const again = await reportUsage(env().dependencies(), 10_000);
    assert.equal(again.reported, 0);
  });

  it('keeps one billing schedule per task queue, and removes the shared one this installation had', async function () {
    configure();
    const legacy = env().temporal.schedule.getHandle('weft-billing-sync');
    try {
      await env().temporal.schedule.create({ scheduleId: 'weft-billing-sync', spec: { intervals: [{ every: '1 hour' }] }, action: { type: 'startWorkflow', workflowType: 'billingSyncWorkflow', taskQueue: env().taskQueue, args: [] } });
    } catch (error) {
      // Another run on this Temporal server holds the shared id right now: nothing of ours to remove.
      if ((error as Error).name === 'ScheduleAlreadyRunning') this.skip();
      throw error;
    }
    try {
      assert.equal(await ensureBillingSchedule(env().temporal, env().taskQueue), true);
      const own = await env().temporal.schedule.getHandle(billingScheduleId(env().taskQueue)).describe();
      assert.equal(own.action.type === 'startWorkflow' && own.action.taskQueue, env().taskQueue);
      await assert.rejects(legacy.describe(), (error: Error) => error.name === 'ScheduleNotFoundError', 'the shared schedule of this task queue is gone');
    } finally {
      await legacy.delete().catch(() => undefined);
      await env().temporal.schedule.getHandle(billingScheduleId(env().taskQueue)).delete().catch(() => undefined);
    }
  });

  it('runs the billing sync as a Temporal workflow from its schedule', async () => {
    configure();
    await env().apiDependencies.metering.meter(env().db, { workspaceId, kind: 'governed_write', ref: randomUUID(), quantities: { action: 1 } });
    assert.equal(await ensureBillingSchedule(env().temporal, env().taskQueue), true);
    assert.equal(await ensureBillingSchedule(env().temporal, env().taskQueue), true, 'creating it again is harmless');
    const schedule = env().temporal.schedule.getHandle(billingScheduleId(env().taskQueue));
    try {
      await schedule.trigger();
      const workflowId = await until('the schedule started a workflow', async () => (await schedule.describe()).info.recentActions[0]?.action.workflow.workflowId, 10_000, 250);
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
