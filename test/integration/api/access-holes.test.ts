import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { toolRefusal } from '../../support/mcp-client';
import { QueryJob, WriteAction } from '../../../db/models';
import { runQueryJobAsItsKey } from '../../../services/ontology/query-jobs';
import { workerDependencies } from '../../../services/operations/context';
import { env } from '../../support/environment';
import { as, newKey, request, revokeKey } from '../../support/fixtures';
import { activeQueryJob, bind, customerOntology, OntologyTenant, ontologyTenant, seededTable } from '../../support/ontology';
import { createPipeline, EventsApi, eventsSource, linearDocument, tableDestination, useEventsApi, waitForRun } from '../../support/pipelines';
import { action, currentSnapshot, managedTable, memberKey, putPolicy, tableRows, writeTenant } from '../../support/source-writes';

// Each hole a review with a legitimate but restricted key found when every door declared its own
// rules (issue 20). Every case here failed on the code before the operation model and the one data
// guard: the door let the key through, or the work ran as a principal the key no longer was.

const PREFIXES = (baseIri: string) => `PREFIX : <${baseIri}> `;


describe('Access holes between the doors, closed', function () {
  this.timeout(120_000);

  describe('through the ontology', () => {
    let t: OntologyTenant;
    let baseIri: string;
    let packageId: string;
    let customers: string;
    before(async () => {
      t = await ontologyTenant();
      packageId = await customerOntology(t);
      baseIri = (await t.client.get(t.base)).body.ontology.baseIri;
      customers = await seededTable(t, [{ id: 1, full_name: 'Ada', years: 36 }]);
      await bind(t, {
        ontologyPackageId: packageId,
        termId: 'Customer',
        dataEndpointId: customers,
        mapping: { subjectTemplate: 'https://example.com/customers/{id}', properties: { name: 'full_name', age: 'years' } },
        requiredReadPermissions: ['customers.read'],
      });
      assert.equal((await as(t.ws.apiKey).patch('/api/v1/organization/settings', { semanticConsumerMode: 'write' })).status, 200);
      assert.equal((await as(t.ws.apiKey).put(`/api/v1/data-endpoints/${customers}/write-policy`, { allowedOperations: ['upsert', 'delete'] })).status, 201);
    });

    it('refuses a SPARQL update from a key holding only sparql:update, restricted to the project, and writes nothing', async () => {
      const key = await newKey(t.ws, { scopes: ['sparql:update'], projectIds: [t.ws.projectId], workspaceResources: false, readPermissions: ['customers.read'] });
      const res = await request('POST', `${t.base}/sparql`, { key, rawBody: `${PREFIXES(baseIri)} INSERT DATA { <https://example.com/customers/7> :name "Mallory" }`, headers: { 'Content-Type': 'application/sparql-update' } });
      assert.equal(res.status, 403, JSON.stringify(res.body));
      assert.equal(res.body.code, 'insufficient_scope');
      assert.deepEqual(res.body.requiredScopes, ['data:write']);
      // With data:write but still without shared-resource access: refused by the data guard.
      const scoped = await newKey(t.ws, { scopes: ['sparql:update', 'data:write'], projectIds: [t.ws.projectId], workspaceResources: false, readPermissions: ['customers.read'] });
      const again = await request('POST', `${t.base}/sparql`, { key: scoped, rawBody: `${PREFIXES(baseIri)} INSERT DATA { <https://example.com/customers/7> :name "Mallory" }`, headers: { 'Content-Type': 'application/sparql-update' } });
      assert.equal(again.status, 403, JSON.stringify(again.body));
      assert.equal(again.body.code, 'workspace_resources_denied');
      assert.deepEqual((await tableRows(t.client, customers)).map((row) => row.id), [1], 'no row landed');
    });

    it('refuses a binding over a shared endpoint to a restricted key without workspaceResources', async () => {
      const key = await newKey(t.ws, { scopes: ['bindings:write', 'bindings:read'], projectIds: [t.ws.projectId], workspaceResources: false, readPermissions: ['customers.read'] });
      const res = await as(key).post(`${t.base}/read-bindings`, {
        ontologyPackageId: packageId,
        termId: 'Customer',
        dataEndpointId: customers,
        mapping: { subjectTemplate: 'https://example.com/c/{id}', properties: { name: 'full_name' } },
      });
      assert.equal(res.status, 403, JSON.stringify(res.body));
      assert.equal(res.body.code, 'workspace_resources_denied');
    });

    it('keeps a named grant on the data: an ungated second binding of the same endpoint opens nothing', async () => {
      const names = async (key: string) => {
        const query = `${PREFIXES(baseIri)} SELECT ?name WHERE { ?c :name ?name } ORDER BY ?name`;
        const res = await request('GET', `${t.base}/sparql?query=${encodeURIComponent(query)}`, { key });
        assert.equal(res.status, 200, JSON.stringify(res.body));
        return (res.body.results.bindings as Array<{ name: { value: string } }>).map((b) => b.name.value);
      };
      const ungranted = await newKey(t.ws, { scopes: ['sparql:query', 'data:read', 'bindings:write'] });
      assert.deepEqual(await names(ungranted), [], 'the gated binding withholds its records');
      // The second binding is added by a key that holds the grant, with no grant of its own.
      await bind(t, {
        ontologyPackageId: packageId,
        termId: 'Customer',
        dataEndpointId: customers,
        mapping: { subjectTemplate: 'https://example.com/people/{id}', properties: { name: 'full_name' } },
      });
      assert.deepEqual(await names(ungranted), [], 'the ungated binding reads nothing the other gates');
      assert.deepEqual(await names(t.key), ['Ada', 'Ada'], 'a key with the grant reads through both');
      // The records route asks the same guard: the grant protects the endpoint, whatever the door.
      const reader = await newKey(t.ws, { scopes: ['data:read'] });
      const records = await as(reader).get(`/api/v1/data-endpoints/${customers}/records`);
      assert.equal(records.status, 403, JSON.stringify(records.body));
      assert.equal(records.body.code, 'read_grant_required');
    });
  });

  describe('through pipelines and runs', () => {
    const fixture = useEventsApi(() => EventsApi.events(30));

    it('refuses a preview of shared endpoints to a restricted key without workspaceResources', async () => {
      const t = fixture.t;
      const pipeline = await createPipeline(t, linearDocument(await eventsSource(t, fixture.api), await tableDestination(t, `holes_${Date.now()}`, ['id'])));
      const key = await newKey(t.ws, { scopes: ['pipelines:write', 'pipelines:read', 'data:read'], projectIds: [t.projectId], workspaceResources: false });
      const res = await as(key).post(`/api/v1/projects/${t.projectId}/pipelines/${pipeline.id}/preview`, {});
      assert.equal(res.status, 403, JSON.stringify(res.body));
      assert.equal(res.body.code, 'workspace_resources_denied');
      assert.equal(JSON.stringify(res.body).includes('"records"'), false, 'no record came back');
      // The same key may not launch it either, nor commit a document over those endpoints.
      const launcher = await newKey(t.ws, { scopes: ['pipelines:execute'], projectIds: [t.projectId], workspaceResources: false });
      const launched = await as(launcher).post(`/api/v1/projects/${t.projectId}/pipelines/${pipeline.id}/execute`);
      assert.equal(launched.status, 403, JSON.stringify(launched.body));
      assert.equal(launched.body.code, 'workspace_resources_denied');
    });

    it('fails a run whose launching key is revoked before it commits, with the reason recorded', async () => {
      const t = fixture.t;
      fixture.api.records = EventsApi.events(300);
      const release = fixture.api.holdFrom(2);
      const key = await newKey(t.ws, { scopes: ['pipelines:execute', 'runs:read'] });
      const destination = await tableDestination(t, `revoked_${Date.now()}`, ['id']);
      const pipeline = await createPipeline(t, linearDocument(await eventsSource(t, fixture.api, { pagination: { type: 'page', parameter: 'page', pageSizeParameter: 'per_page', pageSize: 10 } }), destination));
      const res = await as(key).post(`/api/v1/projects/${t.projectId}/pipelines/${pipeline.id}/execute`);
      assert.equal(res.status, 202, JSON.stringify(res.body));
      // Revoked while the run reads its source (held at its second page): the commit acts as the
      // key as it is then.
      await waitForRun(t, res.body.run.id, (run) => run.status === 'running');
      await revokeKey(key);
      release();
      const run = await waitForRun(t, res.body.run.id);
      assert.equal(run.status, 'failed', JSON.stringify(run));
      assert.equal(run.error.code, 'credential_revoked');
      const written = await t.client.get(`/api/v1/data-endpoints/${destination}/records`);
      assert.deepEqual(written.body.data, [], 'nothing was committed');
    });

    it('refuses pipeline_run_cancel to a key holding only runs:read', async () => {
      const t = fixture.t;
      const key = await newKey(t.ws, { scopes: ['runs:read'] });
      assert.equal(await toolRefusal(key, 'pipeline_run_cancel', { projectId: t.projectId, runId: randomUUID() }), 'insufficient_scope');
    });
  });

  it('refuses organization_api_limits_get to a key holding only org:read, as the HTTP route does', async () => {
    const t = await ontologyTenant();
    const key = await newKey(t.ws, { scopes: ['org:read'] });
    assert.equal(await toolRefusal(key, 'organization_api_limits_get', {}), 'insufficient_scope');
    const http = await as(key).get('/api/v1/api-limits');
    assert.equal(http.status, 403);
    assert.equal(http.body.code, 'insufficient_scope');
  });

  it('fails an async query job whose key was revoked before it ran, with the reason recorded', async () => {
    const t = await ontologyTenant();
    const key = await newKey(t.ws, { scopes: ['queries:execute'] });
    const job = await activeQueryJob(t, key);
    await revokeKey(key);
    const outcome = await runQueryJobAsItsKey(workerDependencies(env()), job.id);
    assert.equal(outcome.status, 'failed');
    const stored = (await QueryJob.query(env().db).findById(job.id))!;
    assert.equal(stored.status, 'failed');
    assert.equal((stored.error as { code: string }).code, 'credential_revoked');
  });

  it('checks an approved write again at apply time: a policy tightened since the proposal stops it', async () => {
    const t = await writeTenant();
    const endpointId = await managedTable(t);
    await putPolicy(t, endpointId, { approval: { required: true, approvers: 1 } });
    const approver = await memberKey(t);
    const body = action(t, await currentSnapshot(t.writer, endpointId), { operation: 'upsert', rows: [{ id: 1, name: 'Ada' }] });
    const proposed = await t.writer.post(`/api/v1/data-endpoints/${endpointId}/writes`, body);
    assert.equal(proposed.status, 202, JSON.stringify(proposed.body));
    // Tightened after the proposal: upserts are no longer allowed.
    await putPolicy(t, endpointId, { allowedOperations: ['append'], approval: { required: true, approvers: 1 } });
    const approved = await approver.client.post(`/api/v1/data-endpoints/${endpointId}/writes/${body.actionId}/approve`, {});
    assert.equal(approved.status, 200, JSON.stringify(approved.body));
    assert.equal(approved.body.writeAction.status, 'failed');
    assert.equal(approved.body.writeAction.error.code, 'operation_not_allowed');
    assert.deepEqual(await tableRows(t.writer, endpointId), [], 'nothing was applied');
    const stored = (await WriteAction.query(env().db).findOne({ actionId: body.actionId }))!;
    assert.equal(stored.status, 'failed');
  });
});
