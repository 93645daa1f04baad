import assert from 'node:assert/strict';
import { Project } from '../../../../db/models';
import { createPipelineSchedule, deletePipelineSchedule, triggerPipelineSchedule } from '../../../../services/pipelines/pipeline-schedules';
import { principalOfKey } from '../../../../services/tenancy/api-keys';
import { startStripeMock } from '../../../../scripts/infra/stripe-mock';
import { env } from '../../../support/environment';
import { as, keyIdOf, newKey } from '../../../support/fixtures';
import { activeQueryJob, bind, customerOntology, ontologyTenant, seededTable } from '../../../support/ontology';
import { waitForRun } from '../../../support/pipelines';
import { action, approveAsKeyIsRevoked, currentSnapshot, managedTable, memberKey, putPolicy, writeTenant } from '../../../support/source-writes';
import { recording, save, usePipelines } from './save-history';

describe('Recording the other workflows\' histories', function () {
  this.timeout(180_000);
  const fixture = usePipelines();

  recording('scheduled-launch', async () => {
    const { db, temporal: client } = env();
    const { t } = fixture;
    const pipelineId = await fixture.pipeline('recorded_scheduled');
    const principal = await principalOfKey(env(), db, t.ws.workspaceId, await keyIdOf(t.key));
    const project = (await Project.query(db).findById(t.projectId))!;
    const ctx = { db, deps: env().dependencies(), principal, project, door: 'mcp' as const, requestId: 'record-histories' };
    const schedule = await createPipelineSchedule(ctx, pipelineId, { intervalSeconds: 3600, paused: true });
    try {
      await triggerPipelineSchedule(ctx, pipelineId, schedule.id);
      let workflowId: string | undefined;
      for (let i = 0; i < 80 && !workflowId; i += 1) {
        workflowId = (await client.schedule.getHandle(schedule.temporalScheduleId).describe()).info.recentActions[0]?.action.workflow.workflowId;
        if (!workflowId) await new Promise((resolve) => setTimeout(resolve, 250));
      }
      assert.ok(workflowId, 'the schedule started its launch workflow');
      const runId = (await client.workflow.getHandle(workflowId).result()) as string;
      assert.equal((await waitForRun(t, runId)).status, 'succeeded');
      await save('scheduled-launch', workflowId);
    } finally {
      await deletePipelineSchedule(ctx, pipelineId, schedule.id);
    }
  });

  recording('write-approval', async () => {
    const w = await writeTenant();
    for (const decision of ['approve', 'reject'] as const) {
      const endpointId = await managedTable(w);
      await putPolicy(w, endpointId, { approval: { required: true, approvers: 1 } });
      const body = action(w, await currentSnapshot(w.writer, endpointId), { operation: 'upsert', rows: [{ id: 1, name: 'Ada' }] });
      const proposed = await w.writer.post(`/api/v1/data-endpoints/${endpointId}/writes`, body);
      assert.equal(proposed.status, 202, JSON.stringify(proposed.body));
      const decided = await (await memberKey(w)).client.post(`/api/v1/data-endpoints/${endpointId}/writes/${body.actionId}/${decision}`, {});
      assert.equal(decided.status, 200, JSON.stringify(decided.body));
      await save(decision === 'approve' ? 'write-approval-applied' : 'write-approval-rejected', proposed.body.writeAction.workflowId);
    }
    const endpointId = await managedTable(w);
    await putPolicy(w, endpointId, { approval: { required: true, approvers: 1, timeoutSeconds: 5 } });
    const body = action(w, await currentSnapshot(w.writer, endpointId), { operation: 'upsert', rows: [{ id: 1, name: 'Ada' }] });
    const proposed = await w.writer.post(`/api/v1/data-endpoints/${endpointId}/writes`, body);
    assert.equal(proposed.status, 202, JSON.stringify(proposed.body));
    await save('write-approval-expired', proposed.body.writeAction.workflowId);
  });

  recording('write-approval-recounted', async () => {
    // The approving key is revoked as the write applies: the apply finds the approvals short, the
    // workflow waits again (patch wait-again-when-approvals-lapse), and another approval applies it.
    const w = await writeTenant();
    const endpointId = await managedTable(w);
    await putPolicy(w, endpointId, { approval: { required: true, approvers: 1 } });
    const body = action(w, await currentSnapshot(w.writer, endpointId), { operation: 'upsert', rows: [{ id: 1, name: 'Ada' }] });
    const proposed = await w.writer.post(`/api/v1/data-endpoints/${endpointId}/writes`, body);
    assert.equal(proposed.status, 202, JSON.stringify(proposed.body));
    const url = `/api/v1/data-endpoints/${endpointId}/writes/${body.actionId}`;
    const lapsed = await approveAsKeyIsRevoked(await memberKey(w), url);
    assert.equal(lapsed.body.writeAction?.status, 'pending_approval', JSON.stringify(lapsed.body));
    const applied = await (await memberKey(w)).client.post(`${url}/approve`, {});
    assert.equal(applied.body.writeAction?.status, 'applied', JSON.stringify(applied.body));
    await save('write-approval-recounted', proposed.body.writeAction.workflowId);
  });

  recording('published-query', async () => {
    const o = await ontologyTenant();
    const packageId = await customerOntology(o);
    const customers = await seededTable(o, [{ id: 1, full_name: 'Ada', years: 36 }]);
    await bind(o, { ontologyPackageId: packageId, termId: 'Customer', dataEndpointId: customers, mapping: { subjectTemplate: 'https://example.com/c/{id}', properties: { name: 'full_name', age: 'years' } } });
    const author = as(await newKey(o.ws, { scopes: ['queries:read', 'queries:write', 'queries:publish', 'queries:execute'] }));
    const base = `/api/v1/projects/${o.ws.projectId}`;
    const created = await author.post(`${base}/ontology/queries`, {
      name: 'recorded',
      sparql: 'SELECT ?name WHERE { ?c a :Customer ; :name ?name }',
      inputSchema: { type: 'object', additionalProperties: false, properties: {} },
      outputSchema: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const release = await author.post(`${base}/ontology/queries/${created.body.query.id}/releases`, { expectedQueryVersionId: created.body.query.version.id });
    assert.equal(release.status, 201, JSON.stringify(release.body));
    await save('publish-release', release.body.release.workflowId);
    // A job whose query is gone: the workflow runs out of retries and fails the job (the job path
    // of a real execution needs a query slower than the sync budget, see published-queries.test.ts).
    const job = await activeQueryJob(o, await newKey(o.ws, { scopes: ['queries:execute'] }));
    await env().temporal.workflow.execute('queryJobWorkflow', { workflowId: job.workflowId, taskQueue: env().taskQueue, args: [{ jobId: job.id }] });
    await save('query-job-out-of-retries', job.workflowId);
  });

  recording('billing-sync', async () => {
    const mock = await startStripeMock();
    const saved = { key: process.env.STRIPE_SECRET_KEY, url: process.env.STRIPE_API_URL };
    Object.assign(process.env, { STRIPE_SECRET_KEY: 'sk_test_123', STRIPE_API_URL: mock.url });
    try {
      const workflowId = `record-billing-sync-${Date.now()}`;
      await env().temporal.workflow.execute('billingSyncWorkflow', { workflowId, taskQueue: env().taskQueue });
      await save('billing-sync', workflowId);
    } finally {
      for (const [name, value] of [['STRIPE_SECRET_KEY', saved.key], ['STRIPE_API_URL', saved.url]] as const) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
      await mock.stop();
    }
  });

  recording('system-check', async () => {
    const workflowId = `record-system-check-${Date.now()}`;
    await env().temporal.workflow.execute('systemCheckWorkflow', { workflowId, taskQueue: env().taskQueue, args: [{}] });
    await save('system-check', workflowId);
  });
});
