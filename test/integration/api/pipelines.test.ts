import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createProject } from '../../../services/tenancy/projects';
import { addMember } from '../../../services/tenancy/workspaces';
import { env } from '../../support/environment';
import { as, HttpResponse, keyIdOf, newKey } from '../../support/fixtures';
import {
  createPipeline,
  EventsApi,
  eventsSource,
  launch,
  linearDocument,
  PIPELINE_SCOPES,
  pipelineTenant,
  PipelineTenant,
  tableDestination,
  waitForRun,
} from '../../support/pipelines';

/*
 * The pipeline HTTP API (SPEC 2.3, 3.3, 4.3) over real HTTP, against the real services, the real
 * worker and a real paginated HTTP source. Every test works in its own pipelines (unique names);
 * tests that count things use a tenant of their own.
 */

let counter = 0;
const uniqueName = (base: string) => `${base}-${Date.now().toString(36)}-${++counter}`;

/** Every error is problem+json with a stable code and a message for people. */
function assertProblem(res: HttpResponse, status: number, code: string): void {
  assert.equal(res.status, status, JSON.stringify(res.body));
  assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
  assert.equal(res.body.code, code, JSON.stringify(res.body));
  assert.equal(res.body.status, status);
  assert.equal(typeof res.body.message, 'string');
  assert.ok(res.body.message.length > 0);
}

/** A key of another member of the tenant's workspace (drafts are per member; run listings need an administrator). */
async function memberKey(t: PipelineTenant, role: 'owner' | 'admin' | 'member', scopes: string[] = PIPELINE_SCOPES, projectIds?: string[]) {
  const member = await addMember(env().db, t.ws.workspaceId, { name: uniqueName(role), role });
  const key = await newKey(t.ws, { scopes, ...(projectIds ? { projectIds } : {}) }, member.id);
  return { memberId: member.id, key, client: as(key) };
}

const ended = (run: any) => ['succeeded', 'failed', 'canceled'].includes(run.status);

describe('Pipeline HTTP API', function () {
  this.timeout(120_000);
  let api: EventsApi;
  let t: PipelineTenant;
  let source: string;
  let destination: string;
  const pipelines = (tenant: PipelineTenant = t) => `/api/v1/projects/${tenant.projectId}/pipelines`;
  const pipelinePath = (id: string, tenant: PipelineTenant = t) => `${pipelines(tenant)}/${id}`;

  before(async () => {
    api = await new EventsApi().start();
    api.records = EventsApi.events(30);
    t = await pipelineTenant(api.baseUrl);
    source = await eventsSource(t, api);
    destination = await tableDestination(t, 'api_events', ['id']);
  });
  after(() => api.close());

  /** A pipeline in the shared tenant, reading `source` into `destination` unless told otherwise. */
  const newPipeline = (document: unknown = linearDocument(source, destination)) => createPipeline(t, document, uniqueName('pipeline'));

  describe('creating a pipeline', () => {
    it('returns the pipeline, its first version (number 1 on main, active) and the creator\'s draft, and launches no run', async () => {
      const document = linearDocument(source, destination, { transforms: [{ type: 'filter', where: [{ field: 'status', op: 'eq', value: 'open' }] }] });
      const name = uniqueName('orders');
      const res = await t.client.post(pipelines(), { name, description: 'Open events', tags: ['events', 'nightly'], document, workspaceState: { zoom: 2 }, commitMessage: 'First cut' });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      const { pipeline, version, draft } = res.body;

      assert.equal(pipeline.name, name);
      assert.equal(pipeline.description, 'Open events');
      assert.deepEqual(pipeline.tags, ['events', 'nightly']);
      assert.equal(pipeline.projectId, t.projectId);
      assert.equal(pipeline.createdByMemberId, t.ws.memberId);
      assert.equal(pipeline.activeVersionId, version.id);
      assert.equal(pipeline.activeVersion.id, version.id);
      assert.equal(pipeline.activeVersion.number, 1);
      assert.deepEqual(pipeline.document, document);

      assert.equal(version.pipelineId, pipeline.id);
      assert.equal(version.number, 1);
      assert.equal(version.branchName, 'main');
      assert.equal(version.parentVersionId, null);
      assert.equal(version.commitMessage, 'First cut');
      assert.deepEqual(version.document, document);

      assert.equal(draft.pipelineId, pipeline.id);
      assert.equal(draft.memberId, t.ws.memberId);
      assert.equal(draft.saved, true);
      assert.equal(draft.basedOnVersionId, version.id);
      assert.deepEqual(draft.document, document);
      assert.deepEqual(draft.workspaceState, { zoom: 2 });

      const runs = await t.client.get(`/api/v1/projects/${t.projectId}/runs?pipelineId=${pipeline.id}`);
      assert.equal(runs.status, 200, JSON.stringify(runs.body));
      assert.deepEqual(runs.body.runs, []);
      assert.equal(runs.body.pagination.total, 0);
    });

    it('names the first version "Initial version" when no commit message is sent', async () => {
      const res = await t.client.post(pipelines(), { name: uniqueName('plain'), document: linearDocument(source, destination) });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      assert.equal(res.body.version.commitMessage, 'Initial version');
      assert.equal(res.body.pipeline.description, '');
      assert.deepEqual(res.body.pipeline.tags, []);
      assert.equal(res.body.draft.workspaceState, null);
    });

    it('replays a create sent again with the same Idempotency-Key, and refuses that key with another body', async () => {
      const idempotencyKey = `create-${randomUUID()}`;
      const body = { name: uniqueName('idempotent'), document: linearDocument(source, destination) };
      const first = await t.client.post(pipelines(), body, { headers: { 'Idempotency-Key': idempotencyKey } });
      assert.equal(first.status, 201, JSON.stringify(first.body));
      assert.equal(first.headers.get('idempotent-replayed'), null);

      const again = await t.client.post(pipelines(), body, { headers: { 'Idempotency-Key': idempotencyKey } });
      assert.equal(again.status, 201, JSON.stringify(again.body));
      assert.equal(again.headers.get('idempotent-replayed'), 'true');
      assert.equal(again.body.pipeline.id, first.body.pipeline.id);
      assert.equal(again.body.version.id, first.body.version.id);

      const listed = await t.client.get(`${pipelines()}?name=${encodeURIComponent(body.name)}`);
      assert.equal(listed.body.pagination.total, 1, 'the replay created nothing');

      const reused = await t.client.post(pipelines(), { ...body, name: uniqueName('other') }, { headers: { 'Idempotency-Key': idempotencyKey } });
      assertProblem(reused, 422, 'idempotency_key_reused');
    });

    it('refuses a second pipeline with the same name in the project', async () => {
      const name = uniqueName('taken');
      await createPipeline(t, linearDocument(source, destination), name);
      const res = await t.client.post(pipelines(), { name, document: linearDocument(source, destination) });
      assertProblem(res, 409, 'pipeline_name_taken');
    });

    it('refuses a document with problems, listing each with its node id, and creates nothing', async () => {
      const name = uniqueName('broken');
      const res = await t.client.post(pipelines(), { name, document: linearDocument(source, randomUUID(), { mode: 'incremental' }) });
      assertProblem(res, 422, 'pipeline_invalid');
      assert.deepEqual(
        res.body.errors.map((e: any) => [e.nodeId, e.path]),
        [['src', '/document/nodes/0/mode'], ['dst', '/document/nodes/1/endpointId']],
      );
      const listed = await t.client.get(`${pipelines()}?name=${encodeURIComponent(name)}`);
      assert.equal(listed.body.pagination.total, 0);
    });
  });

  describe('listing and reading pipelines', () => {
    let own: PipelineTenant;
    let ownSource: string;
    let ownDestination: string;
    const names = ['alpha', 'bravo', 'charlie', 'delta', 'echo'];
    const ids: string[] = [];

    before(async () => {
      own = await pipelineTenant(api.baseUrl);
      ownSource = await eventsSource(own, api);
      ownDestination = await tableDestination(own, 'listed', ['id']);
      for (const name of names) ids.push((await createPipeline(own, linearDocument(ownSource, ownDestination), name)).id);
    });

    it('pages through the project\'s pipelines in creation order with limit, offset, total and nextOffset', async () => {
      const first = await own.client.get(`${pipelines(own)}?limit=2`);
      assert.equal(first.status, 200, JSON.stringify(first.body));
      assert.deepEqual(first.body.pipelines.map((p: any) => p.name), ['alpha', 'bravo']);
      assert.deepEqual(first.body.pagination, { limit: 2, offset: 0, total: 5, nextOffset: 2 });

      const middle = await own.client.get(`${pipelines(own)}?limit=2&offset=2`);
      assert.deepEqual(middle.body.pipelines.map((p: any) => p.name), ['charlie', 'delta']);
      assert.deepEqual(middle.body.pagination, { limit: 2, offset: 2, total: 5, nextOffset: 4 });

      const last = await own.client.get(`${pipelines(own)}?limit=2&offset=4`);
      assert.deepEqual(last.body.pipelines.map((p: any) => p.name), ['echo']);
      assert.deepEqual(last.body.pagination, { limit: 2, offset: 4, total: 5, nextOffset: null });

      const all = await own.client.get(pipelines(own));
      assert.deepEqual(all.body.pagination, { limit: 50, offset: 0, total: 5, nextOffset: null });
      assert.ok(all.body.pipelines.every((p: any) => p.activeVersion?.number === 1 && p.document), 'each pipeline comes with its active version and document');
    });

    it('filters by tag', async () => {
      for (const id of [ids[1], ids[3]]) assert.equal((await own.client.patch(pipelinePath(id, own), { tags: ['nightly', 'finance'] })).status, 200);
      const res = await own.client.get(`${pipelines(own)}?tag=nightly`);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.deepEqual(res.body.pipelines.map((p: any) => p.name), ['bravo', 'delta']);
      assert.equal(res.body.pagination.total, 2);
      assert.deepEqual((await own.client.get(`${pipelines(own)}?tag=weekly`)).body.pipelines, []);
    });

    it('filters by exact name', async () => {
      const res = await own.client.get(`${pipelines(own)}?name=charlie`);
      assert.equal(res.status, 200);
      assert.deepEqual(res.body.pipelines.map((p: any) => p.id), [ids[2]]);
      assert.deepEqual(res.body.pagination, { limit: 50, offset: 0, total: 1, nextOffset: null });
      const partial = await own.client.get(`${pipelines(own)}?name=char`);
      assert.deepEqual(partial.body.pipelines, []);
    });

    it('refuses a page size beyond the maximum and an unknown query parameter', async () => {
      assertProblem(await own.client.get(`${pipelines(own)}?limit=201`), 422, 'validation_failed');
      assertProblem(await own.client.get(`${pipelines(own)}?limit=0`), 422, 'validation_failed');
      assertProblem(await own.client.get(`${pipelines(own)}?colour=red`), 422, 'validation_failed');
    });

    it('returns one pipeline with its active version and document', async () => {
      const res = await own.client.get(pipelinePath(ids[0], own));
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.pipeline.id, ids[0]);
      assert.equal(res.body.pipeline.name, 'alpha');
      assert.equal(res.body.pipeline.activeVersion.branchName, 'main');
      assert.deepEqual(res.body.pipeline.document, linearDocument(ownSource, ownDestination));
    });

    it('answers 404 for a pipeline of another workspace, whichever project the path names', async () => {
      const mine = await newPipeline();
      assertProblem(await own.client.get(pipelinePath(mine.id, own)), 404, 'not_found');
      assertProblem(await t.client.get(pipelinePath(ids[0], t)), 404, 'not_found');
      assertProblem(await t.client.get(pipelinePath(ids[0], own)), 404, 'not_found');
      assertProblem(await own.client.patch(pipelinePath(mine.id, own), { name: 'hijacked' }), 404, 'not_found');
      assertProblem(await own.client.delete(pipelinePath(mine.id, own)), 404, 'not_found');
      assert.equal((await t.client.get(pipelinePath(mine.id))).status, 200, 'the refused calls changed nothing');
    });

    it('answers 404 for a pipeline of another project in the same workspace', async () => {
      const other = await createProject(env().db, own.ws.workspaceId, { name: uniqueName('other-project') });
      const res = await own.client.get(`/api/v1/projects/${other.id}/pipelines/${ids[0]}`);
      assertProblem(res, 404, 'not_found');
      const listed = await own.client.get(`/api/v1/projects/${other.id}/pipelines`);
      assert.deepEqual(listed.body.pipelines, []);
    });

    it('answers 404 for an unknown pipeline id', async () => {
      assertProblem(await own.client.get(pipelinePath(randomUUID(), own)), 404, 'not_found');
    });
  });

  describe('drafts', () => {
    it('gives a member who never saved a draft an unsaved one that starts from the active version', async () => {
      const pipeline = await newPipeline();
      const dana = await memberKey(t, 'admin');
      const res = await dana.client.get(`${pipelinePath(pipeline.id)}/draft`);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.draft.saved, false);
      assert.equal(res.body.draft.updatedAt, null);
      assert.equal(res.body.draft.memberId, dana.memberId);
      assert.equal(res.body.draft.basedOnVersionId, pipeline.versionId);
      assert.deepEqual(res.body.draft.document, linearDocument(source, destination));
    });

    it('saves an unfinished draft without changing the active version, and keeps drafts per member', async () => {
      const pipeline = await newPipeline();
      const unfinished = { nodes: [{ id: 'src', type: 'source', endpointId: source }], edges: [] };
      const saved = await t.client.put(`${pipelinePath(pipeline.id)}/draft`, { document: unfinished, workspaceState: { selected: 'src' } });
      assert.equal(saved.status, 200, JSON.stringify(saved.body));
      assert.equal(saved.body.draft.saved, true);
      assert.deepEqual(saved.body.draft.document, unfinished);
      assert.deepEqual(saved.body.draft.workspaceState, { selected: 'src' });
      assert.equal(saved.body.draft.basedOnVersionId, pipeline.versionId);
      assert.ok(saved.body.draft.updatedAt);

      const read = await t.client.get(`${pipelinePath(pipeline.id)}/draft`);
      assert.deepEqual(read.body.draft, saved.body.draft);

      const current = await t.client.get(pipelinePath(pipeline.id));
      assert.equal(current.body.pipeline.activeVersionId, pipeline.versionId);
      assert.deepEqual(current.body.pipeline.document, linearDocument(source, destination));
      const versions = await t.client.get(`${pipelinePath(pipeline.id)}/versions`);
      assert.equal(versions.body.pagination.total, 1, 'saving a draft commits nothing');

      const other = await memberKey(t, 'admin');
      const theirs = await other.client.get(`${pipelinePath(pipeline.id)}/draft`);
      assert.equal(theirs.body.draft.saved, false);
      assert.deepEqual(theirs.body.draft.document, linearDocument(source, destination), 'another member does not see this draft');
    });

    it('refuses an HTTP draft save with basedOnVersionId (an MCP-only field)', async () => {
      const pipeline = await newPipeline();
      const res = await t.client.put(`${pipelinePath(pipeline.id)}/draft`, { document: linearDocument(source, destination), basedOnVersionId: pipeline.versionId });
      assertProblem(res, 422, 'validation_failed');
    });

    it('validates a draft with many problems and lists every one of them at once, with its node and path', async () => {
      const hinted = await eventsSource(t, api, {}, {
        schemaHints: { primaryKey: ['id'], columns: [{ name: 'id' }, { name: 'updated_at' }, { name: 'amount' }, { name: 'status' }] },
      });
      const pipeline = await newPipeline();
      const unknownEndpoint = randomUUID();
      const document = {
        nodes: [
          { id: 'src', type: 'source', endpointId: hinted, mode: 'incremental' },
          { id: 'keep', type: 'filter', where: [{ field: 'colour', op: 'eq', value: 'red' }] },
          { id: 'calc', type: 'compute', fields: [{ name: 'double', expression: 'amount *' }] },
          { id: 'out', type: 'destination', endpointId: destination, writeMode: 'append' },
          { id: 'wrong', type: 'destination', endpointId: source, writeMode: 'append' },
          { id: 'ghost', type: 'destination', endpointId: unknownEndpoint, writeMode: 'append' },
          { id: 'lonely', type: 'destination', endpointId: destination, writeMode: 'append' },
          { id: 'loopA', type: 'filter', where: [{ field: 'status', op: 'eq', value: 'open' }] },
          { id: 'loopB', type: 'filter', where: [{ field: 'status', op: 'eq', value: 'open' }] },
        ],
        edges: [
          { from: 'src', to: 'keep' },
          { from: 'keep', to: 'calc' },
          { from: 'calc', to: 'out' },
          { from: 'calc', to: 'wrong' },
          { from: 'calc', to: 'ghost' },
          { from: 'loopA', to: 'loopB' },
          { from: 'loopB', to: 'loopA' },
          { from: 'calc', to: 'nowhere' },
        ],
      };
      const saved = await t.client.put(`${pipelinePath(pipeline.id)}/draft`, { document });
      assert.equal(saved.status, 200, JSON.stringify(saved.body));

      const res = await t.client.post(`${pipelinePath(pipeline.id)}/draft/validate`);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.valid, false);
      const problems: Array<{ nodeId?: string; path: string; message: string }> = res.body.problems;
      const found = (nodeId: string | undefined, path: string, message: RegExp) => {
        const match = problems.find((p) => p.nodeId === nodeId && p.path === path && message.test(p.message));
        assert.ok(match, `expected a problem ${nodeId ?? '(no node)'} ${path} ${message}, got ${JSON.stringify(problems, null, 1)}`);
      };
      found('calc', '/edges/7/to', /names no node \("nowhere"\)/);
      found('src', '/nodes/0/mode', /incremental needs a window/);
      found('keep', '/nodes/1/where/0/field', /uses field "colour", which does not reach this node/);
      found('calc', '/nodes/2/fields/0/expression', /is not a valid JSONata expression/);
      found('wrong', '/nodes/4/endpointId', /role source; a destination node needs role destination/);
      found('wrong', '/nodes/4/endpointId', /cannot be written by a pipeline/);
      found('ghost', '/nodes/5/endpointId', /is not a data endpoint of this workspace/);
      found('lonely', '/nodes/6', /is a destination that no node feeds/);
      for (const [nodeId, index] of [['loopA', 7], ['loopB', 8]] as const) {
        found(nodeId, `/nodes/${index}`, /is on a cycle/);
        found(nodeId, `/nodes/${index}`, /is not reachable from any source/);
        found(nodeId, `/nodes/${index}`, /leads to no destination/);
      }
      assert.equal(problems.length, 14, `nothing else is reported: ${JSON.stringify(problems, null, 1)}`);
      const located = problems.filter((p) => !p.path.startsWith('/edges/'));
      assert.ok(located.every((p) => typeof p.nodeId === 'string'), 'every node problem names its node');
    });

    it('validates a complete draft as valid, with no problems', async () => {
      const pipeline = await newPipeline();
      const document = linearDocument(source, destination, { transforms: [{ type: 'compute', fields: [{ name: 'double', expression: 'amount * 2' }] }] });
      assert.equal((await t.client.put(`${pipelinePath(pipeline.id)}/draft`, { document })).status, 200);
      const res = await t.client.post(`${pipelinePath(pipeline.id)}/draft/validate`);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.deepEqual(res.body, { valid: true, problems: [] });
    });

    it('validates the active version for a member who never saved a draft', async () => {
      const pipeline = await newPipeline();
      const other = await memberKey(t, 'member', ['pipelines:read']);
      const res = await other.client.post(`${pipelinePath(pipeline.id)}/draft/validate`);
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.deepEqual(res.body, { valid: true, problems: [] });
    });

    it('validates unfinished drafts whose nodes still miss required settings, reporting the node instead of failing or passing them', async () => {
      const pipeline = await newPipeline();
      const unfinished: Record<string, Record<string, unknown>> = {
        'a filter without conditions': { id: 'mid', type: 'filter' },
        'a filter whose conditions are not a list': { id: 'mid', type: 'filter', where: 'status = open' },
        'a cast without fields': { id: 'mid', type: 'cast' },
        'a dedupe without a key': { id: 'mid', type: 'dedupe' },
        'a compute without fields': { id: 'mid', type: 'compute' },
        'a node of an unknown type': { id: 'mid', type: 'teleport' },
      };
      const outcomes: Record<string, unknown> = {};
      for (const [what, node] of Object.entries(unfinished)) {
        const document = { nodes: [{ id: 'src', type: 'source', endpointId: source }, node, { id: 'dst', type: 'destination', endpointId: destination }], edges: [{ from: 'src', to: 'mid' }, { from: 'mid', to: 'dst' }] };
        const saved = await t.client.put(`${pipelinePath(pipeline.id)}/draft`, { document });
        assert.equal(saved.status, 200, `${what}: a draft may be unfinished: ${JSON.stringify(saved.body)}`);
        const res = await t.client.post(`${pipelinePath(pipeline.id)}/draft/validate`);
        const reported = res.status === 200 && res.body.valid === false && res.body.problems.some((p: any) => p.nodeId === 'mid' && p.path.startsWith('/nodes/1'));
        if (!reported) outcomes[what] = res.status === 200 ? res.body : `HTTP ${res.status} ${res.body.code}`;
      }
      assert.deepEqual(outcomes, {}, 'each unfinished node is reported as a problem of node "mid" (valid: false)');
    });
  });

  describe('versions and branches', () => {
    const versionsOf = (id: string, query = '') => t.client.get(`${pipelinePath(id)}/versions${query}`);

    it('commits a version on main with the next number and leaves the active version unchanged', async () => {
      const pipeline = await newPipeline();
      const document = linearDocument(source, destination, { writeMode: 'upsert' });
      const res = await t.client.post(`${pipelinePath(pipeline.id)}/versions`, { document, commitMessage: 'Upsert instead' });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      const { version } = res.body;
      assert.equal(version.number, 2);
      assert.equal(version.branchName, 'main');
      assert.equal(version.parentVersionId, pipeline.versionId);
      assert.equal(version.commitMessage, 'Upsert instead');
      assert.equal(version.createdByMemberId, t.ws.memberId);
      assert.deepEqual(version.document, document);

      const third = await t.client.post(`${pipelinePath(pipeline.id)}/versions`, { document: linearDocument(source, destination) });
      assert.equal(third.body.version.number, 3);
      assert.equal(third.body.version.parentVersionId, version.id, 'each commit sits on the branch head');
      assert.equal(third.body.version.commitMessage, null);

      const current = await t.client.get(pipelinePath(pipeline.id));
      assert.equal(current.body.pipeline.activeVersionId, pipeline.versionId);
    });

    it('refuses to commit an invalid document with every problem and its node id, committing nothing', async () => {
      const pipeline = await newPipeline();
      const document = linearDocument(source, randomUUID(), { transforms: [{ type: 'compute', fields: [{ name: 'x', expression: '((' }] }] });
      const res = await t.client.post(`${pipelinePath(pipeline.id)}/versions`, { document });
      assertProblem(res, 422, 'pipeline_invalid');
      assert.deepEqual(
        res.body.errors.map((e: any) => [e.nodeId, e.path]),
        [['t1', '/document/nodes/1/fields/0/expression'], ['dst', '/document/nodes/2/endpointId']],
      );
      assert.ok(res.body.errors.every((e: any) => typeof e.message === 'string' && e.message.length > 0));
      assert.equal((await versionsOf(pipeline.id)).body.pagination.total, 1);
    });

    it('refuses a commit on a branch that does not exist', async () => {
      const pipeline = await newPipeline();
      const res = await t.client.post(`${pipelinePath(pipeline.id)}/versions`, { document: linearDocument(source, destination), branchName: 'experiment' });
      assertProblem(res, 422, 'unknown_branch');
      assert.deepEqual(res.body.errors, [{ path: '/branchName', message: 'names no branch of this pipeline' }]);
    });

    it('creates a branch at the active version, refuses the same name twice, and commits on it', async () => {
      const pipeline = await newPipeline();
      const created = await t.client.post(`${pipelinePath(pipeline.id)}/branches`, { name: 'feature/upsert' });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      assert.equal(created.body.branch.name, 'feature/upsert');
      assert.equal(created.body.branch.headVersionId, pipeline.versionId);
      assert.equal(created.body.branch.createdByMemberId, t.ws.memberId);

      assertProblem(await t.client.post(`${pipelinePath(pipeline.id)}/branches`, { name: 'feature/upsert' }), 409, 'branch_exists');
      assertProblem(await t.client.post(`${pipelinePath(pipeline.id)}/branches`, { name: 'main' }), 409, 'branch_exists');
      assertProblem(await t.client.post(`${pipelinePath(pipeline.id)}/branches`, { name: '-bad name' }), 422, 'validation_failed');
      assertProblem(await t.client.post(`${pipelinePath(pipeline.id)}/branches`, { name: 'x', sourceVersionId: randomUUID() }), 404, 'not_found');

      const onBranch = await t.client.post(`${pipelinePath(pipeline.id)}/versions`, { document: linearDocument(source, destination, { writeMode: 'upsert' }), branchName: 'feature/upsert' });
      assert.equal(onBranch.status, 201, JSON.stringify(onBranch.body));
      assert.equal(onBranch.body.version.branchName, 'feature/upsert');
      assert.equal(onBranch.body.version.number, 2);
      assert.equal(onBranch.body.version.parentVersionId, pipeline.versionId);

      const onMain = await t.client.post(`${pipelinePath(pipeline.id)}/versions`, { document: linearDocument(source, destination) });
      assert.equal(onMain.body.version.number, 3, 'numbers are sequential across branches');
      assert.equal(onMain.body.version.branchName, 'main');
      assert.equal(onMain.body.version.parentVersionId, pipeline.versionId, 'main\'s head did not move with the branch');
    });

    it('lists versions newest first and filters them by versionId and branchName', async () => {
      const pipeline = await newPipeline();
      assert.equal((await t.client.post(`${pipelinePath(pipeline.id)}/branches`, { name: 'side' })).status, 201);
      const v2 = (await t.client.post(`${pipelinePath(pipeline.id)}/versions`, { document: linearDocument(source, destination), branchName: 'side' })).body.version;
      const v3 = (await t.client.post(`${pipelinePath(pipeline.id)}/versions`, { document: linearDocument(source, destination) })).body.version;

      const all = await versionsOf(pipeline.id);
      assert.equal(all.status, 200, JSON.stringify(all.body));
      assert.deepEqual(all.body.versions.map((v: any) => v.number), [3, 2, 1]);
      assert.deepEqual(all.body.versions.map((v: any) => v.id), [v3.id, v2.id, pipeline.versionId]);
      assert.deepEqual(all.body.pagination, { limit: 50, offset: 0, total: 3, nextOffset: null });

      const paged = await versionsOf(pipeline.id, '?limit=1&offset=1');
      assert.deepEqual(paged.body.versions.map((v: any) => v.number), [2]);
      assert.deepEqual(paged.body.pagination, { limit: 1, offset: 1, total: 3, nextOffset: 2 });

      const one = await versionsOf(pipeline.id, `?versionId=${v2.id}`);
      assert.deepEqual(one.body.versions.map((v: any) => v.id), [v2.id]);
      assert.equal(one.body.pagination.total, 1);

      assertProblem(await versionsOf(pipeline.id, `?versionId=${randomUUID()}`), 404, 'not_found');
      assertProblem(await versionsOf(pipeline.id, '?versionId=v2'), 422, 'validation_failed');

      const side = await versionsOf(pipeline.id, '?branchName=side');
      assert.deepEqual(side.body.versions.map((v: any) => v.id), [v2.id]);
      const main = await versionsOf(pipeline.id, '?branchName=main');
      assert.deepEqual(main.body.versions.map((v: any) => v.number), [3, 1]);
      const none = await versionsOf(pipeline.id, '?branchName=nothing-here');
      assert.deepEqual(none.body.versions, []);
    });

    it('replays a version commit sent again with the same Idempotency-Key', async () => {
      const pipeline = await newPipeline();
      const headers = { 'Idempotency-Key': `commit-${randomUUID()}` };
      const body = { document: linearDocument(source, destination, { writeMode: 'upsert' }) };
      const first = await t.client.post(`${pipelinePath(pipeline.id)}/versions`, body, { headers });
      const again = await t.client.post(`${pipelinePath(pipeline.id)}/versions`, body, { headers });
      assert.equal(again.status, 201);
      assert.equal(again.headers.get('idempotent-replayed'), 'true');
      assert.equal(again.body.version.id, first.body.version.id);
      assert.equal((await versionsOf(pipeline.id)).body.pagination.total, 2);
    });
  });

  describe('activating a version', () => {
    it('makes a committed version the active one, with its document', async () => {
      const pipeline = await newPipeline();
      const document = linearDocument(source, destination, { writeMode: 'upsert' });
      const v2 = (await t.client.post(`${pipelinePath(pipeline.id)}/versions`, { document })).body.version;

      const res = await t.client.post(`${pipelinePath(pipeline.id)}/versions/${v2.id}/activate`, { versionId: v2.id });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.pipeline.activeVersionId, v2.id);
      assert.equal(res.body.pipeline.activeVersion.number, 2);
      assert.deepEqual(res.body.pipeline.document, document);

      const back = await t.client.post(`${pipelinePath(pipeline.id)}/versions/${pipeline.versionId}/activate`);
      assert.equal(back.status, 200, JSON.stringify(back.body));
      assert.equal(back.body.pipeline.activeVersionId, pipeline.versionId);
      assert.equal((await t.client.get(pipelinePath(pipeline.id))).body.pipeline.activeVersionId, pipeline.versionId);
    });

    it('refuses a body versionId that differs from the path with 409 version_mismatch', async () => {
      const pipeline = await newPipeline();
      const v2 = (await t.client.post(`${pipelinePath(pipeline.id)}/versions`, { document: linearDocument(source, destination) })).body.version;
      const res = await t.client.post(`${pipelinePath(pipeline.id)}/versions/${v2.id}/activate`, { versionId: pipeline.versionId });
      assertProblem(res, 409, 'version_mismatch');
      assert.equal((await t.client.get(pipelinePath(pipeline.id))).body.pipeline.activeVersionId, pipeline.versionId);
    });

    it('answers 404 for a version of another pipeline', async () => {
      const pipeline = await newPipeline();
      const other = await newPipeline();
      const res = await t.client.post(`${pipelinePath(pipeline.id)}/versions/${other.versionId}/activate`);
      assertProblem(res, 404, 'not_found');
      assert.equal((await t.client.get(pipelinePath(pipeline.id))).body.pipeline.activeVersionId, pipeline.versionId);
    });
  });

  describe('replacing the document and changing settings', () => {
    it('commits the document sent with PUT as a new version and activates it', async () => {
      const pipeline = await newPipeline();
      const document = linearDocument(source, destination, { transforms: [{ type: 'select', fields: ['id', 'amount'] }] });
      const res = await t.client.put(pipelinePath(pipeline.id), { document, commitMessage: 'Fewer fields' });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.version.number, 2);
      assert.equal(res.body.version.branchName, 'main');
      assert.equal(res.body.version.commitMessage, 'Fewer fields');
      assert.equal(res.body.pipeline.activeVersionId, res.body.version.id);
      assert.deepEqual(res.body.pipeline.document, document);

      const read = await t.client.get(pipelinePath(pipeline.id));
      assert.equal(read.body.pipeline.activeVersionId, res.body.version.id);
      assert.deepEqual(read.body.pipeline.document, document);
    });

    it('refuses a PUT with an invalid document and leaves the pipeline as it was', async () => {
      const pipeline = await newPipeline();
      const res = await t.client.put(pipelinePath(pipeline.id), { document: linearDocument(source, source) });
      assertProblem(res, 422, 'pipeline_invalid');
      assert.ok(res.body.errors.every((e: any) => e.nodeId === 'dst'), JSON.stringify(res.body.errors));
      const read = await t.client.get(pipelinePath(pipeline.id));
      assert.equal(read.body.pipeline.activeVersionId, pipeline.versionId);
    });

    it('changes name, description and tags with PATCH', async () => {
      const pipeline = await newPipeline();
      const name = uniqueName('renamed');
      const res = await t.client.patch(pipelinePath(pipeline.id), { name, description: 'Now with a description', tags: ['a', 'b'] });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      assert.equal(res.body.pipeline.name, name);
      assert.equal(res.body.pipeline.description, 'Now with a description');
      assert.deepEqual(res.body.pipeline.tags, ['a', 'b']);
      assert.equal(res.body.pipeline.activeVersionId, pipeline.versionId, 'settings are not a version');

      const tagsOnly = await t.client.patch(pipelinePath(pipeline.id), { tags: [] });
      assert.equal(tagsOnly.status, 200);
      assert.equal(tagsOnly.body.pipeline.name, name);
      assert.deepEqual(tagsOnly.body.pipeline.tags, []);

      const same = await t.client.patch(pipelinePath(pipeline.id), { name });
      assert.equal(same.status, 200, 'keeping its own name is no conflict');
    });

    it('refuses an empty PATCH, a PATCH with the document, and a name another pipeline of the project has', async () => {
      const pipeline = await newPipeline();
      const taken = uniqueName('taken');
      await createPipeline(t, linearDocument(source, destination), taken);

      assertProblem(await t.client.patch(pipelinePath(pipeline.id), {}), 422, 'validation_failed');
      const withDocument = await t.client.patch(pipelinePath(pipeline.id), { document: linearDocument(source, destination) });
      assertProblem(withDocument, 422, 'validation_failed');
      assert.match(withDocument.body.message, /send the document with PUT/);
      assertProblem(await t.client.patch(pipelinePath(pipeline.id), { tags: ['same', 'same'] }), 422, 'validation_failed');
      assertProblem(await t.client.patch(pipelinePath(pipeline.id), { name: '' }), 422, 'validation_failed');
      assertProblem(await t.client.patch(pipelinePath(pipeline.id), { name: taken }), 409, 'pipeline_name_taken');
    });
  });

  describe('launching', () => {
    it('runs the active version, not a draft saved just before', async () => {
      const runDestination = await tableDestination(t, 'launch_events', ['id']);
      const active = linearDocument(source, runDestination, { writeMode: 'upsert' });
      const pipeline = await createPipeline(t, active, uniqueName('launch'));
      const draft = linearDocument(source, runDestination, { writeMode: 'upsert', transforms: [{ type: 'filter', where: [{ field: 'status', op: 'eq', value: 'open' }] }] });
      assert.equal((await t.client.put(`${pipelinePath(pipeline.id)}/draft`, { document: draft })).status, 200);

      const queued = await launch(t, pipeline.id);
      assert.equal(queued.status, 'queued');
      assert.equal(queued.versionId, pipeline.versionId);
      assert.equal(queued.versionNumber, 1);
      assert.equal(queued.trigger, 'api');
      assert.equal(queued.actor.memberId, t.ws.memberId);
      assert.deepEqual(queued.document, active);

      const run = await waitForRun(t, queued.id);
      assert.equal(run.status, 'succeeded', JSON.stringify(run.error));
      assert.equal(run.versionId, pipeline.versionId);
      assert.deepEqual(run.document, active);
      assert.deepEqual(run.nodes.map((n: any) => n.nodeId), ['src', 'dst'], 'the draft\'s filter node did not run');
      assert.equal(run.nodes.find((n: any) => n.nodeId === 'dst').recordsWritten, 30, 'every record arrived: nothing was filtered');
    });

    it('replays a launch sent again with the same Idempotency-Key instead of starting a second run', async () => {
      const pipeline = await createPipeline(t, linearDocument(source, await tableDestination(t, 'launch_twice', ['id']), { writeMode: 'upsert' }), uniqueName('twice'));
      const headers = { 'Idempotency-Key': `launch-${randomUUID()}` };
      const first = await t.client.post(`${pipelinePath(pipeline.id)}/execute`, undefined, { headers });
      assert.equal(first.status, 202, JSON.stringify(first.body));
      const again = await t.client.post(`${pipelinePath(pipeline.id)}/execute`, undefined, { headers });
      assert.equal(again.status, 202);
      assert.equal(again.headers.get('idempotent-replayed'), 'true');
      assert.equal(again.body.run.id, first.body.run.id);
      await waitForRun(t, first.body.run.id);
      const runs = await t.client.get(`/api/v1/projects/${t.projectId}/runs?pipelineId=${pipeline.id}`);
      assert.equal(runs.body.pagination.total, 1);
    });

    it('needs pipelines:execute to launch', async () => {
      const pipeline = await newPipeline();
      const reader = as(await newKey(t.ws, { scopes: ['pipelines:read', 'pipelines:write', 'runs:read'] }));
      assertProblem(await reader.post(`${pipelinePath(pipeline.id)}/execute`), 403, 'insufficient_scope');
      assertProblem(await reader.post(`/api/v1/projects/${t.projectId}/runs`, { pipelineId: pipeline.id }), 403, 'insufficient_scope');
    });
  });

  describe('deleting a pipeline', () => {
    it('removes the pipeline and its versions but keeps its runs readable', async () => {
      const pipeline = await createPipeline(t, linearDocument(source, await tableDestination(t, 'deleted_events', ['id']), { writeMode: 'upsert' }), uniqueName('doomed'));
      const run = await waitForRun(t, (await launch(t, pipeline.id)).id);
      assert.equal(run.status, 'succeeded', JSON.stringify(run.error));
      assert.equal((await t.client.post(`${pipelinePath(pipeline.id)}/branches`, { name: 'side' })).status, 201);
      assert.equal((await t.client.post(`${pipelinePath(pipeline.id)}/versions`, { document: run.document, branchName: 'side' })).status, 201);
      assert.equal((await t.client.put(`${pipelinePath(pipeline.id)}/draft`, { document: { nodes: [], edges: [] } })).status, 200);

      const res = await t.client.delete(pipelinePath(pipeline.id));
      assert.equal(res.status, 204, JSON.stringify(res.body));
      assert.equal(res.body, '');
      assertProblem(await t.client.get(pipelinePath(pipeline.id)), 404, 'not_found');
      assertProblem(await t.client.get(`${pipelinePath(pipeline.id)}/versions`), 404, 'not_found');
      assertProblem(await t.client.get(`${pipelinePath(pipeline.id)}/draft`), 404, 'not_found');
      assertProblem(await t.client.post(`${pipelinePath(pipeline.id)}/execute`), 404, 'not_found');
      assertProblem(await t.client.delete(pipelinePath(pipeline.id)), 404, 'not_found');

      const inProject = await t.client.get(`/api/v1/projects/${t.projectId}/runs/${run.id}`);
      assert.equal(inProject.status, 200, JSON.stringify(inProject.body));
      assert.equal(inProject.body.run.status, 'succeeded');
      assert.equal(inProject.body.run.pipelineId, pipeline.id);
      assert.deepEqual(inProject.body.run.document, run.document);
      const inWorkspace = await t.client.get(`/api/v1/runs/${run.id}`);
      assert.equal(inWorkspace.status, 200, JSON.stringify(inWorkspace.body));
      assert.equal(inWorkspace.body.run.id, run.id);
      assert.equal(inWorkspace.body.run.pipelineName, run.pipelineName);

      const listed = await t.client.get(`/api/v1/projects/${t.projectId}/runs?pipelineId=${pipeline.id}`);
      assert.deepEqual(listed.body.runs.map((r: any) => r.id), [run.id]);
      assertProblem(await t.client.post(`/api/v1/projects/${t.projectId}/runs`, { pipelineId: pipeline.id }), 404, 'not_found');
    });

    it('frees the pipeline\'s name for a new pipeline', async () => {
      const name = uniqueName('reused');
      const pipeline = await createPipeline(t, linearDocument(source, destination), name);
      assert.equal((await t.client.delete(pipelinePath(pipeline.id))).status, 204);
      const again = await createPipeline(t, linearDocument(source, destination), name);
      assert.notEqual(again.id, pipeline.id);
    });
  });

  describe('endpoint references', () => {
    it('blocks deleting an endpoint a pipeline names, until the pipeline is deleted', async () => {
      const ownSource = await eventsSource(t, api);
      const ownDestination = await tableDestination(t, 'referenced', ['id']);
      const name = uniqueName('referencing');
      const pipeline = await createPipeline(t, linearDocument(ownSource, ownDestination), name);

      const blocked = await t.client.delete(`/api/v1/data-endpoints/${ownSource}`);
      assertProblem(blocked, 409, 'endpoint_referenced');
      assert.deepEqual(blocked.body.references, [{ kind: 'pipeline', id: pipeline.id, name }]);
      assertProblem(await t.client.delete(`/api/v1/data-endpoints/${ownDestination}`), 409, 'endpoint_referenced');

      assert.equal((await t.client.delete(pipelinePath(pipeline.id))).status, 204);
      assert.equal((await t.client.delete(`/api/v1/data-endpoints/${ownSource}`)).status, 204);
      assert.equal((await t.client.delete(`/api/v1/data-endpoints/${ownDestination}`)).status, 204);
      assertProblem(await t.client.get(`/api/v1/data-endpoints/${ownSource}`), 404, 'not_found');
    });

    it('counts an endpoint named only by an older, inactive version as referenced', async () => {
      const oldDestination = await tableDestination(t, 'old_target', ['id']);
      const pipeline = await createPipeline(t, linearDocument(source, oldDestination), uniqueName('moved'));
      assert.equal((await t.client.put(pipelinePath(pipeline.id), { document: linearDocument(source, destination) })).status, 200);
      assertProblem(await t.client.delete(`/api/v1/data-endpoints/${oldDestination}`), 409, 'endpoint_referenced');
      assert.equal((await t.client.delete(pipelinePath(pipeline.id))).status, 204);
      assert.equal((await t.client.delete(`/api/v1/data-endpoints/${oldDestination}`)).status, 204);
    });
  });

  describe('runs', () => {
    let good: { id: string; versionId: string };
    let bad: { id: string; versionId: string };
    let goodRun: any;
    let badRun: any;
    const projectRuns = () => `/api/v1/projects/${t.projectId}/runs`;

    before(async () => {
      const runsDestination = await tableDestination(t, 'runs_events', ['id']);
      const missing = await eventsSource(t, api, { request: { url: `${api.baseUrl}missing` } });
      good = await createPipeline(t, linearDocument(source, runsDestination, { writeMode: 'upsert' }), uniqueName('good'));
      bad = await createPipeline(t, linearDocument(missing, runsDestination, { writeMode: 'upsert' }), uniqueName('bad'));
      goodRun = await waitForRun(t, (await launch(t, good.id)).id);
      badRun = await waitForRun(t, (await launch(t, bad.id)).id);
      assert.equal(goodRun.status, 'succeeded', JSON.stringify(goodRun.error));
      assert.equal(badRun.status, 'failed');
    });

    it('lists the project\'s runs as {runs, pagination}, filtered by status and pipelineId', async () => {
      const all = await t.client.get(`${projectRuns()}?limit=200`);
      assert.equal(all.status, 200, JSON.stringify(all.body));
      assert.deepEqual(Object.keys(all.body).sort(), ['pagination', 'runs']);
      const ids = all.body.runs.map((r: any) => r.id);
      assert.ok(ids.includes(goodRun.id) && ids.includes(badRun.id));
      assert.ok(ids.indexOf(badRun.id) < ids.indexOf(goodRun.id), 'newest first');
      assert.ok(all.body.runs.every((r: any) => r.projectId === t.projectId));

      const failed = await t.client.get(`${projectRuns()}?status=failed&pipelineId=${bad.id}`);
      assert.deepEqual(failed.body.runs.map((r: any) => r.id), [badRun.id]);
      assert.equal(failed.body.runs[0].error.nodeId, 'src');
      assert.deepEqual(failed.body.pagination, { limit: 50, offset: 0, total: 1, nextOffset: null });

      const succeeded = await t.client.get(`${projectRuns()}?status=succeeded&pipelineId=${good.id}`);
      assert.deepEqual(succeeded.body.runs.map((r: any) => r.id), [goodRun.id]);
      assert.equal(succeeded.body.runs[0].pipelineId, good.id);
      assert.equal(succeeded.body.runs[0].versionId, good.versionId);
      assert.equal(succeeded.body.runs[0].nodes, undefined, 'the list carries summaries');

      const crossed = await t.client.get(`${projectRuns()}?status=failed&pipelineId=${good.id}`);
      assert.deepEqual(crossed.body.runs, []);
      assert.equal(crossed.body.pagination.total, 0);

      assertProblem(await t.client.get(`${projectRuns()}?status=exploded`), 422, 'validation_failed');
      assertProblem(await t.client.get(`${projectRuns()}?pipelineId=abc`), 422, 'validation_failed');
    });

    it('shows one run of the project with its nodes and document, and 404 for an unknown run', async () => {
      const res = await t.client.get(`${projectRuns()}/${badRun.id}`);
      assert.equal(res.status, 200);
      assert.equal(res.body.run.status, 'failed');
      assert.deepEqual(res.body.run.nodes.map((n: any) => n.nodeId), ['src', 'dst']);
      assertProblem(await t.client.get(`${projectRuns()}/${randomUUID()}`), 404, 'not_found');
    });

    it('refuses the run listing to a key whose member is not an administrator, but shows it a run', async () => {
      const plain = await memberKey(t, 'member', ['runs:read']);
      assertProblem(await plain.client.get(projectRuns()), 403, 'actor_not_administrator');
      assertProblem(await plain.client.get('/api/v1/runs'), 403, 'actor_not_administrator');
      const detail = await plain.client.get(`${projectRuns()}/${goodRun.id}`);
      assert.equal(detail.status, 200, JSON.stringify(detail.body));
      assert.equal(detail.body.run.id, goodRun.id);
      assert.equal((await plain.client.get(`/api/v1/runs/${goodRun.id}`)).status, 200);

      const admin = await memberKey(t, 'admin', ['runs:read']);
      assert.equal((await admin.client.get(projectRuns())).status, 200, 'an admin member\'s key may list');
    });

    it('keeps a project-restricted key to the runs of its own projects', async () => {
      const other = await createProject(env().db, t.ws.workspaceId, { name: uniqueName('elsewhere') });
      const elsewhere = await t.client.post(`/api/v1/projects/${other.id}/pipelines`, { name: uniqueName('elsewhere'), document: linearDocument(source, await tableDestination(t, 'elsewhere', ['id']), { writeMode: 'upsert' }) });
      assert.equal(elsewhere.status, 201, JSON.stringify(elsewhere.body));
      const launched = await t.client.post(`/api/v1/projects/${other.id}/pipelines/${elsewhere.body.pipeline.id}/execute`);
      assert.equal(launched.status, 202, JSON.stringify(launched.body));

      const restricted = as(await newKey(t.ws, { scopes: ['runs:read', 'pipelines:execute'], projectIds: [other.id] }));
      const listed = await restricted.get('/api/v1/runs?limit=200');
      assert.equal(listed.status, 200, JSON.stringify(listed.body));
      assert.deepEqual(listed.body.runs.map((r: any) => r.id), [launched.body.run.id]);
      assert.equal(listed.body.pagination.total, 1);

      assertProblem(await restricted.get(`/api/v1/runs/${goodRun.id}`), 403, 'project_denied');
      assertProblem(await restricted.get(`${projectRuns()}/${goodRun.id}`), 403, 'project_denied');
      assertProblem(await restricted.get(`/api/v1/runs?projectId=${t.projectId}`), 403, 'project_denied');
      assertProblem(await restricted.post('/api/v1/runs', { pipelineId: good.id }), 403, 'project_denied');
      assert.equal((await restricted.get(`/api/v1/runs/${launched.body.run.id}`)).status, 200);

      const unrestricted = await t.client.get(`/api/v1/runs?projectId=${other.id}`);
      assert.deepEqual(unrestricted.body.runs.map((r: any) => r.id), [launched.body.run.id]);
      await waitForRun({ ...t, projectId: other.id }, launched.body.run.id);
    });

    it('launches through POST /api/v1/runs with a pipelineId, and refuses an unknown one with 422 unknown_pipeline', async () => {
      const res = await t.client.post('/api/v1/runs', { pipelineId: good.id });
      assert.equal(res.status, 202, JSON.stringify(res.body));
      assert.equal(res.body.run.pipelineId, good.id);
      assert.equal(res.body.run.projectId, t.projectId);
      assert.equal(res.body.run.versionId, good.versionId);
      assert.ok(['queued', 'running'].includes(res.body.run.status));

      const unknown = await t.client.post('/api/v1/runs', { pipelineId: randomUUID() });
      assertProblem(unknown, 422, 'unknown_pipeline');
      assert.deepEqual(unknown.body.errors, [{ path: '/pipelineId', message: 'is not a pipeline of this workspace' }]);
      const foreign = await pipelineTenant(api.baseUrl);
      assertProblem(await foreign.client.post('/api/v1/runs', { pipelineId: good.id }), 422, 'unknown_pipeline');
      assertProblem(await t.client.post('/api/v1/runs', {}), 422, 'validation_failed');

      const byProject = await t.client.post(projectRuns(), { pipelineId: good.id });
      assert.equal(byProject.status, 202, JSON.stringify(byProject.body));
      await waitForRun(t, res.body.run.id, ended);
      await waitForRun(t, byProject.body.run.id, ended);
    });
  });

  describe('bad input', () => {
    let pipeline: { id: string; versionId: string };
    before(async () => {
      pipeline = await newPipeline();
    });

    const createWith = (document: unknown) => t.client.post(pipelines(), { name: uniqueName('bad-input'), document });

    it('answers a malformed JSON body with 400 malformed_json', async () => {
      const res = await t.client.post(pipelines(), undefined, { rawBody: '{"name": "x", "document": ', headers: { 'Content-Type': 'application/json' } });
      assertProblem(res, 400, 'malformed_json');
      assertProblem(await t.client.put(`${pipelinePath(pipeline.id)}/draft`, undefined, { rawBody: '{nodes: []}', headers: { 'Content-Type': 'application/json' } }), 400, 'malformed_json');
    });

    it('answers a body that is not JSON with 415 unsupported_media_type', async () => {
      const body = JSON.stringify({ name: uniqueName('text'), document: linearDocument(source, destination) });
      assertProblem(await t.client.post(pipelines(), undefined, { rawBody: body, headers: { 'Content-Type': 'text/plain' } }), 415, 'unsupported_media_type');
      assertProblem(await t.client.patch(pipelinePath(pipeline.id), undefined, { rawBody: 'name=x', headers: { 'Content-Type': 'application/x-www-form-urlencoded' } }), 415, 'unsupported_media_type');
    });

    it('answers path ids that are not lowercase canonical UUIDs with 422', async () => {
      assertProblem(await t.client.get('/api/v1/projects/not-a-uuid/pipelines'), 422, 'validation_failed');
      assertProblem(await t.client.get(`${pipelines()}/123`), 422, 'validation_failed');
      assertProblem(await t.client.get(`${pipelines()}/${pipeline.id.toUpperCase()}`), 422, 'validation_failed');
      assertProblem(await t.client.post(`${pipelinePath(pipeline.id)}/versions/latest/activate`), 422, 'validation_failed');
      assertProblem(await t.client.get('/api/v1/runs/run-1'), 422, 'validation_failed');
      assertProblem(await t.client.get(`/api/v1/projects/${t.projectId}/runs/run-1`), 422, 'validation_failed');
    });

    it('refuses documents that break the document schema with 422 and the field that is wrong', async () => {
      const cases: Array<[string, unknown, RegExp]> = [
        ['unknown node type', { nodes: [{ id: 'x', type: 'teleport' }], edges: [] }, /\/document\/nodes\/0/],
        ['a source without endpointId', linearDocument(source, destination).nodes.map((n) => (n.id === 'src' ? { id: 'src', type: 'source' } : n)), /endpointId/],
        ['an extra node property', { ...linearDocument(source, destination), nodes: linearDocument(source, destination).nodes.map((n) => ({ ...n, colour: 'blue' })) }, /\/document\/nodes\/0/],
        ['an extra document property', { ...linearDocument(source, destination), layout: {} }, /\/document/],
        ['nodes that are not an array', { nodes: { src: {} }, edges: [] }, /\/document\/nodes/],
        ['no nodes at all', { nodes: [], edges: [] }, /\/document\/nodes/],
        ['an edge without its target', { ...linearDocument(source, destination), edges: [{ from: 'src' }] }, /\/document\/edges\/0/],
        ['an endpoint id in upper case', linearDocument(source.toUpperCase(), destination), /\/document\/nodes\/0\/endpointId/],
        ['a node id with spaces', { ...linearDocument(source, destination), nodes: [{ id: 'my source', type: 'source', endpointId: source }] }, /\/document\/nodes\/0\/id/],
      ];
      for (const [what, candidate, path] of cases) {
        const document = Array.isArray(candidate) ? { nodes: candidate, edges: linearDocument(source, destination).edges } : candidate;
        const res = await createWith(document);
        assertProblem(res, 422, 'validation_failed');
        assert.ok(Array.isArray(res.body.errors) && res.body.errors.length > 0, `${what}: ${JSON.stringify(res.body)}`);
        assert.ok(res.body.errors.some((e: any) => path.test(e.path)), `${what}: ${JSON.stringify(res.body.errors)}`);
      }
      assertProblem(await t.client.post(`${pipelinePath(pipeline.id)}/versions`, { document: { nodes: [{ id: 'x', type: 'teleport' }], edges: [] } }), 422, 'validation_failed');
      assertProblem(await t.client.put(pipelinePath(pipeline.id), { document: { nodes: 'src', edges: [] } }), 422, 'validation_failed');
    });

    it('creates a pipeline from the spec’s create body alone: without a name it is "Untitled pipeline", numbered when taken', async () => {
      const project = await createProject(env().db, t.ws.workspaceId, { name: `untitled-${Date.now()}` });
      const path = `/api/v1/projects/${project.id}/pipelines`;
      const first = await t.client.post(path, { document: linearDocument(source, destination), commitMessage: 'from the spec' });
      assert.equal(first.status, 201, JSON.stringify(first.body));
      assert.equal(first.body.pipeline.name, 'Untitled pipeline');
      assert.equal(first.body.version.commitMessage, 'from the spec');
      const second = await t.client.post(path, { document: linearDocument(source, destination) });
      assert.equal(second.status, 201, JSON.stringify(second.body));
      assert.equal(second.body.pipeline.name, 'Untitled pipeline 2');
    });

    it('refuses request bodies with missing or extra properties with 422', async () => {
      assertProblem(await t.client.post(pipelines(), { name: '', document: linearDocument(source, destination) }), 422, 'validation_failed');
      assertProblem(await t.client.post(pipelines(), { name: uniqueName('x'), document: linearDocument(source, destination), launch: true }), 422, 'validation_failed');
      assertProblem(await t.client.post(pipelines(), []), 422, 'validation_failed');
      assertProblem(await t.client.put(`${pipelinePath(pipeline.id)}/draft`, { document: { nodes: 'none', edges: [] } }), 422, 'validation_failed');
      assertProblem(await t.client.put(`${pipelinePath(pipeline.id)}/draft`, { nodes: [], edges: [] }), 422, 'validation_failed');
      assertProblem(await t.client.post(`${pipelinePath(pipeline.id)}/versions`, { document: linearDocument(source, destination), branchName: 'main', extra: 1 }), 422, 'validation_failed');
      assertProblem(await t.client.post(`${pipelinePath(pipeline.id)}/versions/${pipeline.versionId}/activate`, { versionId: 'one' }), 422, 'validation_failed');
      assertProblem(await t.client.post(`${pipelinePath(pipeline.id)}/preview`, { sampleSize: 0 }), 422, 'validation_failed');
      assertProblem(await t.client.post(`${pipelinePath(pipeline.id)}/preview`, { sampleSize: 201 }), 422, 'validation_failed');
    });

    it('refuses an Idempotency-Key that is too short', async () => {
      const res = await t.client.post(pipelines(), { name: uniqueName('short-key'), document: linearDocument(source, destination) }, { headers: { 'Idempotency-Key': 'short' } });
      assertProblem(res, 422, 'invalid_idempotency_key');
    });
  });

  describe('preview', () => {
    const filtered = (src: string, dst: string) => linearDocument(src, dst, { writeMode: 'upsert', transforms: [{ type: 'filter', where: [{ field: 'status', op: 'eq', value: 'open' }] }] });

    it('shows each node\'s output for a sample of the source and writes nothing', async () => {
      const previewDestination = await tableDestination(t, 'preview_events', ['id']);
      const pipeline = await createPipeline(t, filtered(source, previewDestination), uniqueName('preview'));
      const received = api.received.length;

      const res = await t.client.post(`${pipelinePath(pipeline.id)}/preview`, { sampleSize: 5 });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const { preview } = res.body;
      assert.equal(preview.sampleSize, 5);
      assert.equal(preview.draft, true);
      assert.equal(preview.versionId, null);
      const byId = Object.fromEntries(preview.nodes.map((n: any) => [n.nodeId, n]));
      assert.deepEqual(preview.nodes.map((n: any) => [n.nodeId, n.type]), [['src', 'source'], ['t1', 'filter'], ['dst', 'destination']]);

      assert.deepEqual(byId.src.records.map((r: any) => r.id), [1, 2, 3, 4, 5]);
      assert.deepEqual(byId.src.records[0], api.records[0]);
      assert.deepEqual(byId.t1.records.map((r: any) => r.id), [1, 3, 5]);
      assert.ok(byId.t1.records.every((r: any) => r.status === 'open'));
      assert.equal(byId.t1.recordsIn, 5);
      assert.deepEqual(byId.dst.records.map((r: any) => r.id), [1, 3, 5], 'the destination shows what it would receive');
      assert.ok(preview.nodes.every((n: any) => n.error === null), JSON.stringify(preview.nodes));
      assert.equal(api.received.length - received, 1, 'one page of the source was read');

      const records = await t.client.get(`/api/v1/data-endpoints/${previewDestination}/records`);
      assert.equal(records.status, 200, JSON.stringify(records.body));
      assert.deepEqual(records.body.data, []);
      const runs = await t.client.get(`/api/v1/projects/${t.projectId}/runs?pipelineId=${pipeline.id}`);
      assert.equal(runs.body.pagination.total, 0, 'a preview is not a run');
    });

    it('previews the caller\'s draft by default and a committed version when asked', async () => {
      const previewDestination = await tableDestination(t, 'preview_versions', ['id']);
      const pipeline = await createPipeline(t, linearDocument(source, previewDestination, { writeMode: 'upsert' }), uniqueName('preview-draft'));
      assert.equal((await t.client.put(`${pipelinePath(pipeline.id)}/draft`, { document: filtered(source, previewDestination) })).status, 200);

      const draft = await t.client.post(`${pipelinePath(pipeline.id)}/preview`, { sampleSize: 4 });
      assert.equal(draft.status, 200, JSON.stringify(draft.body));
      assert.deepEqual(draft.body.preview.nodes.map((n: any) => n.nodeId), ['src', 't1', 'dst']);
      assert.deepEqual(draft.body.preview.nodes.at(-1).records.map((r: any) => r.id), [1, 3]);

      const version = await t.client.post(`${pipelinePath(pipeline.id)}/preview`, { sampleSize: 4, versionId: pipeline.versionId });
      assert.equal(version.status, 200, JSON.stringify(version.body));
      assert.equal(version.body.preview.draft, false);
      assert.equal(version.body.preview.versionId, pipeline.versionId);
      assert.deepEqual(version.body.preview.nodes.map((n: any) => n.nodeId), ['src', 'dst']);
      assert.deepEqual(version.body.preview.nodes.at(-1).records.map((r: any) => r.id), [1, 2, 3, 4]);

      assertProblem(await t.client.post(`${pipelinePath(pipeline.id)}/preview`, { versionId: randomUUID() }), 422, 'unknown_version');
    });

    it('refuses to preview a draft that is not a complete document yet', async () => {
      const pipeline = await newPipeline();
      assert.equal((await t.client.put(`${pipelinePath(pipeline.id)}/draft`, { document: { nodes: [{ id: 'src', type: 'source' }], edges: [] } })).status, 200);
      const res = await t.client.post(`${pipelinePath(pipeline.id)}/preview`, { sampleSize: 5 });
      assertProblem(res, 422, 'pipeline_invalid');
      assert.ok(res.body.errors.some((e: any) => e.path.startsWith('/document/nodes/0')), JSON.stringify(res.body.errors));
    });

    it('meters the sources\' records it reads like every other records read', async () => {
      const previewDestination = await tableDestination(t, 'preview_metered', ['id']);
      const pipeline = await createPipeline(t, linearDocument(source, previewDestination), uniqueName('preview-metered'));
      const key = await newKey(t.ws, { scopes: PIPELINE_SCOPES });
      const res = await as(key).post(`${pipelinePath(pipeline.id)}/preview`, { sampleSize: 5 });
      assert.equal(res.status, 200, JSON.stringify(res.body));
      const keyId = await keyIdOf(key);
      const operations = await as(t.ws.apiKey).get('/api/v1/usage/operations?limit=100');
      assert.equal(operations.status, 200, JSON.stringify(operations.body));
      const reads = operations.body.operations.filter((o: any) => o.kind === 'records_read' && o.apiKeyId === keyId);
      assert.equal(reads.length, 1, JSON.stringify(operations.body.operations));
      assert.deepEqual(reads[0].quantities, { request: 1, record: 5 });
      assert.equal(reads[0].projectId, t.projectId);
    });

    it('needs data:read as well as pipelines:write', async () => {
      const pipeline = await newPipeline();
      const withoutData = as(await newKey(t.ws, { scopes: ['pipelines:read', 'pipelines:write'] }));
      const res = await withoutData.post(`${pipelinePath(pipeline.id)}/preview`, { sampleSize: 5 });
      assertProblem(res, 403, 'insufficient_scope');
      assert.deepEqual(res.body.requiredScopes, ['data:read']);
      const readOnly = as(await newKey(t.ws, { scopes: ['pipelines:read', 'data:read'] }));
      assertProblem(await readOnly.post(`${pipelinePath(pipeline.id)}/preview`, { sampleSize: 5 }), 403, 'insufficient_scope');
    });
  });

  describe('scopes', () => {
    it('lets a pipelines:read key read but not change pipelines', async () => {
      const pipeline = await newPipeline();
      const reader = as(await newKey(t.ws, { scopes: ['pipelines:read'] }));
      assert.equal((await reader.get(pipelinePath(pipeline.id))).status, 200);
      assert.equal((await reader.get(`${pipelinePath(pipeline.id)}/versions`)).status, 200);
      assert.equal((await reader.get(`${pipelinePath(pipeline.id)}/draft`)).status, 200);
      assertProblem(await reader.post(pipelines(), { name: uniqueName('nope'), document: linearDocument(source, destination) }), 403, 'insufficient_scope');
      assertProblem(await reader.put(`${pipelinePath(pipeline.id)}/draft`, { document: linearDocument(source, destination) }), 403, 'insufficient_scope');
      assertProblem(await reader.patch(pipelinePath(pipeline.id), { name: 'nope' }), 403, 'insufficient_scope');
      assertProblem(await reader.delete(pipelinePath(pipeline.id)), 403, 'insufficient_scope');
      assertProblem(await reader.get(`/api/v1/projects/${t.projectId}/runs`), 403, 'insufficient_scope');
    });

    it('refuses a project-restricted key on a project outside its allowlist', async () => {
      const pipeline = await newPipeline();
      const other = await createProject(env().db, t.ws.workspaceId, { name: uniqueName('allowlisted') });
      const restricted = as(await newKey(t.ws, { scopes: ['pipelines:read'], projectIds: [other.id] }));
      assertProblem(await restricted.get(pipelinePath(pipeline.id)), 403, 'project_denied');
      assertProblem(await restricted.get(pipelines()), 403, 'project_denied');
      assert.equal((await restricted.get(`/api/v1/projects/${other.id}/pipelines`)).status, 200);
    });
  });
});
