import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { env } from '../../support/environment';
import { as } from '../../support/fixtures';
import { runAdmin } from '../../support/processes';
import { createPipeline, EventsApi, eventsSource, launch, linearDocument, PipelineTenant, pipelineTenant, tableDestination, waitForRun } from '../../support/pipelines';
import { useProcessSettings } from './process-settings';

const admin = (...args: string[]) => runAdmin(args);
/** Stripe configured, as far as the credit limit's default is concerned (no Stripe call is made here). */
const WITH_STRIPE = { STRIPE_SECRET_KEY: 'sk_test_123' };

describe('Self-hosted credit: WEFT_CREDIT_LIMIT and admin plan set', function () {
  this.timeout(180_000);
  const settings = useProcessSettings(['STRIPE_SECRET_KEY', 'WEFT_CREDIT_LIMIT']);
  let api: EventsApi;
  before(async () => {
    api = await new EventsApi().start();
    api.records = EventsApi.events(20);
  });
  after(() => api.close());

  /** A new tenant whose free plan's credit for this month is already spent (6.00 of 5.00). */
  async function spentTenant(): Promise<{ t: PipelineTenant; pipelineId: string; execute(): Promise<{ status: number; body: any }> }> {
    const t = await pipelineTenant(api.baseUrl);
    const destination = await tableDestination(t, `t_${randomUUID().slice(0, 8)}`, ['id']);
    const pipeline = await createPipeline(t, linearDocument(await eventsSource(t, api), destination, { writeMode: 'upsert' }));
    await env().apiDependencies.metering.meter(env().db, { workspaceId: t.ws.workspaceId, kind: 'pipeline_run', ref: randomUUID(), quantities: { record: 60_000 } });
    return { t, pipelineId: pipeline.id, execute: () => t.client.post(`/api/v1/projects/${t.projectId}/pipelines/${pipeline.id}/execute`) };
  }

  const billing = async (t: PipelineTenant) => (await as(t.ws.apiKey).get('/api/v1/usage/billing')).body.billing;

  it('without Stripe, meters past the free credit without pausing: runs launch and are metered', async () => {
    settings.set({});
    const { t, pipelineId } = await spentTenant();
    const run = await launch(t, pipelineId);
    assert.equal((await waitForRun(t, run.id)).status, 'succeeded');
    const usage = (await as(t.ws.apiKey).get('/api/v1/usage')).body.usage;
    const runs = usage.byKind.find((k: { kind: string }) => k.kind === 'pipeline_run');
    assert.equal(runs.operations, 2, 'the spent credit and the run after it, both recorded');
    assert.equal(runs.amount, '6.012', '60,000 records, then a run of 20 records (0.01 + 20 × 0.0001)');
    const { plan, creditLimit, used, remainingCredit, paidWorkPaused } = await billing(t);
    assert.deepEqual({ plan, creditLimit, used, remainingCredit, paidWorkPaused }, { plan: 'free', creditLimit: 'none', used: '6.012', remainingCredit: '0', paidWorkPaused: false });
  });

  it('with Stripe the free credit pauses paid work, unless WEFT_CREDIT_LIMIT=none; WEFT_CREDIT_LIMIT=plan pauses without Stripe', async () => {
    settings.set(WITH_STRIPE);
    const { t, execute } = await spentTenant();
    const refused = await execute();
    assert.equal(refused.status, 402, JSON.stringify(refused.body));
    assert.equal(refused.body.code, 'usage_limit_reached');
    assert.equal((await billing(t)).paidWorkPaused, true);

    settings.set({ ...WITH_STRIPE, WEFT_CREDIT_LIMIT: 'none' });
    assert.equal((await execute()).status, 202);
    assert.equal((await billing(t)).creditLimit, 'none');

    settings.set({ WEFT_CREDIT_LIMIT: 'plan' });
    assert.equal((await execute()).status, 402);
  });

  /** Runs the admin CLI and waits until the API of this process has heard of the workspace's change (NOTIFY). */
  async function planSet(workspaceId: string, ...args: string[]) {
    let heard!: () => void;
    const notified = new Promise<void>((resolve) => (heard = resolve));
    const stop = env().apiDependencies.definitions.onChange((changed) => (changed === workspaceId || changed === undefined) && heard());
    try {
      const result = await admin('plan', 'set', '--workspace', workspaceId, ...args, '--json');
      assert.equal(result.code, 0, result.stderr);
      await notified;
      return JSON.parse(result.stdout);
    } finally {
      stop();
    }
  }

  it('admin plan set lifts the pause for one workspace (credit limit none, or a plan with overage) and puts it back', async () => {
    settings.set(WITH_STRIPE);
    const { t, execute } = await spentTenant();
    const other = await spentTenant();
    assert.equal((await execute()).status, 402);

    const unlimited = await planSet(t.ws.workspaceId, '--credit-limit', 'none');
    assert.deepEqual(unlimited, { workspaceId: t.ws.workspaceId, plan: 'free', creditLimit: 'none', pausesPaidWork: false });
    const run = (await execute()).body.run;
    assert.ok(run?.id, 'the launch passes');
    assert.equal((await waitForRun(t, run.id)).status, 'succeeded');
    assert.equal((await other.execute()).status, 402, 'another workspace still pauses');
    const metered = await env().db('metered_operations').where({ workspaceId: t.ws.workspaceId, kind: 'pipeline_run', operationRef: run.id });
    assert.equal(metered.length, 1, 'the run past the credit is metered');

    assert.deepEqual(await planSet(t.ws.workspaceId, '--credit-limit', 'default'), { workspaceId: t.ws.workspaceId, plan: 'free', creditLimit: 'default', pausesPaidWork: true });
    assert.equal((await execute()).status, 402, 'back to the installation’s default');

    assert.deepEqual(await planSet(t.ws.workspaceId, '--plan', 'team'), { workspaceId: t.ws.workspaceId, plan: 'team', creditLimit: 'default', pausesPaidWork: false });
    assert.equal((await execute()).status, 202, 'the team plan bills overage instead of pausing');
    assert.equal((await billing(t)).plan, 'team');
  });

  it('admin plan set refuses a call that sets nothing, an unknown plan or credit limit, and an unknown workspace', async () => {
    const { t } = await spentTenant();
    for (const args of [[], ['--plan', 'gold'], ['--credit-limit', 'unlimited'], ['--plan']]) {
      const result = await admin('plan', 'set', '--workspace', t.ws.workspaceId, ...args);
      assert.notEqual(result.code, 0, args.join(' '));
      assert.match(result.stderr, /admin: \S/);
    }
    const missing = await admin('plan', 'set', '--workspace', randomUUID(), '--plan', 'team');
    assert.notEqual(missing.code, 0);
    assert.match(missing.stderr, /No workspace/);
    const stored = await env().db('workspaces').where({ id: t.ws.workspaceId }).first();
    assert.deepEqual([stored.plan, stored.creditLimit], ['free', null]);
  });
});
