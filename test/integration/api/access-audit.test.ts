import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import { NativeConnection, Worker } from '@temporalio/worker';
import { toolRefusal } from '../../support/mcp-client';
import { createActivities } from '../../../activities';
import { temporalSettings } from '../../../core/temporal-config';
import { workflowBundlePath } from '../../../worker/workflow-bundle';
import { createPipelineRunActivities } from '../../../activities/pipeline-runs';
import { PipelineRun, PipelineSchedule, Project, QueryJob } from '../../../db/models';
import { runQueryJobAsItsKey } from '../../../services/ontology/query-jobs';
import { workerDependencies } from '../../../services/operations/context';
import { commitRunAsItsLauncher, extractAsItsLauncher } from '../../../services/pipelines/run-commit';
import { createProject } from '../../../services/tenancy/projects';
import { addMember, removeMember } from '../../../services/tenancy/workspaces';
import { env } from '../../support/environment';
import { as, keyIdOf, newKey, request, revokeKey } from '../../support/fixtures';
import { activeQueryJob, bind, customerOntology, OntologyTenant, ontologyTenant, seededTable } from '../../support/ontology';
import { createPipeline, EventsApi, eventsSource, linearDocument, pipelineTenant, PipelineTenant, tableDestination } from '../../support/pipelines';
import { tableRows } from '../../support/source-writes';

// The gaps an audit of "operations declared once, one data guard, work acts as its key" found,
// each closed: every case here failed before its fix (a key got through, or later work ran
// unguarded or was failed for a passing database hiccup).

const PREFIXES = (baseIri: string) => `PREFIX : <${baseIri}> `;
const CUSTOMER_MAPPING = { subjectTemplate: 'https://example.com/customers/{id}', properties: { name: 'full_name', age: 'years' } };


/** Another member of the workspace, with a key of these layers. */
async function otherMemberKey(t: OntologyTenant, input: { scopes: string[]; readPermissions?: string[] }): Promise<{ key: string; memberId: string }> {
  const member = await addMember(env().db, t.ws.workspaceId, { name: `member-${randomUUID().slice(0, 6)}`, role: 'member' });
  return { key: await newKey(t.ws, input, member.id), memberId: member.id };
}

async function snapshotOf(t: OntologyTenant, endpointId: string): Promise<{ id: string; version: string }> {
  const res = await t.client.get(`/api/v1/data-endpoints/${endpointId}/snapshot`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return { id: res.body.snapshot.id, version: res.body.snapshot.version };
}

/** A governed write action body (SPEC 2.9) against the endpoint's current snapshot. */
async function writeBody(t: OntologyTenant, endpointId: string, input: Record<string, unknown>) {
  return { actionId: randomUUID(), projectId: t.ws.projectId, idempotencyKey: `audit-${randomUUID()}`, input: { contractVersion: 1, expectedSourceSnapshot: await snapshotOf(t, endpointId), ...input } };
}

describe('Access gaps found by the audit, closed', function () {
  this.timeout(120_000);

  describe('a named read grant survives attempts to remove or move the binding that carries it', () => {
    let t: OntologyTenant;
    let packageId: string;
    let open: string;
    before(async () => {
      t = await ontologyTenant();
      packageId = await customerOntology(t);
      open = await seededTable(t, [{ id: 2, full_name: 'Bob', years: 40 }]);
    });
    /** An endpoint whose only binding gates it with customers.read. */
    const gated = async () => {
      const endpointId = await seededTable(t, [{ id: 1, full_name: 'Ada', years: 36 }]);
      const bindingId = await bind(t, { ontologyPackageId: packageId, termId: 'Customer', dataEndpointId: endpointId, mapping: CUSTOMER_MAPPING, requiredReadPermissions: ['customers.read'] });
      return { endpointId, bindingId };
    };
    const ungranted = () => newKey(t.ws, { scopes: ['bindings:write', 'bindings:read', 'data:read'] });
    const recordsStatus = async (key: string, endpointId: string) => (await as(key).get(`/api/v1/data-endpoints/${endpointId}/records`)).status;

    it('refuses to delete the gating binding to a bindings:write key without the grant, and the data stays protected', async () => {
      const { endpointId, bindingId } = await gated();
      const key = await ungranted();
      assert.equal(await recordsStatus(key, endpointId), 403, 'the grant protects the records');
      const res = await as(key).delete(`${t.base}/read-bindings/${bindingId}`);
      assert.equal(res.status, 403, JSON.stringify(res.body));
      assert.equal(res.body.code, 'read_grant_required');
      assert.deepEqual(res.body.missingReadPermissions, ['customers.read']);
      assert.equal((await t.client.get(`${t.base}/read-bindings/${bindingId}`)).status, 200, 'the binding is still there');
      assert.equal(await recordsStatus(key, endpointId), 403, 'and the records are still protected');
    });

    it('refuses to move the gating binding to another endpoint to a key without the grant of the endpoint it covered', async () => {
      const { endpointId, bindingId } = await gated();
      const key = await ungranted();
      const res = await as(key).put(`${t.base}/read-bindings/${bindingId}`, { ontologyPackageId: packageId, termId: 'Customer', dataEndpointId: open, mapping: CUSTOMER_MAPPING });
      assert.equal(res.status, 403, JSON.stringify(res.body));
      assert.equal(res.body.code, 'read_grant_required');
      const binding = (await t.client.get(`${t.base}/read-bindings/${bindingId}`)).body.binding;
      assert.equal(binding.dataEndpointId, endpointId, 'the binding still covers its endpoint');
      assert.deepEqual(binding.requiredReadPermissions, ['customers.read']);
      assert.equal(await recordsStatus(key, endpointId), 403);
    });

    it('refuses a restricted key without shared-resource access to delete a binding over a shared endpoint', async () => {
      const { bindingId } = await gated();
      const key = await newKey(t.ws, { scopes: ['bindings:write'], projectIds: [t.ws.projectId], workspaceResources: false, readPermissions: ['customers.read'] });
      const res = await as(key).delete(`${t.base}/read-bindings/${bindingId}`);
      assert.equal(res.status, 403, JSON.stringify(res.body));
      assert.equal(res.body.code, 'workspace_resources_denied');
      assert.equal((await t.client.get(`${t.base}/read-bindings/${bindingId}`)).status, 200);
    });

    it('lets a key holding the grant move and delete it', async () => {
      const { bindingId } = await gated();
      const moved = await t.client.put(`${t.base}/read-bindings/${bindingId}`, { ontologyPackageId: packageId, termId: 'Customer', dataEndpointId: open, mapping: CUSTOMER_MAPPING });
      assert.equal(moved.status, 200, JSON.stringify(moved.body));
      assert.equal((await t.client.delete(`${t.base}/read-bindings/${bindingId}`)).status, 204);
    });
  });

  describe('governed writes show existing record values only to keys that may read them', () => {
    let t: OntologyTenant;
    let packageId: string;
    let customers: string;
    const writes = (endpointId: string) => `/api/v1/data-endpoints/${endpointId}/writes`;
    before(async () => {
      t = await ontologyTenant();
      packageId = await customerOntology(t);
      customers = await seededTable(t, [{ id: 1, full_name: 'Ada', years: 36 }, { id: 2, full_name: 'Bob', years: 40 }]);
      await bind(t, { ontologyPackageId: packageId, termId: 'Customer', dataEndpointId: customers, mapping: CUSTOMER_MAPPING, requiredReadPermissions: ['customers.read'] });
      assert.equal((await as(t.ws.apiKey).put(`/api/v1/data-endpoints/${customers}/write-policy`, { allowedOperations: ['append', 'upsert', 'update', 'delete'] })).status, 201);
    });

    it('refuses a dry run (whose change set shows the rows before) to a key without data:read, and to one without the endpoint’s grant', async () => {
      const noRead = await newKey(t.ws, { scopes: ['data:write', 'data:delete'], readPermissions: ['customers.read'] });
      let res = await as(noRead).post(`${writes(customers)}?dryRun=true`, await writeBody(t, customers, { operation: 'upsert', rows: [{ id: 1, full_name: 'Ada L.' }] }));
      assert.equal(res.status, 403, JSON.stringify(res.body));
      assert.equal(res.body.code, 'insufficient_scope');
      assert.deepEqual(res.body.requiredScopes, ['data:read']);
      assert.equal(JSON.stringify(res.body).includes('Ada'), false, 'no record value came back');

      const noGrant = await newKey(t.ws, { scopes: ['data:read', 'data:write', 'data:delete'] });
      res = await as(noGrant).post(`${writes(customers)}?dryRun=true`, await writeBody(t, customers, { operation: 'delete', where: [{ field: 'years', op: 'gt', value: 30 }] }));
      assert.equal(res.status, 403, JSON.stringify(res.body));
      assert.equal(res.body.code, 'read_grant_required');
      assert.equal(JSON.stringify(res.body).includes('Bob'), false);
    });

    it('refuses updates and deletes (which select existing records) to such keys, and writes nothing; appends still go through', async () => {
      const noRead = await newKey(t.ws, { scopes: ['data:write', 'data:delete'], readPermissions: ['customers.read'] });
      const noGrant = await newKey(t.ws, { scopes: ['data:read', 'data:write', 'data:delete'] });
      let res = await as(noRead).post(writes(customers), await writeBody(t, customers, { operation: 'update', where: [{ field: 'years', op: 'gt', value: 30 }], set: { full_name: 'X' } }));
      assert.equal(res.status, 403, JSON.stringify(res.body));
      assert.equal(res.body.code, 'insufficient_scope');
      res = await as(noGrant).post(writes(customers), await writeBody(t, customers, { operation: 'delete', where: [{ field: 'id', op: 'eq', value: 2 }] }));
      assert.equal(res.status, 403, JSON.stringify(res.body));
      assert.equal(res.body.code, 'read_grant_required');
      assert.deepEqual((await tableRows(t.client, customers)).map((row) => row.full_name), ['Ada', 'Bob'], 'nothing was written');
      // An append shows nothing that was there: data:write is enough, as before.
      res = await as(noRead).post(writes(customers), await writeBody(t, customers, { operation: 'append', rows: [{ id: 3, full_name: 'Cy', years: 30 }] }));
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.writeAction.status, 'applied');
    });

    it('withholds the rows before from action views for keys that may not read them, rather than refusing the view', async () => {
      const endpoint = await seededTable(t, [{ id: 1, full_name: 'Ada', years: 36 }]);
      await bind(t, { ontologyPackageId: packageId, termId: 'Customer', dataEndpointId: endpoint, mapping: CUSTOMER_MAPPING, requiredReadPermissions: ['customers.read'] });
      assert.equal((await as(t.ws.apiKey).put(`/api/v1/data-endpoints/${endpoint}/write-policy`, { allowedOperations: ['upsert'], approval: { required: true, approvers: 1 } })).status, 201);
      const proposer = await newKey(t.ws, { scopes: ['data:write', 'policy:propose'] });
      const body = await writeBody(t, endpoint, { operation: 'upsert', rows: [{ id: 1, full_name: 'Ada L.' }, { id: 9, full_name: 'Nia' }] });
      const proposed = await as(proposer).post(writes(endpoint), body);
      assert.equal(proposed.status, 202, JSON.stringify(proposed.body));
      // The proposer holds no data:read: its own answer does not show Ada's stored row either.
      const own = proposed.body.writeAction.changeSet;
      // Nor which of its keys existed: added against changed would say it.
      assert.deepEqual(own.counts, { affected: 2 });
      assert.deepEqual(own.changed, []);
      assert.deepEqual(own.added, []);
      assert.equal(own.recordsWithheld, true);
      assert.equal(JSON.stringify(proposed.body).includes('"years"'), false, 'no stored field came back');

      const url = `${writes(endpoint)}/${body.actionId}`;
      for (const viewer of [
        await newKey(t.ws, { scopes: ['policy:read'] }),
        await newKey(t.ws, { scopes: ['policy:read', 'data:read'] }),
        (await otherMemberKey(t, { scopes: ['policy:approve', 'data:read'] })).key,
      ]) {
        const one = await as(viewer).get(url);
        assert.equal(one.status, 200, JSON.stringify(one.body));
        assert.deepEqual(one.body.writeAction.changeSet.changed, [], 'the row before is withheld');
        assert.equal(one.body.writeAction.changeSet.recordsWithheld, true);
        assert.deepEqual(one.body.writeAction.changeSet.counts, { affected: 2 }, 'how many it touches stays, not which existed');
        assert.deepEqual(one.body.writeAction.changeSet.added, [], 'which keys are new is withheld too');
        const listed = await as(viewer).get(writes(endpoint));
        assert.equal(listed.status, 200, JSON.stringify(listed.body));
        assert.equal(JSON.stringify(listed.body).includes('"years"'), false, 'the listing withholds them too');
      }
      const reader = await newKey(t.ws, { scopes: ['policy:read', 'data:read'], readPermissions: ['customers.read'] });
      const full = (await as(reader).get(url)).body.writeAction.changeSet;
      assert.deepEqual(full.changed[0].before, { id: 1, full_name: 'Ada', years: 36 }, 'a key that may read the records sees them');
      assert.equal(full.recordsWithheld, undefined);
      assert.deepEqual(full.counts, { added: 1, changed: 1, removed: 0 });
    });
  });

  describe('async query jobs', () => {
    const activeJob = activeQueryJob;

    it('leaves a job active, for the activity to retry, when the database loses a race or is away', async () => {
      const t = await ontologyTenant();
      const job = await activeJob(t, await newKey(t.ws, { scopes: ['queries:execute'] }));
      // A pool of its own (same connections), so only this job's project lookup meets the failure.
      const db = env().db.withUserParams({ audit: job.id });
      const original = Project.query;
      for (const failure of [{ code: '40001', message: 'could not serialize access due to concurrent update' }, { code: '57P01', message: 'terminating connection due to administrator command' }]) {
        Project.query = function (this: typeof Project, ...args: Parameters<typeof Project.query>) {
          if (args[0] === db) throw Object.assign(new Error(failure.message), failure);
          return original.apply(this, args);
        } as typeof Project.query;
        try {
          await assert.rejects(runQueryJobAsItsKey(workerDependencies({ db, encryptionKey: env().encryptionKey }), job.id), (error: { code?: string }) => ['concurrent_change', 'database_unavailable'].includes(error.code ?? ''));
        } finally {
          Project.query = original;
        }
        const stored = (await QueryJob.query(env().db).findById(job.id))!;
        assert.equal(stored.status, 'active', `${failure.code} is not a refusal: the job waits for the retry`);
        assert.equal(stored.error, null);
      }
    });

    it('fails a job whose activity ran out of retries, with the last error recorded, instead of leaving it active', async function () {
      this.timeout(120_000);
      const t = await ontologyTenant();
      const job = await activeJob(t, await newKey(t.ws, { scopes: ['queries:execute'] }));
      // The real workflow and activities on a queue of their own, but a job activity that meets a
      // database away on every attempt (as the test above does once): the retry policy gives up.
      const taskQueue = `query-job-retries-${randomUUID()}`;
      const connection = await NativeConnection.connect({ address: process.env.TEMPORAL_ADDRESS! });
      let attempts = 0;
      const worker = await Worker.create({
        connection,
        namespace: temporalSettings().namespace,
        taskQueue,
        workflowBundle: { codePath: (await workflowBundlePath()).codePath },
        activities: {
          ...createActivities(env().dependencies()),
          runQueryJob: async () => {
            attempts += 1;
            throw ApplicationFailure.retryable('terminating connection due to administrator command', 'database_unavailable');
          },
        },
      });
      const running = worker.run();
      try {
        const status = await env().temporal.workflow.execute('queryJobWorkflow', { taskQueue, workflowId: job.workflowId, args: [{ jobId: job.id }] });
        assert.equal(status, 'failed');
      } finally {
        worker.shutdown();
        await running;
        await connection.close();
      }
      assert.equal(attempts, 3, 'every attempt of the retry policy was made first');
      const stored = (await QueryJob.query(env().db).findById(job.id))!;
      assert.equal(stored.status, 'failed');
      assert.equal(stored.error?.code, 'query_job_failed');
      assert.match(stored.error!.message, /terminating connection/);
    });

    it('fails a job whose key’s creator has left the workspace, with the reason recorded', async () => {
      const t = await ontologyTenant();
      const leaver = await addMember(env().db, t.ws.workspaceId, { name: 'leaver', role: 'member' });
      const job = await activeJob(t, await newKey(t.ws, { scopes: ['queries:execute'] }, leaver.id));
      await removeMember(env().db, t.ws.workspaceId, leaver.id);
      const outcome = await runQueryJobAsItsKey(workerDependencies(env()), job.id);
      assert.equal(outcome.status, 'failed');
      const stored = (await QueryJob.query(env().db).findById(job.id))!;
      assert.equal((stored.error as { code: string }).code, 'actor_not_accountable');
    });
  });

  describe('later work acts as its key', () => {
    let p: PipelineTenant;
    let pipelineId: string;
    before(async () => {
      p = await pipelineTenant('http://127.0.0.1:9/');
      const source = await eventsSource(p, { baseUrl: 'http://127.0.0.1:9/' } as EventsApi);
      pipelineId = (await createPipeline(p, linearDocument(source, await tableDestination(p, `audit_${Date.now()}`, ['id'])))).id;
    });

    const schedule = (createdByApiKeyId: string | null, createdByMemberId = p.ws.memberId) => PipelineSchedule.query(env().db).insertAndFetch({
      workspaceId: p.ws.workspaceId,
      projectId: p.projectId,
      pipelineId,
      spec: { intervalSeconds: 3600 },
      temporalScheduleId: `audit-${randomUUID()}`,
      createdByMemberId,
      createdByApiKeyId,
    } as never);
    const runsOf = (scheduleId: string) => PipelineRun.query(env().db).where({ scheduleId });

    it('records a refused run, and launches nothing, for a schedule made before schedules had keys', async () => {
      const made = await schedule(null);
      const launch = await createPipelineRunActivities(workerDependencies(env())).createScheduledRun({ scheduleId: made.id });
      assert.equal(launch, null, 'nothing is launched');
      const runs = await runsOf(made.id);
      assert.equal(runs.length, 1, 'the refusal is recorded as a run');
      assert.equal(runs[0].status, 'failed');
      assert.equal(runs[0].error?.code, 'schedule_without_key');
      assert.match(runs[0].error!.message, /recreate/);
    });

    it('records a refused run when the schedule’s key has lost its member, with the reason', async () => {
      const leaver = await addMember(env().db, p.ws.workspaceId, { name: 'leaver', role: 'member' });
      const key = await newKey(p.ws, { scopes: ['pipelines:execute'] }, leaver.id);
      const made = await schedule(await keyIdOf(key), leaver.id);
      await removeMember(env().db, p.ws.workspaceId, leaver.id);
      assert.equal(await createPipelineRunActivities(workerDependencies(env())).createScheduledRun({ scheduleId: made.id }), null);
      const runs = await runsOf(made.id);
      assert.equal(runs.length, 1, 'the owner sees why nothing ran');
      assert.equal(runs[0].status, 'failed');
      assert.equal(runs[0].error?.code, 'actor_not_accountable');
    });

    it('launches as the schedule’s key when it may', async () => {
      const key = await newKey(p.ws, { scopes: ['pipelines:execute'] });
      const made = await schedule(await keyIdOf(key));
      const launch = await createPipelineRunActivities(workerDependencies(env())).createScheduledRun({ scheduleId: made.id });
      assert.ok(launch, 'a run was launched');
      const [run] = await runsOf(made.id);
      assert.equal(run.status, 'queued');
      assert.equal(run.apiKeyId, await keyIdOf(key));
      await PipelineRun.query(env().db).patch({ status: 'canceled' }).where({ id: run.id });
    });

    it('never reads for, nor commits, a run that has no key to act as, or whose key was revoked', async () => {
      const revoked = await newKey(p.ws, { scopes: ['pipelines:execute'] });
      await revokeKey(revoked);
      const revokedRun = randomUUID();
      const hooks = { attempt: 1, checkpoint: () => undefined };
      for (const [id, apiKeyId] of [[revokedRun, await keyIdOf(revoked)], [randomUUID(), null]] as const) {
        await PipelineRun.query(env().db).insert({
          id,
          workspaceId: p.ws.workspaceId,
          projectId: p.projectId,
          pipelineId,
          pipelineName: 'keyless',
          versionId: randomUUID(),
          versionNumber: 1,
          document: { nodes: [], edges: [] },
          trigger: 'schedule',
          actorMemberId: p.ws.memberId,
          apiKeyId,
          status: 'running',
          workflowId: `audit-run-${id}`,
        } as never);
        // Refused before the run is even loaded for reading: no node is claimed, no page is read.
        const code = apiKeyId ? 'credential_revoked' : 'run_without_key';
        await assert.rejects(extractAsItsLauncher(workerDependencies(env()), id, 'source', hooks), (error: { code?: string }) => error.code === code);
        await assert.rejects(commitRunAsItsLauncher(workerDependencies(env()), id), (error: { code?: string }) => error.code === code);
        assert.equal((await PipelineRun.query(env().db).findById(id))!.status, 'running', 'nothing was committed');
      }
    });

    it('checks an approved SPARQL update again against the SPARQL update’s access: the semantic mode turned back to read stops it', async () => {
      const t = await ontologyTenant();
      const packageId = await customerOntology(t);
      const baseIri = (await t.client.get(t.base)).body.ontology.baseIri;
      const customers = await seededTable(t, [{ id: 1, full_name: 'Ada', years: 36 }]);
      await bind(t, { ontologyPackageId: packageId, termId: 'Customer', dataEndpointId: customers, mapping: CUSTOMER_MAPPING, requiredReadPermissions: ['customers.read'] });
      assert.equal((await as(t.ws.apiKey).patch('/api/v1/organization/settings', { semanticConsumerMode: 'write' })).status, 200);
      assert.equal((await as(t.ws.apiKey).put(`/api/v1/data-endpoints/${customers}/write-policy`, { allowedOperations: ['upsert'], approval: { required: true, approvers: 1 } })).status, 201);
      const writer = await newKey(t.ws, { scopes: ['sparql:query', 'sparql:update', 'data:write', 'policy:propose'], readPermissions: ['customers.read'] });
      const proposed = await request('POST', `${t.base}/sparql`, { key: writer, rawBody: `${PREFIXES(baseIri)} INSERT DATA { <https://example.com/customers/7> :name "Mallory" }`, headers: { 'Content-Type': 'application/sparql-update' } });
      assert.equal(proposed.status, 202, JSON.stringify(proposed.body));
      const actionId = proposed.body.writeActions[0].actionId;
      // The workspace closes SPARQL updates before anyone approves.
      assert.equal((await as(t.ws.apiKey).patch('/api/v1/organization/settings', { semanticConsumerMode: 'read' })).status, 200);
      const approver = await otherMemberKey(t, { scopes: ['policy:approve', 'data:read'], readPermissions: ['customers.read'] });
      const approved = await as(approver.key).post(`/api/v1/data-endpoints/${customers}/writes/${actionId}/approve`, {});
      assert.equal(approved.status, 200, JSON.stringify(approved.body));
      assert.equal(approved.body.writeAction.status, 'failed');
      assert.equal(approved.body.writeAction.error.code, 'semantic_mode_read_only');
      assert.deepEqual((await tableRows(t.client, customers)).map((row) => row.id), [1], 'nothing was applied');
    });
  });

  describe('MCP checks access before it validates arguments, as HTTP does', () => {
    it('answers a key without the scope insufficient_scope whatever its arguments, on both doors', async () => {
      const t = await ontologyTenant();
      const key = await newKey(t.ws, { scopes: ['org:read'] });
      assert.equal(await toolRefusal(key, 'pipeline_get', {}), 'insufficient_scope', 'no projectId, no pipelineId');
      assert.equal(await toolRefusal(key, 'pipeline_create', { projectId: t.ws.projectId, document: 'not a document' }), 'insufficient_scope');
      const http = await as(key).post(`/api/v1/projects/${t.ws.projectId}/pipelines`, { document: 'not a document' });
      assert.equal(http.status, 403);
      assert.equal(http.body.code, 'insufficient_scope');
    });

    it('answers a key outside the project project_denied before it reads the arguments, on both doors', async () => {
      const t = await ontologyTenant();
      const elsewhere = await createProject(env().db, t.ws.workspaceId, { name: 'elsewhere' });
      const key = await newKey(t.ws, { scopes: ['pipelines:write'], projectIds: [elsewhere.id] });
      assert.equal(await toolRefusal(key, 'pipeline_create', { projectId: t.ws.projectId, document: 'not a document' }), 'project_denied');
      const http = await as(key).post(`/api/v1/projects/${t.ws.projectId}/pipelines`, { document: 'not a document' });
      assert.equal(http.status, 403);
      assert.equal(http.body.code, 'project_denied');
      // Admitted, the same arguments are then invalid.
      const admitted = await newKey(t.ws, { scopes: ['pipelines:write'] });
      await assert.rejects(toolRefusal(admitted, 'pipeline_create', { projectId: t.ws.projectId, document: 'not a document' }), /Invalid arguments/);
    });
  });
});
