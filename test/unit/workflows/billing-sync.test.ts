import assert from 'node:assert/strict';
import { Context } from '@temporalio/activity';
import { ActivityFailure, ApplicationFailure, WorkflowFailedError } from '@temporalio/client';
import { UpstreamError } from '../../../core/errors';
import { asActivity } from '../../../activities/as-activity';
import { billingSyncWorkflow } from '../../../workflows';
import { assertSkipped, mockActivities, startWorkflowTestEnvironment, WorkflowTestEnvironment } from '../../support/workflow-test-environment';

// The billing sync (one firing of its hourly Schedule), on Temporal's time-skipping test server with
// mocked activities. The Schedule itself is the server's: the test server has none, and
// test/billing covers it against the dev server.

const stripeAway = () => asActivity(() => Promise.reject(new UpstreamError('stripe_unavailable', 'Stripe answered 503.')));

describe('Billing sync workflow (time-skipping test server, mocked activities)', function () {
  this.timeout(180_000);
  let testing: WorkflowTestEnvironment;
  before(async () => {
    testing = await startWorkflowTestEnvironment(['reportUsage', 'reconcileInvoices']);
  });
  after(async () => {
    await testing?.teardown();
  });

  const sync = (workflowId: string, taskQueue: string) => testing.env.client.workflow.execute(billingSyncWorkflow, { taskQueue, workflowId });

  it('reports usage in batches until one reports nothing, then reconciles invoices, and answers the total', async () => {
    const batches = [3, 2, 0];
    const { activities, calls } = mockActivities({ reportUsage: async () => ({ reported: batches.shift()! }), reconcileInvoices: async () => ({ invoices: 1 }) });
    assert.equal(await testing.withActivities(activities, (taskQueue) => sync('billing-batches', taskQueue)), 5);
    assert.deepEqual(calls.map((call) => call.name), ['reportUsage', 'reportUsage', 'reportUsage', 'reconcileInvoices']);
  });

  it('stops at 20 batches in one sync (the next firing reports the rest), and still reconciles', async () => {
    const { activities, calls } = mockActivities({ reportUsage: async () => ({ reported: 500 }), reconcileInvoices: async () => ({ invoices: 0 }) });
    assert.equal(await testing.withActivities(activities, (taskQueue) => sync('billing-capped', taskQueue)), 20 * 500);
    assert.equal(calls.filter((call) => call.name === 'reportUsage').length, 20);
    assert.equal(calls.at(-1)!.name, 'reconcileInvoices');
  });

  it('retries a report while Stripe is away, 10 s then 20 s apart in skipped time', async () => {
    const { activities, calls } = mockActivities({
      reportUsage: async () => (Context.current().info.attempt < 3 ? stripeAway() : { reported: 0 }),
      reconcileInvoices: async () => ({ invoices: 0 }),
    });
    const clocked = await testing.clocked(activities, (taskQueue) => sync('billing-retried', taskQueue));
    assert.equal(clocked.result, 0);
    assert.deepEqual(calls.map((call) => call.name), ['reportUsage', 'reportUsage', 'reportUsage', 'reconcileInvoices']);
    assertSkipped(clocked, 10_000 + 20_000, 'the backoff between the report\'s attempts');
  });

  it('out of retries (five attempts), fails without reconciling', async () => {
    const { activities, calls } = mockActivities({ reportUsage: stripeAway, reconcileInvoices: async () => ({ invoices: 0 }) });
    const clocked = await testing.clocked(activities, (taskQueue) => sync('billing-failing', taskQueue).then(() => assert.fail('the sync succeeded'), (error: unknown) => error));
    const failure = clocked.result;
    assert.ok(failure instanceof WorkflowFailedError && failure.cause instanceof ActivityFailure && failure.cause.cause instanceof ApplicationFailure, String(failure));
    assert.equal(failure.cause.cause.type, 'stripe_unavailable');
    assert.deepEqual(calls.map((call) => call.name), Array(5).fill('reportUsage'));
    assertSkipped(clocked, 10_000 + 20_000 + 40_000 + 80_000, 'the backoff between five attempts');
  });
});
