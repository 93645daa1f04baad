import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { defaultBaseIri } from '../../../ontology/compile';
import { EXECUTION_DEFAULTS } from '../../../services/ontology/query-execution';
import { installPlugin } from '../../../services/endpoints/plugins';
import type { BootstrapResult } from '../../../services/tenancy/workspaces';
import { env } from '../../support/environment';
import { as, keyIdOf, newWorkspace, raiseRequestLimits } from '../../support/fixtures';
import { connectWatched } from '../../support/mcp-client';
import { settled } from '../../support/polling';

/**
 * A fully populated tenant for the tenant sweep: one workspace holding one of every resource kind
 * that a path (or an MCP tool argument) names by id, built through the public API wherever the
 * API can build it (the plugin installation is an operator action: admin CLI / service).
 *
 * Element names (ontology terms, links, …) and release numbers are not global ids: they are
 * scoped by their project or query. Each project gets its own names (suffix = label) and its own
 * number of releases, so "A's project with B's term" really names something A does not have.
 */
export interface ProjectIds {
  projectId: string;
  /** A write action of this project, waiting for approval (a day). */
  pendingActionId: string;
  pipelineId: string;
  /** The active version (v1, main). */
  activeVersionId: string;
  /** A second version, committed on branch "dev". */
  branchVersionId: string;
  runId: string;
  scheduleId: string;
  ontologyVersionId: string;
  packageId: string;
  documentId: string;
  bindingId: string;
  queryId: string;
  queryVersionId: string;
  /** The project's newest release number (A has 1 release, B has 2). */
  releaseVersion: string;
  jobId: string;
  executionId: string;
  term: string;
  property: string;
  link: string;
  shape: string;
  constraint: string;
  import: string;
}

export interface TenantIds extends ProjectIds {
  secondProjectId: string;
  keyId: string;
  installationId: string;
  sourceEndpointId: string;
  destinationEndpointId: string;
  appliedActionId: string;
  operationId: string;
}

export interface Tenant {
  label: string;
  ws: BootstrapResult;
  /** The owner's unrestricted org:manage key (stands in for every operation scope). */
  key: string;
  client: ReturnType<typeof as>;
  ids: TenantIds;
  /** With populateTenant's otherProject: the same project kinds in the second project. */
  other?: ProjectIds;
  /** A runnable pipeline document over this tenant's endpoints. */
  document: { nodes: Array<Record<string, unknown>>; edges: Array<Record<string, unknown>> };
  /** The source endpoint's current snapshot, for write bodies. */
  snapshot: { id: string; version: string };
}

export async function connectMcp(key: string, path = '/mcp', baseUrl = env().baseUrl): Promise<Client> {
  return (await connectWatched(key, { path, baseUrl, name: 'weft-reliability' })).client;
}

/** Throws, naming the step and the answer, unless the status is one of `status`. */
export function expectStatus(res: { status: number; body: unknown }, status: number | number[], what: string): void {
  const wanted = Array.isArray(status) ? status : [status];
  if (!wanted.includes(res.status)) throw new Error(`${what} answered ${res.status} (expected ${wanted.join('/')}) ${JSON.stringify(res.body)}`);
}

const poll = <T>(what: string, read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 60_000): Promise<T> => settled(what, read, done, timeoutMs, 200);

interface WorkspaceContext {
  ws: BootstrapResult;
  client: ReturnType<typeof as>;
  sourceId: string;
  document: Tenant['document'];
  snapshot: Tenant['snapshot'];
}

/**
 * Builds a tenant with every resource kind. `releases` sets how many releases its query gets;
 * `otherProject` fills the second project with the project kinds too (for allowlist sweeps).
 */
export async function populateTenant(label: string, options: { releases?: number; otherProject?: boolean } = {}): Promise<Tenant> {
  const ws = await newWorkspace(`tenant-${label}-${randomUUID().slice(0, 6)}`);
  await raiseRequestLimits(ws.workspaceId);
  const client = as(ws.apiKey);

  // Operator: the managed_table capability (the public API does not install plugins).
  const installation = await installPlugin(env().db, env().encryptionKey, ws.workspaceId, 'managed_table', {});

  // Keys and projects.
  const key = await client.post('/api/v1/api-keys', { name: `victim-${label}`, scopes: ['org:read'] });
  expectStatus(key, 201, 'api key');
  const second = await client.post('/api/v1/projects', { name: `second-${label}` });
  expectStatus(second, 201, 'second project');

  // Endpoints: a managed-table source (seeded by a governed write) and a managed-table sink.
  const table = `src_${label.toLowerCase()}_${randomUUID().replace(/-/g, '').slice(0, 8)}`;
  const { sourceId, destinationId } = await managedEndpointPair(client, installation.id, table, 'tenant');

  // Write policy and an applied write action that seeds the source; then approval becomes
  // required (a day to decide), so each project's pending action stays unchanged for the test.
  expectStatus(await client.put(`/api/v1/data-endpoints/${sourceId}/write-policy`, { allowedOperations: ['append', 'upsert'] }), [200, 201], 'write policy');
  const applied = await client.post(`/api/v1/data-endpoints/${sourceId}/writes`, {
    actionId: randomUUID(), projectId: ws.projectId, idempotencyKey: `seed-${label}-${randomUUID()}`,
    input: { contractVersion: 1, expectedSourceSnapshot: await snapshotOf(client, sourceId), operation: 'append', rows: [{ id: 1, total: 10 }, { id: 2, total: 20 }, { id: 3, total: 30 }] },
  });
  expectStatus(applied, 200, 'applied write');
  expectStatus(await client.put(`/api/v1/data-endpoints/${sourceId}/write-policy`, { allowedOperations: ['append', 'upsert'], approval: { required: true, approvers: 1, timeoutSeconds: 86_400 } }), 200, 'approval policy');

  const document = {
    nodes: [
      { id: 'src', type: 'source', endpointId: sourceId, mode: 'full' },
      { id: 'dst', type: 'destination', endpointId: destinationId, writeMode: 'upsert' },
    ],
    edges: [{ from: 'src', to: 'dst' }],
  };
  const context: WorkspaceContext = { ws, client, sourceId, document, snapshot: await snapshotOf(client, sourceId) };
  const main = await populateProject(context, ws.projectId, label, options.releases ?? 1);
  const other = options.otherProject ? await populateProject(context, second.body.project.id, `${label}2`, 1) : undefined;

  // A metered operation (the run, the write and the executions are metered).
  const operations = await client.get('/api/v1/usage/operations?limit=1');
  expectStatus(operations, 200, 'usage operations');
  assert.ok(operations.body.operations.length > 0, 'no metered operation');

  return {
    label,
    ws,
    key: ws.apiKey,
    client,
    document,
    snapshot: context.snapshot,
    other,
    ids: {
      ...main,
      secondProjectId: second.body.project.id,
      keyId: await keyIdOf(key.body.key.secret),
      installationId: installation.id,
      sourceEndpointId: sourceId,
      destinationEndpointId: destinationId,
      appliedActionId: applied.body.writeAction.actionId,
      operationId: operations.body.operations[0].id,
    },
  };
}

/** A managed-table source (id, total) and a managed-table sink `<table>_copy`, through the API. */
export async function managedEndpointPair(client: ReturnType<typeof as>, installationId: string, table: string, namespace: string): Promise<{ sourceId: string; destinationId: string }> {
  const source = await client.post('/api/v1/data-endpoints', {
    name: table, namespace, role: 'source', contractKind: 'source_stream',
    pluginCapabilityInstallationId: installationId, target: { table, primaryKey: ['id'] },
    schemaHints: { primaryKey: ['id'], columns: [{ name: 'id' }, { name: 'total' }] },
  });
  expectStatus(source, 201, 'source endpoint');
  const destination = await client.post('/api/v1/data-endpoints', {
    name: `${table}_copy`, namespace, role: 'destination', contractKind: 'sink_table',
    pluginCapabilityInstallationId: installationId, target: { table: `${table}_copy`, primaryKey: ['id'] },
  });
  expectStatus(destination, 201, 'destination endpoint');
  return { sourceId: source.body.dataEndpoint.id as string, destinationId: destination.body.dataEndpoint.id as string };
}

export async function snapshotOf(client: ReturnType<typeof as>, endpointId: string): Promise<{ id: string; version: string }> {
  const res = await client.get(`/api/v1/data-endpoints/${endpointId}/snapshot`);
  expectStatus(res, 200, 'snapshot');
  return { id: res.body.snapshot.id as string, version: String(res.body.snapshot.version) };
}

/** Every project-scoped kind, in one project: a pending write for it, pipeline, versions, run, schedule, ontology, binding, query, releases, job. */
async function populateProject({ ws, client, sourceId, document, snapshot }: WorkspaceContext, projectId: string, label: string, releases: number): Promise<ProjectIds> {
  const P = `/api/v1/projects/${projectId}`;
  const O = `${P}/ontology`;

  const pending = await client.post(`/api/v1/data-endpoints/${sourceId}/writes`, {
    actionId: randomUUID(), projectId, idempotencyKey: `pending-${label}-${randomUUID()}`,
    input: { contractVersion: 1, expectedSourceSnapshot: snapshot, operation: 'upsert', rows: [{ id: 4, total: 40 }] },
  });
  expectStatus(pending, 202, 'pending write');

  // Pipeline: v1 active on main, a branch "dev" with v2, the owner's draft, one finished run.
  const pipeline = await client.post(`${P}/pipelines`, { name: `pipeline-${label}`, document });
  expectStatus(pipeline, 201, 'pipeline');
  const pipelineId = pipeline.body.pipeline.id as string;
  expectStatus(await client.post(`${P}/pipelines/${pipelineId}/branches`, { name: 'dev' }), 201, 'pipeline branch');
  const v2 = await client.post(`${P}/pipelines/${pipelineId}/versions`, { document, branchName: 'dev', commitMessage: 'on dev' });
  expectStatus(v2, 201, 'pipeline version');
  expectStatus(await client.put(`${P}/pipelines/${pipelineId}/draft`, { document, workspaceState: { zoom: 1 } }), 200, 'pipeline draft');
  const launched = await client.post(`${P}/pipelines/${pipelineId}/execute`);
  expectStatus(launched, 202, 'run');
  const runId = launched.body.run.id as string;
  const run = await poll('run', async () => (await client.get(`${P}/runs/${runId}`)).body.run, (r) => ['succeeded', 'failed', 'canceled'].includes(r.status));
  assert.equal(run.status, 'succeeded', JSON.stringify(run.error));

  // A schedule (no public route: the MCP tool), paused so it never fires during the test.
  const mcp = await connectMcp(ws.apiKey);
  let scheduleId: string;
  try {
    const created = (await mcp.callTool({ name: 'pipeline_schedule_create', arguments: { projectId, pipelineId, intervalSeconds: 3600, paused: true } })) as { isError?: boolean; structuredContent?: any };
    assert.ok(!created.isError, JSON.stringify(created.structuredContent));
    scheduleId = created.structuredContent.schedule.id;
  } finally {
    await mcp.close();
  }

  // Ontology: a term of each kind, a link, a shape, a constraint, an import and an uploaded
  // document; compiled and activated.
  const names = { term: `Order${label}`, property: `total${label}`, link: `next${label}`, shape: `OrderShape${label}`, constraint: `key${label}`, import: `rdfs${label}` };
  for (const [path, body] of [
    ['terms', { id: names.term, kind: 'class', label: `Order ${label}` }],
    ['terms', { id: names.property, kind: 'property', domain: names.term, datatype: 'xsd:decimal', maxCount: 1 }],
    ['links', { id: names.link, from: names.term, to: names.term }],
    ['shapes', { id: names.shape, targetClass: names.term, properties: [{ path: names.property, minInclusive: 0 }] }],
    ['constraints', { id: names.constraint, kind: 'functional', terms: [names.property] }],
    ['imports', { id: names.import, kind: 'vocabulary', vocabulary: 'rdfs' }],
  ] as const) {
    expectStatus(await client.post(`${O}/${path}`, body), 201, `ontology ${path}`);
  }
  // The uploaded document: a chain of 10 instances along the link, which the query below walks
  // (so that a job has real work to do).
  const base = defaultBaseIri(projectId);
  const chain = Array.from({ length: 10 }, (_, i) => `<${base}n${i}> a <${base}${names.term}> ; <${base}${names.link}> <${base}n${i + 1}> .`).join('\n');
  const upload = await client.post(`${O}/imports/documents?id=doc${label}`, undefined, { rawBody: chain, headers: { 'Content-Type': 'text/turtle' } });
  expectStatus(upload, 201, 'ontology document');
  const compiled = await client.post(`${O}/compile`, {});
  expectStatus(compiled, 201, 'compile');
  const packageId = compiled.body.package.id as string;
  expectStatus(await client.post(`${O}/activate`, { packageId }), 200, 'activate');
  const versions = await client.get(`${O}/versions?limit=1`);
  expectStatus(versions, 200, 'ontology versions');

  // A read binding of the class to the source endpoint.
  const binding = await client.post(`${O}/read-bindings`, {
    ontologyPackageId: packageId, termId: names.term, dataEndpointId: sourceId,
    mapping: { subjectTemplate: `https://example.com/${label}/orders/{id}`, properties: { [names.property]: 'total' } },
  });
  expectStatus(binding, 201, 'read binding');

  // A published query with its releases, one execution and one finished job.
  const definition = () => ({
    name: `orders-${label}`,
    sparql: `SELECT ?order ?total WHERE { ?order a :${names.term} ; :${names.property} ?total { SELECT (COUNT(*) AS ?pairs) WHERE { ?x ?p ?y . ?z ?q ?w . ?u ?r ?v } } } ORDER BY ?total`,
    inputSchema: { type: 'object', properties: {} },
    outputSchema: { type: 'object', required: ['order', 'total'], properties: { order: { type: 'string' }, total: { type: 'number' } } },
  });
  const query = await client.post(`${O}/queries`, definition());
  expectStatus(query, 201, 'query');
  const queryId = query.body.query.id as string;
  let queryVersionId = query.body.query.version.id as string;
  for (let n = 1; n <= releases; n++) {
    if (n > 1) {
      const edited = await client.put(`${O}/queries/${queryId}`, definition());
      expectStatus(edited, 200, 'query edit');
      queryVersionId = edited.body.query.version.id;
    }
    expectStatus(await client.post(`${O}/queries/${queryId}/releases`, { expectedQueryVersionId: queryVersionId }), 201, `release ${n}`);
  }
  // One execution within the sync budget (on a busy machine it may become a job too: then it is one).
  const execution = await client.post(`${P}/queries/${queryId}/execute`, { input: {} });
  expectStatus(execution, [200, 202], 'execution');
  if (execution.status === 202) {
    await poll('first execution', () => client.post(`${P}/queries/${queryId}/execute?cursor=${execution.body.metadata.continuation}`, {}), (res) => res.status !== 202);
  }
  // Over a tiny sync budget the execution becomes a job; wait for it to finish (nothing changes after).
  const budget = EXECUTION_DEFAULTS.syncBudgetMs;
  let jobId: string;
  let continuation: string;
  try {
    EXECUTION_DEFAULTS.syncBudgetMs = 1;
    const pendingJob = await client.post(`${P}/queries/${queryId}/execute`, { input: {} });
    expectStatus(pendingJob, 202, 'query job');
    jobId = pendingJob.body.metadata.job.id;
    continuation = pendingJob.body.metadata.continuation;
  } finally {
    EXECUTION_DEFAULTS.syncBudgetMs = budget;
  }
  await poll('query job', () => client.post(`${P}/queries/${queryId}/execute?cursor=${continuation}`, {}), (res) => res.status !== 202);
  const executions = await client.get(`/api/v1/query-executions?queryId=${queryId}&limit=1`);
  expectStatus(executions, 200, 'query executions');

  return {
    projectId,
    pendingActionId: pending.body.writeAction.actionId,
    pipelineId,
    activeVersionId: pipeline.body.version.id,
    branchVersionId: v2.body.version.id,
    runId,
    scheduleId,
    ontologyVersionId: versions.body.versions[0].id,
    packageId,
    documentId: upload.body.document.id,
    bindingId: binding.body.binding.id,
    queryId,
    queryVersionId,
    releaseVersion: String(releases),
    jobId,
    executionId: executions.body.queryExecutions[0].id,
    ...names,
  };
}
