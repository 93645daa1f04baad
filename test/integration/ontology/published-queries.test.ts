import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { PluginInstallation } from '../../../db/models';
import { findCapability } from '../../../plugins';
import { capabilityContext } from '../../../services/endpoints/data-endpoints';
import { EXECUTION_DEFAULTS } from '../../../services/ontology/query-execution';
import { env } from '../../support/environment';
import { within } from '../../support/polling';
import { as, newKey } from '../../support/fixtures';
import { bind, customerOntology, OntologyTenant, ontologyTenant, seededTable } from '../../support/ontology';

const QUERY_SCOPES = ['queries:read', 'queries:write', 'queries:publish', 'queries:execute'];

describe('Published queries: contracts, releases, execution and jobs', function () {
  this.timeout(120_000);
  let t: OntologyTenant;
  let author: ReturnType<typeof as>;
  let authorKey: string;
  let base: string;
  let customers: string;
  const definition = (extra: Record<string, unknown> = {}) => ({
    name: 'adults',
    sparql: 'SELECT ?name ?age WHERE { ?c a :Customer ; :name ?name ; :age ?age FILTER(?age >= ?minAge) } ORDER BY ?name',
    inputSchema: { type: 'object', additionalProperties: false, required: ['minAge'], properties: { minAge: { type: 'integer', minimum: 0 } } },
    outputSchema: { type: 'object', required: ['name', 'age'], properties: { name: { type: 'string' }, age: { type: 'integer' } } },
    ...extra,
  });

  before(async () => {
    t = await ontologyTenant();
    const packageId = await customerOntology(t);
    customers = await seededTable(t, [
      { id: 1, full_name: 'Ada', years: 36 },
      { id: 2, full_name: 'Bob', years: 17 },
      { id: 3, full_name: 'Cy', years: 40 },
    ]);
    await bind(t, { ontologyPackageId: packageId, termId: 'Customer', dataEndpointId: customers, mapping: { subjectTemplate: 'https://example.com/c/{id}', properties: { name: 'full_name', age: 'years' } }, requiredReadPermissions: ['customers.read'] });
    authorKey = await newKey(t.ws, { scopes: QUERY_SCOPES, readPermissions: ['customers.read'] });
    author = as(authorKey);
    base = `/api/v1/projects/${t.ws.projectId}`;
  });

  async function createAndPublish(name: string, extra: Record<string, unknown> = {}) {
    const created = await author.post(`${base}/ontology/queries`, definition({ name, ...extra }));
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const { id, version } = created.body.query;
    const release = await author.post(`${base}/ontology/queries/${id}/releases`, { expectedQueryVersionId: version.id });
    assert.equal(release.status, 201, JSON.stringify(release.body));
    return { id, versionId: version.id as string };
  }

  it('validates a definition against the ontology and its contracts, naming each problem', async () => {
    const res = await author.post(`${base}/ontology/queries`, definition({
      name: 'broken',
      sparql: 'SELECT ?name ?shoe WHERE { ?c a :Customer ; :name ?name ; :shoeSize ?shoe }',
      inputSchema: { type: 'object', properties: { minAge: { type: 'integer' } } },
    }));
    assert.equal(res.status, 422, JSON.stringify(res.body));
    assert.equal(res.body.code, 'query_invalid');
    const paths = res.body.errors.map((e: { path: string; message: string }) => `${e.path} ${e.message}`);
    assert.ok(paths.some((p: string) => p.startsWith('/inputSchema/properties/minAge')), paths.join('\n'));
    assert.ok(paths.some((p: string) => p.includes(':shoeSize')), paths.join('\n'));
    assert.ok(paths.some((p: string) => p.startsWith('/outputSchema/properties/age')), paths.join('\n'));
  });

  it('publishes numeric releases of an expected version, executes them with contract-checked input, and pins them against edits', async () => {
    const created = await author.post(`${base}/ontology/queries`, definition());
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const { id, version } = created.body.query;
    assert.deepEqual(version.requiredReadPermissions, ['customers.read']);
    const stale = await author.post(`${base}/ontology/queries/${id}/releases`, { expectedQueryVersionId: '00000000-0000-4000-8000-000000000000' });
    assert.equal(stale.status, 409);
    assert.equal(stale.body.code, 'query_version_stale');
    const first = await author.post(`${base}/ontology/queries/${id}/releases`, { expectedQueryVersionId: version.id });
    assert.equal(first.status, 201, JSON.stringify(first.body));
    assert.equal(first.body.release.version, 1);

    const run = await author.post(`${base}/queries/${id}/execute`, { input: { minAge: 18 } });
    assert.equal(run.status, 200, JSON.stringify(run.body));
    assert.equal(run.body.status, 'succeeded');
    assert.deepEqual(run.body.data, [{ name: 'Ada', age: 36 }, { name: 'Cy', age: 40 }]);
    const alias = await author.post(`${base}/ontology/queries/${id}/execute`, { input: { minAge: 38 }, options: { limit: 5 } });
    assert.deepEqual(alias.body.data, [{ name: 'Cy', age: 40 }]);
    const empty = await author.post(`${base}/queries/${id}/execute`, {});
    assert.equal(empty.status, 422);
    assert.equal(empty.body.code, 'input_invalid');
    assert.deepEqual(empty.body.errors.map((e: { path: string }) => e.path), ['/input/minAge']);
    const injected = await author.post(`${base}/queries/${id}/execute`, { input: { minAge: '0) } #' } });
    assert.equal(injected.status, 422, 'a string where the contract says integer never reaches the query');

    // An edit makes a new version UUID; release 1 still runs the old text.
    const edited = await author.put(`${base}/ontology/queries/${id}`, definition({ sparql: 'SELECT ?name ?age WHERE { ?c a :Customer ; :name ?name ; :age ?age FILTER(?age > ?minAge + 100) }' }));
    assert.equal(edited.status, 200, JSON.stringify(edited.body));
    assert.notEqual(edited.body.query.version.id, version.id);
    const pinned = await author.post(`${base}/queries/${id}/execute?version=1`, { input: { minAge: 18 } });
    assert.equal(pinned.body.data.length, 2);

    // A breaking change needs an acknowledgement; then release 2 is the selected one.
    const breaking = definition({ outputSchema: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } }, sparql: 'SELECT ?name WHERE { ?c a :Customer ; :name ?name ; :age ?age FILTER(?age >= ?minAge) }' });
    const third = await author.put(`${base}/ontology/queries/${id}`, breaking);
    const diff = await author.get(`${base}/ontology/queries/${id}/releases/diff?queryVersionId=${third.body.query.version.id}`);
    assert.deepEqual(diff.body.breakingChanges.map((c: { kind: string }) => c.kind), ['output_field_removed']);
    const refused = await author.post(`${base}/ontology/queries/${id}/releases`, { expectedQueryVersionId: third.body.query.version.id });
    assert.equal(refused.status, 409, JSON.stringify(refused.body));
    assert.equal(refused.body.code, 'breaking_changes');
    const second = await author.post(`${base}/ontology/queries/${id}/releases`, { expectedQueryVersionId: third.body.query.version.id, acknowledgeBreakingChanges: true });
    assert.equal(second.status, 201, JSON.stringify(second.body));
    assert.equal(second.body.release.version, 2);
    assert.deepEqual((await author.post(`${base}/queries/${id}/execute`, { input: { minAge: 18 } })).body.data, [{ name: 'Ada' }, { name: 'Cy' }]);

    const retired = await author.patch(`${base}/ontology/queries/${id}/releases/1`, { status: 'retired' });
    assert.equal(retired.body.release.status, 'retired');
    assert.equal((await author.post(`${base}/queries/${id}/execute?version=1`, { input: { minAge: 18 } })).status, 410);
    const releases = await author.get(`${base}/ontology/queries/${id}/releases`);
    assert.deepEqual(releases.body.releases.map((r: { version: number; status: string }) => `${r.version}:${r.status}`), ['2:published', '1:retired']);
    // Once every release is retired, executing without ?version answers as the newest release would: 410, not 404.
    assert.equal((await author.patch(`${base}/ontology/queries/${id}/releases/2`, { status: 'retired' })).status, 200);
    const gone = await author.post(`${base}/queries/${id}/execute`, { input: { minAge: 18 } });
    assert.equal(gone.status, 410, JSON.stringify(gone.body));
    assert.equal(gone.body.code, 'release_retired');
    assert.equal(gone.body.version, 2);
  });

  it('checks every row against the output contract, refusing rows that do not fit it', async () => {
    const created = await author.post(`${base}/ontology/queries`, definition({ name: 'ages-as-text', outputSchema: { type: 'object', required: ['name', 'age'], properties: { name: { type: 'string' }, age: { type: 'string' } } } }));
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const { id, version } = created.body.query;
    assert.equal((await author.post(`${base}/ontology/queries/${id}/releases`, { expectedQueryVersionId: version.id })).status, 201);
    const res = await author.post(`${base}/queries/${id}/execute`, { input: { minAge: 18 } });
    assert.equal(res.status, 409, JSON.stringify(res.body));
    assert.equal(res.body.code, 'output_contract_violated');
    assert.deepEqual(res.body.errors.map((e: { path: string }) => e.path), ['/age']);
  });

  it('enforces the named grants of the bindings a query reads', async () => {
    const { id } = await createAndPublish('grants');
    const plain = as(await newKey(t.ws, { scopes: ['queries:execute'] }));
    const res = await plain.post(`${base}/queries/${id}/execute`, { input: { minAge: 0 } });
    assert.equal(res.status, 403);
    assert.equal(res.body.code, 'read_grant_required');
  });

  describe('over the sync budget', () => {
    const budget = EXECUTION_DEFAULTS.syncBudgetMs;
    // A slow query: the customers, joined with a count over every chain of four paths along a
    // chain of 100 nodes imported into the ontology (about a second and a half of work: some 97
    // million solutions to count, which no evaluation order avoids).
    const slow = { sparql: 'SELECT ?name ?age WHERE { ?c a :Customer ; :name ?name ; :age ?age FILTER(?age >= ?minAge) { SELECT (COUNT(*) AS ?pairs) WHERE { ?a :next* ?b . ?b :next* ?d . ?d :next* ?e . ?e :next* ?f } } } ORDER BY ?name' };
    before(async () => {
      EXECUTION_DEFAULTS.syncBudgetMs = 200;
      const baseIri = (await t.client.get(t.base)).body.ontology.baseIri;
      assert.equal((await t.client.post(`${t.base}/terms`, { id: 'Node', kind: 'class' })).status, 201);
      assert.equal((await t.client.post(`${t.base}/links`, { id: 'next', from: 'Node', to: 'Node' })).status, 201);
      const chain = Array.from({ length: 100 }, (_, i) => `<${baseIri}n${i}> a <${baseIri}Node> ; <${baseIri}next> <${baseIri}n${i + 1}> .`).join('\n');
      const upload = await t.client.post(`${t.base}/imports/documents?id=chain`, undefined, { rawBody: chain, headers: { 'Content-Type': 'text/turtle' } });
      assert.equal(upload.status, 201, JSON.stringify(upload.body));
      const compiled = await t.client.post(`${t.base}/compile`, {});
      assert.equal((await t.client.post(`${t.base}/activate`, { packageId: compiled.body.package.id })).status, 200);
    });
    after(() => {
      EXECUTION_DEFAULTS.syncBudgetMs = budget;
    });

    async function follow(id: string, continuation: string, limit: number) {
      for (let i = 0; i < 120; i += 1) {
        const res = await author.post(`${base}/queries/${id}/execute?cursor=${continuation}`, { options: { limit } });
        if (res.status !== 202) return res;
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      throw new Error('the job never finished');
    }

    it('answers 202 with a job, then pages the stored rows through continuations', async () => {
      const { id } = await createAndPublish('async-paging', slow);
      const pending = await author.post(`${base}/queries/${id}/execute`, { input: { minAge: 0 } });
      assert.equal(pending.status, 202, JSON.stringify(pending.body));
      assert.equal(pending.body.status, 'pending');
      const first = await follow(id, pending.body.metadata.continuation, 2);
      assert.equal(first.status, 200, JSON.stringify(first.body));
      assert.deepEqual(first.body.data.map((r: { name: string }) => r.name), ['Ada', 'Bob']);
      const second = await follow(id, first.body.metadata.continuation, 2);
      assert.deepEqual(second.body.data.map((r: { name: string }) => r.name), ['Cy']);
      assert.equal(second.body.metadata.continuation, null);
      const other = as(await newKey(t.ws, { scopes: QUERY_SCOPES, readPermissions: ['customers.read'] }));
      assert.equal((await other.post(`${base}/queries/${id}/execute?cursor=${pending.body.metadata.continuation}`, {})).status, 404, 'a job is its caller’s');

      // Past the stored results' expiry on the runtime's clock (the job's row unchanged).
      env().clock.set(Date.parse(second.body.metadata.job.expiresAt));
      assert.equal((await author.post(`${base}/queries/${id}/execute?cursor=${pending.body.metadata.continuation}`, {})).status, 410);
      assert.equal((await author.delete(`${base}/queries/${id}/jobs/${pending.body.metadata.job.id}`)).status, 410);
      const executions = await as(t.ws.apiKey).get(`/api/v1/query-executions?queryId=${id}`);
      assert.equal(executions.status, 200);
      assert.equal(executions.body.queryExecutions[0].mode, 'async');
      assert.equal(executions.body.queryExecutions[0].status, 'succeeded');
      assert.equal(executions.body.queryExecutions[0].rowCount, 3);
    });

    it('cancels the caller’s own active job, and refuses another key and a finished job', async () => {
      const { id } = await createAndPublish('async-cancel', slow);
      await env().stopWorker();
      let job: string;
      try {
        const pending = await author.post(`${base}/queries/${id}/execute`, { input: { minAge: 0 } });
        assert.equal(pending.status, 202);
        job = pending.body.metadata.job.id;
        const other = as(await newKey(t.ws, { scopes: QUERY_SCOPES }));
        assert.equal((await other.delete(`${base}/queries/${id}/jobs/${job}`)).status, 404);
        const canceled = await author.delete(`${base}/queries/${id}/jobs/${job}`);
        assert.equal(canceled.status, 200, JSON.stringify(canceled.body));
        assert.equal(canceled.body.job.status, 'canceled');
        const again = await author.delete(`${base}/queries/${id}/jobs/${job}`);
        assert.equal(again.status, 409);
        assert.equal(again.body.code, 'job_not_active');
      } finally {
        await env().startWorker();
      }
      // The cancellation reaches the workflow once a worker polls again.
      const workflow = env().temporal.workflow.getHandle(`weft-query-job-${job!}`);
      const state = await within(20_000, async () => (await workflow.describe()).status.name, (name) => name !== 'RUNNING', 250);
      assert.equal(state, 'CANCELLED');
      assert.equal((await env().db('query_jobs').where({ id: job! }).first()).status, 'canceled', 'a canceled job stays canceled');
    });

    it('runs a job at the snapshots its execution started with: a commit meanwhile does not change its answer', async () => {
      const { id } = await createAndPublish('async-pinned', slow);
      const pending = await author.post(`${base}/queries/${id}/execute`, { input: { minAge: 0 } });
      assert.equal(pending.status, 202, JSON.stringify(pending.body));
      const write = async (request: Record<string, unknown>) => {
        const endpoint = (await t.client.get(`/api/v1/data-endpoints/${customers}`)).body.dataEndpoint;
        const model = (await PluginInstallation.query(env().db).findById(t.managedInstallationId))!;
        await findCapability('managed_table').writeRecords!(capabilityContext(env().db, model, env().dependencies()), endpoint.target, { ...request, provenance: { kind: 'write', id: randomUUID() } } as never);
      };
      await write({ operation: 'append', rows: [{ id: 4, full_name: 'Dee', years: 50 }] });
      try {
        const done = await follow(id, pending.body.metadata.continuation, 10);
        assert.equal(done.status, 200, JSON.stringify(done.body));
        assert.deepEqual(done.body.data.map((r: { name: string }) => r.name), ['Ada', 'Bob', 'Cy'], 'the customers as the execution found them');
        const again = await author.post(`${base}/queries/${id}/execute`, { input: { minAge: 0 } });
        const later = again.status === 202 ? await follow(id, again.body.metadata.continuation, 10) : again;
        assert.deepEqual(later.body.data.map((r: { name: string }) => r.name), ['Ada', 'Bob', 'Cy', 'Dee'], 'a new execution reads the new snapshot');
      } finally {
        await write({ operation: 'delete', where: [{ field: 'id', op: 'eq', value: 4 }] });
      }
    });
  });
});
