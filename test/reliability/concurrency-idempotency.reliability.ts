import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { defaultBaseIri } from '../../ontology/compile';
import { env } from '../support/environment';
import type { HttpResponse } from '../support/fixtures';
import { burst, useApiProcesses } from './support/concurrency-processes';
import { connectMcp, populateTenant, Tenant } from './support/tenant-fixtures';
import { fetchOpenApi, label, Operation, operationsOf } from './support/tenant-openapi';

/**
 * Concurrency (reliability issue item 6a): 50 concurrent retries of one request (same
 * Idempotency-Key, same body), spread over three API processes, act once. For every operation of
 * the OpenAPI document that takes an Idempotency-Key: exactly one resource or effect, every answer
 * the same status and body, all but one marked Idempotent-Replayed. Then the same for
 * representative MCP tools with an idempotencyKey.
 */
const RETRIES = 50;

interface IdempotentCase {
  /** Path parameters and body (JSON, or raw text of a media type) of the one request retried 50 times. */
  request(t: Tenant): { params?: Record<string, string>; body?: unknown; raw?: { text: string; type: string } };
  /** Runs once before the case (settings the request needs). */
  prepare?(t: Tenant): Promise<void>;
  /** Where the key is kept: the idempotency records (default), or the governed write actions it becomes. */
  keyStore?: 'write_actions';
  /** The effect's size: it must grow by exactly one. */
  count(t: Tenant, body: any): Promise<number>;
}

const db = () => env().db;
/** The pipeline the deletePipeline case creates and then deletes 50 times over. */
let doomedPipelineId = '';
const countOf = async (query: Promise<Array<{ count: string | number }>>) => Number((await query)[0].count);
const runsOf = (t: Tenant) => countOf(db()('pipeline_runs').where({ pipeline_id: t.ids.pipelineId }).count({ count: '*' }));

/** One entry per idempotent operation; a new one fails the suite until it is described here. */
const CASES: Record<string, IdempotentCase> = {
  createProject: {
    request: () => ({ body: { name: `once-${randomUUID().slice(0, 8)}`, description: 'made by 50 retries' } }),
    count: (t, body) => countOf(db()('projects').where({ workspace_id: t.ws.workspaceId, name: body.name }).count({ count: '*' })),
  },
  createDataEndpoint: {
    request: (t) => {
      const table = `once_${randomUUID().replace(/-/g, '').slice(0, 10)}`;
      return { body: { name: table, namespace: 'once', role: 'source', contractKind: 'source_stream', pluginCapabilityInstallationId: t.ids.installationId, target: { table, primaryKey: ['id'] } } };
    },
    count: (t, body) => countOf(db()('data_endpoints').where({ workspace_id: t.ws.workspaceId, name: body.name }).count({ count: '*' })),
  },
  createPipeline: {
    request: (t) => ({ params: { project_id: t.ids.projectId }, body: { name: `once-${randomUUID().slice(0, 8)}`, document: t.document } }),
    count: (t, body) => countOf(db()('pipelines').where({ project_id: t.ids.projectId, name: body.name }).count({ count: '*' })),
  },
  commitPipelineVersion: {
    request: (t) => ({ params: { project_id: t.ids.projectId, pipeline_id: t.ids.pipelineId }, body: { document: t.document, commitMessage: `once-${randomUUID()}` } }),
    count: (t, body) => countOf(db()('pipeline_versions').where({ pipeline_id: t.ids.pipelineId, commit_message: body.commitMessage }).count({ count: '*' })),
  },
  // PUT of a draft takes a key too (the MCP tool pipeline_draft_save shares its operation).
  savePipelineDraft: {
    request: (t) => ({ params: { project_id: t.ids.projectId, pipeline_id: t.ids.pipelineId }, body: { document: t.document, workspaceState: { marker: `once-${randomUUID()}` } } }),
    count: (t, body) => countOf(db()('pipeline_drafts').where({ pipeline_id: t.ids.pipelineId }).whereRaw("workspace_state->>'marker' = ?", [body.workspaceState.marker]).count({ count: '*' })),
  },
  // DELETE of a pipeline takes a key too (the MCP tool pipeline_delete shares its operation): the effect is one pipeline gone.
  deletePipeline: {
    prepare: async (t) => {
      const res = await t.client.post(`/api/v1/projects/${t.ids.projectId}/pipelines`, { name: `doomed-${randomUUID().slice(0, 8)}`, document: t.document });
      assert.equal(res.status, 201, JSON.stringify(res.body));
      doomedPipelineId = res.body.pipeline.id;
    },
    request: (t) => ({ params: { project_id: t.ids.projectId, pipeline_id: doomedPipelineId } }),
    count: async () => 1 - (await countOf(db()('pipelines').where({ id: doomedPipelineId }).count({ count: '*' }))),
  },
  createPipelineBranch: {
    request: (t) => ({ params: { project_id: t.ids.projectId, pipeline_id: t.ids.pipelineId }, body: { name: `once-${randomUUID().slice(0, 8)}` } }),
    count: (t, body) => countOf(db()('pipeline_branches').where({ pipeline_id: t.ids.pipelineId, name: body.name }).count({ count: '*' })),
  },
  executePipeline: {
    request: (t) => ({ params: { project_id: t.ids.projectId, pipeline_id: t.ids.pipelineId } }),
    count: (t) => runsOf(t),
  },
  launchProjectRun: {
    request: (t) => ({ params: { project_id: t.ids.projectId }, body: { pipelineId: t.ids.pipelineId } }),
    count: (t) => runsOf(t),
  },
  launchRun: {
    request: (t) => ({ body: { pipelineId: t.ids.pipelineId } }),
    count: (t) => runsOf(t),
  },
  createReadBinding: {
    request: (t) => ({
      params: { project_id: t.ids.projectId },
      body: { ontologyPackageId: t.ids.packageId, termId: t.ids.term, dataEndpointId: t.ids.sourceEndpointId, mapping: { subjectTemplate: `https://example.com/once/${randomUUID()}/{id}`, properties: { [t.ids.property]: 'total' } } },
    }),
    count: (t, body) => countOf(db()('read_bindings').where({ project_id: t.ids.projectId }).whereRaw("mapping->>'subjectTemplate' = ?", [body.mapping.subjectTemplate]).count({ count: '*' })),
  },
  // Accepts an Idempotency-Key for updates: a SPARQL update becomes one governed write action.
  sparqlQueryPost: {
    prepare: async (t) => {
      const res = await t.client.patch('/api/v1/organization/settings', { semanticConsumerMode: 'write' });
      assert.equal(res.status, 200, JSON.stringify(res.body));
    },
    request: (t) => ({
      params: { project_id: t.ids.projectId },
      raw: { type: 'application/sparql-update', text: `PREFIX : <${defaultBaseIri(t.ids.projectId)}> INSERT DATA { <https://example.com/${t.label}/orders/${1000 + Math.floor(Math.random() * 1000)}> :${t.ids.property} 77 }` },
    }),
    count: (t) => countOf(db()('write_actions').where({ workspace_id: t.ws.workspaceId, data_endpoint_id: t.ids.sourceEndpointId }).count({ count: '*' })),
    keyStore: 'write_actions',
  },
  createQuery: {
    request: (t) => ({
      params: { project_id: t.ids.projectId },
      body: {
        name: `once-${randomUUID().slice(0, 8)}`,
        sparql: `SELECT ?order ?total WHERE { ?order a :${t.ids.term} ; :${t.ids.property} ?total }`,
        inputSchema: { type: 'object', properties: {} },
        outputSchema: { type: 'object', properties: { order: { type: 'string' }, total: { type: 'number' } } },
      },
    }),
    count: (t, body) => countOf(db()('published_queries').where({ project_id: t.ids.projectId, name: body.name }).count({ count: '*' })),
  },
};

describe('Concurrency: 50 concurrent retries of one idempotent request act once', function () {
  this.timeout(600_000);
  const processes = useApiProcesses(2);
  let t: Tenant;
  let idempotent: Operation[];

  before(async () => {
    t = await populateTenant('C');
    idempotent = operationsOf(await fetchOpenApi()).filter((op) => op.idempotent);
  });

  it('describes every operation that takes an Idempotency-Key', () => {
    assert.ok(idempotent.length >= 10, `only ${idempotent.length} idempotent operations`);
    const missing = idempotent.filter((op) => !CASES[op.operationId]).map(label);
    assert.deepEqual(missing, [], 'idempotent operations without a case in CASES');
  });

  /** Sends the same request RETRIES times at once, round robin over the API processes; keeps each answer's exact text. */
  function retries(op: Operation, path: string, body: unknown, raw: { text: string; type: string } | undefined, idempotencyKey: string): Promise<Array<HttpResponse & { text: string }>> {
    const type = raw?.type ?? (body === undefined ? undefined : 'application/json');
    return burst(RETRIES, async (i) => {
      const res = await fetch(`${processes.urls[i % processes.urls.length]}${path}`, {
        method: op.method,
        headers: { Authorization: `Bearer ${t.key}`, 'Idempotency-Key': idempotencyKey, ...(type ? { 'Content-Type': type } : {}) },
        body: raw?.text ?? (body === undefined ? undefined : JSON.stringify(body)),
      });
      const text = await res.text();
      return { status: res.status, headers: res.headers, body: /json/.test(res.headers.get('content-type') ?? '') && text ? JSON.parse(text) : text, text };
    });
  }

  it('HTTP: one effect, the same status and body for all 50, 49 marked Idempotent-Replayed', async () => {
    const wrong: string[] = [];
    for (const op of idempotent) {
      const spec = CASES[op.operationId];
      await spec.prepare?.(t);
      const { params = {}, body, raw } = spec.request(t);
      const path = op.path.replace(/\{([A-Za-z_]+)\}/g, (_, name: string) => params[name]);
      const idempotencyKey = `retry-${op.operationId}-${randomUUID()}`;
      const before = await spec.count(t, body);
      const answers = await retries(op, path, body, raw, idempotencyKey);
      const after = await spec.count(t, body);
      const statuses = [...new Set(answers.map((r) => r.status))];
      const problems: string[] = [];
      if (statuses.length !== 1 || statuses[0] >= 300) problems.push(`statuses ${answers.map((r) => r.status).join(',')}: ${JSON.stringify(answers.find((r) => r.status >= 300)?.body)}`);
      if (after - before !== 1) problems.push(`${after - before} effects`);
      const differing = answers.filter((r) => !isDeepStrictEqual(r.body, answers[0].body));
      if (differing.length) problems.push(`${differing.length} bodies differ from the first, e.g. ${JSON.stringify(differing[0].body).slice(0, 300)}`);
      // The same body means the same bytes: a client may compare or hash what it received.
      const first = answers.find((r) => r.headers.get('idempotent-replayed') !== 'true') ?? answers[0];
      const otherText = answers.filter((r) => r.text !== first.text);
      if (!differing.length && otherText.length) problems.push(`${otherText.length} bodies carry the same JSON in other bytes than the first answer, e.g. first ${first.text.slice(0, 200)} replay ${otherText[0].text.slice(0, 200)}`);
      const replays = answers.filter((r) => r.headers.get('idempotent-replayed') === 'true').length;
      if (replays !== RETRIES - 1) problems.push(`${replays} answers marked Idempotent-Replayed`);
      const records = await countOf(db()(spec.keyStore ?? 'idempotency_records').where({ workspace_id: t.ws.workspaceId, idempotency_key: idempotencyKey }).count({ count: '*' }));
      if (records !== 1) problems.push(`${records} rows in ${spec.keyStore ?? 'idempotency_records'} with the key`);
      if (problems.length) wrong.push(`${label(op)}: ${problems.join('; ')}`);
    }
    assert.deepEqual(wrong, []);
  });

  it('HTTP: a SPARQL update applied at once (no approval) is retried 50 times: one write, one new snapshot, the first outcome for all', async () => {
    const op = idempotent.find((o) => o.operationId === 'sparqlQueryPost')!;
    const policy = `/api/v1/data-endpoints/${t.ids.sourceEndpointId}/write-policy`;
    assert.equal((await t.client.put(policy, { allowedOperations: ['append', 'upsert'] })).status, 200);
    try {
      await CASES.sparqlQueryPost.prepare!(t);
      const { raw } = CASES.sparqlQueryPost.request(t);
      // The source table's own snapshots: runs launched by the tests before may still commit to other tables of the workspace.
      const [{ table }] = await db()('data_endpoints').where({ id: t.ids.sourceEndpointId }).select(db().raw("target->>'table' AS table"));
      const snapshots = async () => countOf(db()(`weft_ws_${t.ws.workspaceId.replace(/-/g, '')}._snapshots`).where({ table_name: table }).count({ count: '*' }));
      const [actionsBefore, snapshotsBefore] = [await CASES.sparqlQueryPost.count(t, undefined), await snapshots()];
      const answers = await retries(op, `/api/v1/projects/${t.ids.projectId}/ontology/sparql`, undefined, raw, `sparql-${randomUUID()}`);
      assert.deepEqual([...new Set(answers.map((r) => r.status))], [200], answers.map((r) => `${r.status} ${r.text.slice(0, 200)}`).find((x) => !x.startsWith('200')));
      assert.equal(new Set(answers.map((r) => r.text)).size, 1, 'one answer text');
      assert.equal(answers[0].body.writeActions[0].status, 'applied');
      assert.equal(answers.filter((r) => r.headers.get('idempotent-replayed') === 'true').length, RETRIES - 1);
      assert.equal(await CASES.sparqlQueryPost.count(t, undefined) - actionsBefore, 1, 'one write action');
      assert.equal(await snapshots() - snapshotsBefore, 1, 'one committed write');
    } finally {
      await t.client.put(policy, { allowedOperations: ['append', 'upsert'], approval: { required: true, approvers: 1, timeoutSeconds: 86_400 } });
    }
  });

  describe('MCP tools with an idempotencyKey', () => {
    type ToolResult = { isError?: boolean; structuredContent?: Record<string, any>; content?: unknown; _meta?: Record<string, unknown> };
    let clients: Client[] = [];
    before(async () => {
      // Two sessions per API process: retries arrive over different connections and processes.
      clients = [];
      for (const url of processes.urls) for (let i = 0; i < 2; i++) clients.push(await connectMcp(t.key, '/mcp', url));
    });
    after(async () => {
      for (const client of clients) await client.close().catch(() => undefined);
    });

    async function retriesOf(name: string, args: Record<string, unknown>): Promise<ToolResult[]> {
      return burst(RETRIES, (i) => clients[i % clients.length].callTool({ name, arguments: args }) as Promise<ToolResult>);
    }

    function checkOnce(name: string, results: ToolResult[], effects: number): string[] {
      const problems: string[] = [];
      const failed = results.filter((r) => r.isError);
      if (failed.length) problems.push(`${failed.length} errors, e.g. ${JSON.stringify(failed[0].structuredContent).slice(0, 300)}`);
      if (effects !== 1) problems.push(`${effects} effects`);
      const differing = results.filter((r) => !isDeepStrictEqual(r.structuredContent, results[0].structuredContent));
      if (differing.length) problems.push(`${differing.length} results differ from the first`);
      // The text content (what a model reads) is the same text too.
      const texts = new Set(results.map((r) => JSON.stringify(r.content)));
      if (!differing.length && texts.size > 1) problems.push(`the same result in ${texts.size} different texts`);
      const replays = results.filter((r) => r._meta?.idempotentReplayed === true).length;
      if (replays !== RETRIES - 1) problems.push(`${replays} results marked idempotentReplayed`);
      return problems.length ? [`${name}: ${problems.join('; ')}`] : [];
    }

    it('pipeline_create, pipeline_execute, pipeline_schedule_create, source_create and pipeline_delete act once for 50 concurrent calls', async () => {
      const wrong: string[] = [];
      const key = () => `mcp-retry-${randomUUID()}`;

      const name = `mcp-once-${randomUUID().slice(0, 8)}`;
      const created = await retriesOf('pipeline_create', { projectId: t.ids.projectId, name, document: t.document, idempotencyKey: key() });
      const pipelines = await countOf(db()('pipelines').where({ project_id: t.ids.projectId, name }).count({ count: '*' }));
      wrong.push(...checkOnce('pipeline_create', created, pipelines));
      const pipelineId = created.find((r) => !r.isError)?.structuredContent?.pipeline?.id as string;

      const runsBefore = await countOf(db()('pipeline_runs').where({ pipeline_id: pipelineId }).count({ count: '*' }));
      const executed = await retriesOf('pipeline_execute', { projectId: t.ids.projectId, pipelineId, idempotencyKey: key() });
      const runs = await countOf(db()('pipeline_runs').where({ pipeline_id: pipelineId }).count({ count: '*' }));
      wrong.push(...checkOnce('pipeline_execute', executed, runs - runsBefore));

      const scheduled = await retriesOf('pipeline_schedule_create', { projectId: t.ids.projectId, pipelineId, intervalSeconds: 3600, paused: true, idempotencyKey: key() });
      const schedules = await countOf(db()('pipeline_schedules').where({ pipeline_id: pipelineId }).count({ count: '*' }));
      wrong.push(...checkOnce('pipeline_schedule_create', scheduled, schedules));

      const table = `mcp_once_${randomUUID().replace(/-/g, '').slice(0, 10)}`;
      const sources = await retriesOf('source_create', { name: table, namespace: 'once', contractKind: 'source_stream', pluginCapabilityInstallationId: t.ids.installationId, target: { table, primaryKey: ['id'] }, idempotencyKey: key() });
      const endpoints = await countOf(db()('data_endpoints').where({ workspace_id: t.ws.workspaceId, name: table }).count({ count: '*' }));
      wrong.push(...checkOnce('source_create', sources, endpoints));

      const deleted = await retriesOf('pipeline_delete', { projectId: t.ids.projectId, id: pipelineId, confirm: true, idempotencyKey: key() });
      const remaining = await countOf(db()('pipelines').where({ id: pipelineId }).count({ count: '*' }));
      wrong.push(...checkOnce('pipeline_delete', deleted, 1 - remaining));

      assert.deepEqual(wrong, []);
    });
  });
});

