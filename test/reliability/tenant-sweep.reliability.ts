import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SCOPES } from '../../core/scopes';
import { HttpResponse, newKey, request } from '../support/fixtures';
import { connectMcp, populateTenant, Tenant, TenantIds } from './support/tenant-fixtures';
import { fetchOpenApi, label, nonEmptySubsets, OpenApiDocument, Operation, operationsOf, sampleValue, Schema } from './support/tenant-openapi';
import { stateDifferences, tenantState } from './support/tenant-state';

/**
 * Tenant sweep (reliability issue item 4). Two fully populated workspaces A and B (one of every
 * resource kind a path names by id). Every operation of the OpenAPI document with a path
 * parameter is called as A with each non-empty subset of its parameters taken from B (all of
 * them, and mixed: A's project with B's pipeline, A's pipeline with B's version…). The answer must
 * be 404 not_found, indistinguishable from the answer for an id that never existed, must not
 * mention anything of B the request did not name, and neither workspace may change (tenant-state:
 * every row of both workspaces, their child rows and managed tables). The same with a key of A
 * restricted to A's project; then, inside A, with the ids of A's second (equally populated)
 * project for a key restricted to the first (documented 403 project_denied where the second
 * project is named or owns the resource, else 404). Then every MCP tool that takes ids, and the
 * ids in query strings and request bodies. New routes and tools are covered without edits here,
 * except that a new path parameter, id argument or id field fails the sweep until it gets a filler.
 */

/** How each path parameter is filled from a tenant. `when` picks by the path where one name means two kinds. */
const PATH_FILLERS: Array<{ param: string; when?: RegExp; pick: (ids: TenantIds) => string }> = [
  { param: 'project_id', pick: (ids) => ids.projectId },
  { param: 'key_id', pick: (ids) => ids.keyId },
  { param: 'endpoint_id', pick: (ids) => ids.sourceEndpointId },
  // The pending action: the one approve and reject could still act on.
  { param: 'action_id', pick: (ids) => ids.pendingActionId },
  { param: 'pipeline_id', pick: (ids) => ids.pipelineId },
  { param: 'version_id', when: /\/pipelines\//, pick: (ids) => ids.branchVersionId },
  { param: 'version_id', when: /\/ontology\/versions\//, pick: (ids) => ids.ontologyVersionId },
  { param: 'run_id', pick: (ids) => ids.runId },
  { param: 'term', pick: (ids) => ids.term },
  { param: 'link', pick: (ids) => ids.link },
  { param: 'shape', pick: (ids) => ids.shape },
  { param: 'constraint', pick: (ids) => ids.constraint },
  { param: 'import', pick: (ids) => ids.import },
  { param: 'package_id', pick: (ids) => ids.packageId },
  { param: 'binding_id', pick: (ids) => ids.bindingId },
  { param: 'query_id', pick: (ids) => ids.queryId },
  // Release numbers are per query: A has release 1, B has 1 and 2, so B's "2" is not A's.
  { param: 'version', when: /\/releases\//, pick: (ids) => ids.releaseVersion },
  { param: 'job_id', pick: (ids) => ids.jobId },
  { param: 'operation_id', pick: (ids) => ids.operationId },
];

/**
 * Kinds a path names that the sweep cannot build, with the reason. Empty: every kind is built
 * (plugin installations have no path of their own; schedules have no public route and are swept
 * through the MCP tools below).
 */
const SKIPPED_KINDS: Record<string, string> = {};

const fillerFor = (op: Operation, param: string) => PATH_FILLERS.find((f) => f.param === param && (!f.when || f.when.test(op.path)));

/**
 * Bodies that do what the operation would really do with A's data, so that a missing tenant
 * check would show as a success (and a changed row) rather than as a validation error. The
 * others get a minimal schema-valid sample.
 */
const BODIES: Record<string, (a: Tenant, filled: Record<string, string>) => unknown> = {
  createApiKey: (a) => ({ name: `swept-${randomUUID().slice(0, 8)}`, scopes: ['org:read'], projectIds: [a.ids.projectId] }),
  updateApiKey: () => ({ readPermissions: ['swept'] }),
  createDataEndpoint: (a) => {
    const table = `swept_${randomUUID().replace(/-/g, '').slice(0, 10)}`;
    return { name: table, namespace: 'swept', role: 'source', contractKind: 'source_stream', pluginCapabilityInstallationId: a.ids.installationId, target: { table, primaryKey: ['id'] } };
  },
  createPipeline: (a) => ({ name: `swept-${randomUUID().slice(0, 8)}`, document: a.document }),
  launchProjectRun: (a) => ({ pipelineId: a.ids.pipelineId }),
  launchRun: (a) => ({ pipelineId: a.ids.pipelineId }),
  activateOntologyPackage: (a) => ({ packageId: a.ids.packageId }),
  createOntologyBranch: (a) => ({ name: `swept-${randomUUID().slice(0, 8)}`, fromVersionId: a.ids.ontologyVersionId }),
  createReadBinding: (a) => ({
    ontologyPackageId: a.ids.packageId, termId: a.ids.term, dataEndpointId: a.ids.sourceEndpointId,
    mapping: { subjectTemplate: `https://example.com/swept/${randomUUID()}/{id}`, properties: { [a.ids.property]: 'total' } },
  }),
  updateProject: () => ({ description: 'swept' }),
  updateDataEndpoint: () => ({ description: 'swept' }),
  putWritePolicy: () => ({ allowedOperations: ['append'] }),
  submitSourceWrite: (a) => ({
    actionId: randomUUID(), projectId: a.ids.projectId, idempotencyKey: `sweep-${randomUUID()}`,
    input: { contractVersion: 1, expectedSourceSnapshot: a.snapshot, operation: 'append', rows: [{ id: 99, total: 1 }] },
  }),
  approveSourceWrite: () => ({ comment: 'swept' }),
  rejectSourceWrite: () => ({ comment: 'swept' }),
  savePipelineDraft: (a) => ({ document: a.document }),
  commitPipelineVersion: (a) => ({ document: a.document, commitMessage: 'swept' }),
  replacePipelineDocument: (a) => ({ document: a.document, commitMessage: 'swept' }),
  createPipelineBranch: () => ({ name: `swept-${randomUUID().slice(0, 8)}` }),
  activatePipelineVersion: () => ({}),
  updatePipelineSettings: () => ({ description: 'swept' }),
  previewPipeline: () => ({ sampleSize: 1 }),
  replaceOntologyTerm: (a, filled) => ({ id: filled.term, kind: 'class', label: 'swept' }),
  replaceOntologyShape: (a, filled) => ({ id: filled.shape, targetClass: a.ids.term, properties: [] }),
  replaceReadBinding: (a) => ({
    ontologyPackageId: a.ids.packageId, termId: a.ids.term, dataEndpointId: a.ids.sourceEndpointId,
    mapping: { subjectTemplate: 'https://example.com/swept/{id}', properties: { [a.ids.property]: 'total' } },
  }),
  replaceQuery: (a) => ({
    name: `swept-${randomUUID().slice(0, 8)}`,
    sparql: `SELECT ?order WHERE { ?order a :${a.ids.term} }`,
    inputSchema: { type: 'object', properties: {} },
    outputSchema: { type: 'object', properties: { order: { type: 'string' } } },
  }),
  publishQueryRelease: (a) => ({ expectedQueryVersionId: a.ids.queryVersionId, acknowledgeBreakingChanges: true }),
  retireQueryRelease: () => ({ status: 'retired' }),
  executeQuery: () => ({ input: {} }),
  executeOntologyQuery: () => ({ input: {} }),
};

const RAW_BODIES: Record<string, string> = {
  'text/turtle': '@prefix ex: <https://example.com/swept/> .\nex:Swept a <http://www.w3.org/2000/01/rdf-schema#Class> .\n',
  'application/sparql-query': 'SELECT ?s WHERE { ?s ?p ?o } LIMIT 1',
};

/** Required query parameters that must name something of A for the request to reach its id checks. */
const QUERY_VALUES: Record<string, (a: Tenant) => string> = {
  queryVersionId: (a) => a.ids.queryVersionId,
  id: () => `swept${randomUUID().slice(0, 8)}`,
};

interface Sent {
  path: string;
  status: number;
  code?: string;
  body: any;
  text: string;
}

/** Extra query parameters and body fields that replace what the request would otherwise carry. */
interface Overrides {
  query?: Record<string, string>;
  body?: Record<string, unknown>;
}

function requestParts(op: Operation, a: Tenant, filled: Record<string, string>, doc: OpenApiDocument, overrides: Overrides = {}) {
  const path = op.path.replace(/\{([A-Za-z_]+)\}/g, (_, name: string) => encodeURIComponent(filled[name]));
  const queryValues: Record<string, string> = Object.fromEntries(op.requiredQuery.map((q) => [q.name, QUERY_VALUES[q.name]?.(a) ?? String(sampleValue(q.schema, doc))]));
  Object.assign(queryValues, overrides.query);
  const query = Object.entries(queryValues).map(([name, value]) => `${name}=${encodeURIComponent(value)}`).join('&');
  const headers: Record<string, string> = {};
  let body: unknown;
  let rawBody: string | undefined;
  if (op.jsonBody) body = { ...(BODIES[op.operationId]?.(a, filled) ?? sampleValue(op.jsonBody, doc)) as object, ...overrides.body };
  else if (op.rawBodyTypes) {
    const type = op.rawBodyTypes.find((t) => RAW_BODIES[t]) ?? op.rawBodyTypes[0];
    rawBody = RAW_BODIES[type] ?? '';
    headers['Content-Type'] = type;
  }
  return { url: query ? `${path}?${query}` : path, body, rawBody, headers };
}

async function send(op: Operation, key: string, a: Tenant, filled: Record<string, string>, doc: OpenApiDocument, overrides: Overrides = {}): Promise<Sent> {
  const parts = requestParts(op, a, filled, doc, overrides);
  const res: HttpResponse = await request(op.method, parts.url, { key, body: parts.body, rawBody: parts.rawBody, headers: parts.headers });
  const text = typeof res.body === 'string' ? res.body : JSON.stringify(res.body);
  return { path: parts.url, status: res.status, code: res.body?.code, body: res.body, text };
}

/** Every value of B that A must never see: ids and names. */
const secretsOf = (t: Tenant) => [...new Set([t.ws.workspaceId, t.ws.memberId, ...Object.values(t.ids), ...Object.values(t.other ?? {})].filter((v) => v.length >= 8))];

/** What a key restricted to the first project must not learn of the second: its ids and names, its own id included. */
const secondProjectSecrets = (t: Tenant) => Object.values(t.other!).filter((value) => value.length >= 8 && (value === t.other!.projectId || !Object.values(t.ids).includes(value)));

/** The answer with ids and names of the request taken out, to compare B's 404 with a never-existing id's. */
const shapeOf = (sent: Sent, values: string[]) => {
  let message = String(sent.body?.message ?? '');
  for (const value of values) message = message.split(value).join('<id>');
  return { status: sent.status, code: sent.code, resource: sent.body?.resource, message };
};

/** A value of the same kind that never existed: a fresh UUID, or a fresh name for names and numbers. */
function neverExisting(op: Operation, param: string): string {
  const schema = op.pathParams.find((p) => p.name === param)?.schema as Schema | undefined;
  if (schema?.format === 'uuid' || !schema?.pattern) return randomUUID();
  return /\[1-9\]/.test(schema.pattern) ? '987654' : `never${randomUUID().slice(0, 8)}`;
}

describe('Tenant sweep: another workspace’s ids, from the OpenAPI document and the MCP tools', function () {
  this.timeout(600_000);
  let a: Tenant;
  let b: Tenant;
  let doc: OpenApiDocument;
  let swept: Operation[];

  before(async () => {
    a = await populateTenant('A', { releases: 1, otherProject: true });
    b = await populateTenant('B', { releases: 2 });
    doc = await fetchOpenApi();
    swept = operationsOf(doc).filter((op) => op.pathParams.length > 0);
  });

  it('has a filler for every path parameter of the document, and builds every kind (or says why not)', () => {
    assert.ok(swept.length >= 60, `only ${swept.length} operations with path parameters`);
    const missing = swept.flatMap((op) => op.pathParams.filter((p) => !fillerFor(op, p.name)).map((p) => `${label(op)}: {${p.name}}`));
    assert.deepEqual(missing, [], `path parameters without a filler (add one to PATH_FILLERS, or a reason to SKIPPED_KINDS):\n${missing.join('\n')}`);
    assert.deepEqual(Object.keys(SKIPPED_KINDS), [], 'kinds skipped (listed with their reasons)');
    for (const [name, value] of Object.entries({ ...a.ids })) assert.notEqual(value, (b.ids as unknown as Record<string, string>)[name], `A and B share ${name}`);
  });

  /** What a combination must answer; `compare`: it must also look exactly like a never-existing id's answer. */
  interface Expected { status: number; code: string; compare: boolean }

  /**
   * Sends every combination of `own` and `other` values for each operation's path parameters
   * (only combinations where some value really differs) and collects what is wrong. An
   * `idIndependent` refusal must be the answer to the caller's own ids too: it comes before any
   * id is read, so it reveals nothing.
   */
  async function sweep(key: string, own: Record<string, string>, other: Record<string, string>, whose: string, secrets: string[],
    expected: (op: Operation, subset: string[]) => Expected, idIndependent: (op: Operation) => Expected | undefined = () => undefined): Promise<{ wrong: string[]; count: number }> {
    const wrong: string[] = [];
    let count = 0;
    for (const op of swept) {
      const params = op.pathParams.map((p) => p.name);
      const fill = (ids: Record<string, string>, name: string) => fillerFor(op, name)!.pick(ids as unknown as TenantIds);
      const mineIds = Object.fromEntries(params.map((name) => [name, fill(own, name)]));
      const refusal = idIndependent(op);
      if (refusal) {
        const mine = await send(op, key, a, mineIds, doc);
        if (mine.status !== refusal.status || mine.code !== refusal.code) wrong.push(`${label(op)} with the caller's own ids: expected the id-independent ${refusal.status} ${refusal.code}, got ${mine.status} ${mine.code}`);
      }
      for (const subset of nonEmptySubsets(params)) {
        if (subset.every((name) => fill(other, name) === mineIds[name])) continue;
        count += 1;
        const filled = { ...mineIds, ...Object.fromEntries(subset.map((name) => [name, fill(other, name)])) };
        const sent = await send(op, key, a, filled, doc);
        const which = `${label(op)} with ${whose} ${subset.join(', ')} (${sent.path})`;
        const want = refusal ?? expected(op, subset);
        if (sent.status !== want.status || sent.code !== want.code) {
          wrong.push(`${which}: expected ${want.status} ${want.code}, got ${sent.status} ${sent.code ?? ''} ${sent.text.slice(0, 300)}`);
          continue;
        }
        const named = Object.values(filled);
        const leaked = secrets.filter((secret) => !named.includes(secret) && sent.text.includes(secret));
        if (leaked.length) wrong.push(`${which}: the answer mentions ${whose} ${leaked.join(', ')}, which the request did not name`);
        if (!want.compare) continue;
        // Indistinguishable from an id that never existed.
        const fresh = { ...mineIds, ...Object.fromEntries(subset.map((name) => [name, neverExisting(op, name)])) };
        const control = await send(op, key, a, fresh, doc);
        const [mine, theirs] = [shapeOf(sent, Object.values(filled)), shapeOf(control, Object.values(fresh))];
        if (JSON.stringify(mine) !== JSON.stringify(theirs)) wrong.push(`${which}: answers differently for ${whose} id ${JSON.stringify(mine)} than for a never-existing one ${JSON.stringify(theirs)}`);
      }
    }
    return { wrong, count };
  }

  const notFound: Expected = { status: 404, code: 'not_found', compare: true };
  /** Documented: a project-restricted key cannot hold org:manage, so those routes refuse it before reading any id. */
  const orgManageOnly = (op: Operation): Expected | undefined => (op.scopes?.length === 1 && op.scopes[0] === 'org:manage' ? { status: 403, code: 'insufficient_scope', compare: false } : undefined);
  const restrictedScopes = SCOPES.filter((scope) => scope !== 'org:manage');

  async function unchanged(work: () => Promise<void>, ids = [a.ws.workspaceId, b.ws.workspaceId]): Promise<void> {
    const before = await tenantState(ids);
    await work();
    const differences = stateDifferences(before, await tenantState(ids));
    assert.deepEqual(differences, [], `a refused request changed stored data:\n${differences.join('\n')}`);
  }

  it('answers 404 to A’s unrestricted org:manage key for every route with B’s ids, all or mixed, and changes nothing', async () => {
    await unchanged(async () => {
      const { wrong, count } = await sweep(a.key, { ...a.ids }, { ...b.ids }, 'B’s', secretsOf(b), () => notFound);
      assert.ok(count > 150, `only ${count} combinations`);
      assert.deepEqual(wrong, [], `${wrong.length} of ${count} combinations answered wrongly:\n${wrong.join('\n')}`);
    });
  });

  it('answers 404 to A’s project-restricted key holding every other scope, except where a scope it cannot hold refuses first', async () => {
    // Restricted to A's project, with every scope a restricted key may hold and shared resources:
    // B's ids must still be 404 (not 403 project_denied: that would confirm they exist).
    const restricted = await newKey(a.ws, { scopes: restrictedScopes, projectIds: [a.ids.projectId], workspaceResources: true });
    await unchanged(async () => {
      const { wrong, count } = await sweep(restricted, { ...a.ids }, { ...b.ids }, 'B’s', secretsOf(b), () => notFound, orgManageOnly);
      assert.deepEqual(wrong, [], `${wrong.length} of ${count} combinations answered wrongly:\n${wrong.join('\n')}`);
    });
  });

  it('within A: a key restricted to A’s first project gets 403 project_denied for the second project, and 404 for its ids under the first', async () => {
    // The same sweep with the ids of A's second project (fully populated) instead of B's, for a
    // key whose allowlist holds only the first project. Documented refusals (docs/reference/errors.md: 403 for a
    // project outside the key's allowlist): a path naming the second project, and the
    // workspace-level routes whose resource belongs to it (a run, a write action). Everything
    // else is 404 like a never-existing id.
    const restricted = await newKey(a.ws, { scopes: restrictedScopes, projectIds: [a.ids.projectId], workspaceResources: true });
    const denied: Expected = { status: 403, code: 'project_denied', compare: false };
    const expected = (op: Operation, subset: string[]): Expected => {
      if (subset.includes('project_id')) return denied;
      if (!op.pathParams.some((p) => p.name === 'project_id') && (subset.includes('run_id') || subset.includes('action_id'))) return denied;
      return notFound;
    };
    const secondProject = secondProjectSecrets(a);
    await unchanged(async () => {
      const { wrong, count } = await sweep(restricted, { ...a.ids }, { ...a.ids, ...a.other! }, 'the second project’s', secondProject, expected, orgManageOnly);
      assert.ok(count > 100, `only ${count} combinations`);
      assert.deepEqual(wrong, [], `${wrong.length} of ${count} combinations answered wrongly:\n${wrong.join('\n')}`);
    });
  });

  describe('MCP tools', () => {
    type ToolResult = { isError?: boolean; structuredContent?: Record<string, any> };
    interface ToolInfo { name: string; inputSchema: Schema }

    /** How each id argument of a tool is filled from a tenant (`tool` narrows a generic name like id). */
    const ARG_FILLERS: Array<{ arg: string; tool?: string; pick: (ids: TenantIds) => string }> = [
      { arg: 'projectId', pick: (ids) => ids.projectId },
      { arg: 'pipelineId', pick: (ids) => ids.pipelineId },
      { arg: 'id', tool: 'pipeline_delete', pick: (ids) => ids.pipelineId },
      { arg: 'runId', pick: (ids) => ids.runId },
      { arg: 'scheduleId', pick: (ids) => ids.scheduleId },
      { arg: 'basedOnVersionId', pick: (ids) => ids.activeVersionId },
      { arg: 'pluginCapabilityInstallationId', pick: (ids) => ids.installationId },
    ];
    const argFiller = (tool: string, arg: string) => ARG_FILLERS.find((f) => f.arg === arg && (!f.tool || f.tool === tool));

    /**
     * Documented answers other than 404 for ids in a tool's own arguments (body references rather
     * than the resource the tool acts on).
     */
    const ARG_EXCEPTIONS: Record<string, { status: number; code: string; reason: string }> = {
      'source_create.pluginCapabilityInstallationId': { status: 422, code: 'unknown_installation', reason: 'a reference in the new endpoint’s body, answered like POST /data-endpoints: 422 on the field' },
    };

    /** Arguments that let the call reach its id checks with A's data. */
    const ARGS: Record<string, (a: Tenant) => Record<string, unknown>> = {
      pipeline_create: (t) => ({ name: `mcp-swept-${randomUUID().slice(0, 8)}`, document: t.document }),
      pipeline_draft_save: (t) => ({ document: t.document }),
      pipeline_schedule_create: () => ({ intervalSeconds: 3600, paused: true }),
      source_create: () => ({ name: `mcp-swept-${randomUUID().slice(0, 8)}`, namespace: 'swept', contractKind: 'source_stream', target: { table: 'swept', primaryKey: ['id'] } }),
    };

    const idArgs = (tool: ToolInfo) => Object.entries((tool.inputSchema.properties ?? {}) as Record<string, Schema>).filter(([, s]) => s.format === 'uuid').map(([name]) => name);

    function argsFor(tool: ToolInfo, filled: Record<string, string>): Record<string, unknown> {
      const schema = tool.inputSchema;
      const base = sampleValue({ ...schema, properties: Object.fromEntries(Object.entries(schema.properties ?? {}).filter(([name]) => !(name in filled))) }) as Record<string, unknown>;
      const args: Record<string, unknown> = { ...base, ...ARGS[tool.name]?.(a), ...filled };
      if (schema.properties?.idempotencyKey) args.idempotencyKey = `sweep-${randomUUID()}`;
      if (schema.properties?.confirm) args.confirm = true;
      return args;
    }

    async function sweepTools(client: Client, tools: ToolInfo[], ownArgs: (tool: ToolInfo) => string[]): Promise<{ wrong: string[]; count: number }> {
      const wrong: string[] = [];
      const secrets = secretsOf(b);
      let count = 0;
      for (const tool of tools) {
        const names = ownArgs(tool);
        if (!names.length) continue;
        const own = Object.fromEntries(names.map((name) => [name, argFiller(tool.name, name)!.pick(a.ids)]));
        for (const subset of nonEmptySubsets(names)) {
          count += 1;
          const filled = { ...own, ...Object.fromEntries(subset.map((name) => [name, argFiller(tool.name, name)!.pick(b.ids)])) };
          const which = `${tool.name} with B's ${subset.join(', ')}`;
          const exception = subset.length === 1 ? ARG_EXCEPTIONS[`${tool.name}.${subset[0]}`] : undefined;
          const want = exception ?? { status: 404, code: 'not_found' };
          let res: ToolResult;
          try {
            res = (await client.callTool({ name: tool.name, arguments: argsFor(tool, filled) })) as ToolResult;
          } catch (error) {
            wrong.push(`${which}: JSON-RPC error ${(error as Error).message}`);
            continue;
          }
          const problem = res.structuredContent ?? {};
          if (!res.isError || problem.status !== want.status || problem.code !== want.code) {
            wrong.push(`${which}: expected ${want.status} ${want.code}, got ${res.isError ? 'error' : 'success'} ${JSON.stringify(problem).slice(0, 300)}`);
            continue;
          }
          const text = JSON.stringify(res);
          const leaked = secrets.filter((s) => !Object.values(filled).includes(s) && text.includes(s));
          if (leaked.length) wrong.push(`${which}: the result mentions B's ${leaked.join(', ')}`);
        }
      }
      return { wrong, count };
    }

    it('has a filler for every id argument of every tool', async () => {
      const client = await connectMcp(a.key);
      try {
        const { tools } = await client.listTools();
        const missing = (tools as ToolInfo[]).flatMap((tool) => idArgs(tool).filter((arg) => !argFiller(tool.name, arg)).map((arg) => `${tool.name}.${arg}`));
        assert.deepEqual(missing, [], 'id arguments without a filler (add one to ARG_FILLERS)');
        assert.ok(tools.filter((tool) => idArgs(tool as ToolInfo).length).length >= 10);
      } finally {
        await client.close();
      }
    });

    it('refuses every tool call of A’s key naming B’s ids on a workspace connection (404, or the documented refusal), and changes nothing', async () => {
      const client = await connectMcp(a.key);
      try {
        const { tools } = await client.listTools();
        await unchanged(async () => {
          const { wrong, count } = await sweepTools(client, tools as ToolInfo[], idArgs);
          assert.ok(count >= 20, `only ${count} combinations`);
          assert.deepEqual(wrong, [], `${wrong.length} of ${count} tool calls answered wrongly:\n${wrong.join('\n')}`);
        });
      } finally {
        await client.close();
      }
    });

    it('refuses a project-bound connection of A’s key to B’s project at connect, and B’s ids on a connection bound to A’s project', async () => {
      await unchanged(async () => {
        const initialize = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'sweep', version: '1' } } };
        for (const project of [b.ids.projectId, b.ids.secondProjectId]) {
          const raw = await request('POST', `/mcp/projects/${project}`, { key: a.key, body: initialize, headers: { Accept: 'application/json, text/event-stream' } });
          assert.equal(raw.status, 404, JSON.stringify(raw.body));
          assert.equal(raw.body.code, 'not_found');
          await assert.rejects(connectMcp(a.key, `/mcp/projects/${project}`), /404|not_found|No project/);
        }
        const bound = await connectMcp(a.key, `/mcp/projects/${a.ids.projectId}`);
        try {
          const { tools } = await bound.listTools();
          const { wrong, count } = await sweepTools(bound, tools as ToolInfo[], idArgs);
          assert.ok(count >= 10, `only ${count} combinations`);
          assert.deepEqual(wrong, [], `${wrong.length} of ${count} tool calls answered wrongly:\n${wrong.join('\n')}`);
        } finally {
          await bound.close();
        }
      });
    });

    it('refuses a project-bound connection to A’s second project for a key restricted to the first (403 project_denied, documented)', async () => {
      const restricted = await newKey(a.ws, { scopes: restrictedScopes, projectIds: [a.ids.projectId], workspaceResources: true });
      const initialize = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'sweep', version: '1' } } };
      const raw = await request('POST', `/mcp/projects/${a.other!.projectId}`, { key: restricted, body: initialize, headers: { Accept: 'application/json, text/event-stream' } });
      assert.equal(raw.status, 403, JSON.stringify(raw.body));
      assert.equal(raw.body.code, 'project_denied');
      const client = await connectMcp(restricted);
      try {
        // On a workspace connection, the second project's pipeline is refused like the route (403 for its project, 404 under the first).
        const denied = (await client.callTool({ name: 'pipeline_get', arguments: { projectId: a.other!.projectId, pipelineId: a.other!.pipelineId } })) as ToolResult;
        assert.equal(denied.structuredContent?.code, 'project_denied');
        const hidden = (await client.callTool({ name: 'pipeline_get', arguments: { projectId: a.ids.projectId, pipelineId: a.other!.pipelineId } })) as ToolResult;
        assert.equal(hidden.structuredContent?.code, 'not_found');
        const run = (await client.callTool({ name: 'job_get', arguments: { projectId: a.ids.projectId, runId: a.other!.runId } })) as ToolResult;
        assert.equal(run.structuredContent?.code, 'not_found');
      } finally {
        await client.close();
      }
    });

    it('refuses B’s endpoints inside a tool’s pipeline document exactly like never-existing ones', async () => {
      const client = await connectMcp(a.key);
      const withEndpoints = (ids: string[]) => ({ ...a.document, nodes: a.document.nodes.map((node, i) => ({ ...node, endpointId: ids[i] })) });
      try {
        await unchanged(async () => {
          const answers = [];
          for (const endpoints of [[b.ids.sourceEndpointId, b.ids.destinationEndpointId], [randomUUID(), randomUUID()]]) {
            const res = (await client.callTool({ name: 'pipeline_create', arguments: { projectId: a.ids.projectId, name: `mcp-doc-${randomUUID().slice(0, 8)}`, document: withEndpoints(endpoints), idempotencyKey: `sweep-${randomUUID()}` } })) as ToolResult;
            assert.equal(res.isError, true, JSON.stringify(res.structuredContent));
            answers.push({ status: res.structuredContent?.status, code: res.structuredContent?.code, errors: (res.structuredContent?.errors as Array<{ path: string; message: string }>).map((e) => `${e.path} ${endpoints.reduce((m, id) => m.split(id).join('<id>'), e.message)}`) });
          }
          assert.equal(answers[0].status, 422);
          assert.deepEqual(answers[0], answers[1], 'B’s endpoints are refused like never-existing ones');
        });
      } finally {
        await client.close();
      }
    });
  });

  describe('ids in query strings and bodies', () => {
    /** Query parameters (filters) that name a resource, filled from a tenant. */
    const QUERY_SLOTS: Record<string, (ids: TenantIds) => string> = {
      pipelineId: (ids) => ids.pipelineId,
      projectId: (ids) => ids.projectId,
      queryId: (ids) => ids.queryId,
      executionId: (ids) => ids.executionId,
      versionId: (ids) => ids.branchVersionId,
      queryVersionId: (ids) => ids.queryVersionId,
      ontologyPackageId: (ids) => ids.packageId,
      dataEndpointId: (ids) => ids.sourceEndpointId,
      actionId: (ids) => ids.pendingActionId,
      parentOperationId: (ids) => ids.operationId,
    };
    /** Top-level body fields that refer to a resource (a UUID, a list of them, or a pipeline document naming endpoints). */
    const BODY_SLOTS: Record<string, (ids: TenantIds, t: Tenant) => unknown> = {
      pipelineId: (ids) => ids.pipelineId,
      projectId: (ids) => ids.projectId,
      projectIds: (ids) => [ids.projectId],
      versionId: (ids) => ids.branchVersionId,
      sourceVersionId: (ids) => ids.activeVersionId,
      packageId: (ids) => ids.packageId,
      ontologyPackageId: (ids) => ids.packageId,
      dataEndpointId: (ids) => ids.sourceEndpointId,
      pluginCapabilityInstallationId: (ids) => ids.installationId,
      expectedQueryVersionId: (ids) => ids.queryVersionId,
      fromVersionId: (ids) => ids.ontologyVersionId,
      document: (ids, t) => t.document,
    };
    /** UUID fields that are the caller's own new ids, not references. */
    const NOT_REFERENCES: Record<string, string> = {
      'body.actionId': 'the caller’s id for a new write action (unique per workspace): another workspace’s value is just a new id here',
    };
    /** Documented acceptances: the request succeeds with the other side's value, as it would with any never-existing one. */
    const ACCEPTED: Record<string, string> = {
      'savePipelineDraft body.document': 'a draft may be unfinished and name anything (docs/guides/pipelines.md: drafts are checked on validate and at commit)',
    };
    /** Within one workspace, for a key restricted to the first project. */
    const ACCEPTED_WITHIN: Record<string, string> = {
      'putWritePolicy body.projectIds': 'a write policy belongs to the shared endpoint (workspaceResources), and lists which projects of the workspace may write',
    };

    interface Slot { op: Operation; kind: 'query' | 'body'; name: string }
    const slotsOf = (op: Operation): Slot[] => [
      ...op.queryParams.filter((q) => q.schema?.format === 'uuid').map((q) => ({ op, kind: 'query' as const, name: q.name })),
      ...Object.entries((op.jsonBody?.properties ?? {}) as Record<string, Schema>)
        .filter(([name, schema]) => schema.format === 'uuid' || schema.items?.format === 'uuid' || (name === 'document' && schema.properties?.nodes))
        .map(([name]) => ({ op, kind: 'body' as const, name })),
    ];
    const slotName = (slot: Slot) => `${slot.op.operationId} ${slot.kind}.${slot.name}`;
    const fillSlot = (slot: Slot, ids: TenantIds, t: Tenant): unknown => (slot.kind === 'query' ? QUERY_SLOTS[slot.name](ids) : BODY_SLOTS[slot.name](ids, t));
    const overridesFor = (slot: Slot, value: unknown): Overrides => (slot.kind === 'query' ? { query: { [slot.name]: String(value) } } : { body: { [slot.name]: value } });
    const neverExistingSlot = (slot: Slot, t: Tenant): unknown => {
      if (slot.name === 'document') return { ...t.document, nodes: t.document.nodes.map((node) => ({ ...node, endpointId: randomUUID() })) };
      return slot.name === 'projectIds' ? [randomUUID()] : randomUUID();
    };
    let slots: Slot[] = [];

    before(() => {
      slots = operationsOf(doc).filter((op) => !op.public).flatMap(slotsOf).filter((slot) => !NOT_REFERENCES[`${slot.kind}.${slot.name}`]);
    });

    it('has a filler for every id in a query string or body', () => {
      const missing = slots.filter((slot) => !(slot.kind === 'query' ? QUERY_SLOTS : BODY_SLOTS)[slot.name]).map(slotName);
      assert.deepEqual(missing, [], 'ids without a filler (add one, or a reason to NOT_REFERENCES)');
      assert.ok(slots.length >= 25, `only ${slots.length} slots`);
    });

    /** The caller's own path ids, and the request with one slot set to `value`. */
    function sendSlot(slot: Slot, key: string, value: unknown): Promise<Sent> {
      const own = Object.fromEntries(slot.op.pathParams.map((p) => [p.name, fillerFor(slot.op, p.name)!.pick(a.ids)]));
      return send(slot.op, key, a, own, doc, overridesFor(slot, value));
    }

    const idsIn = (value: unknown) => JSON.stringify(value).match(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g) ?? [];
    /** An answer without the ids the request named: a refusal's status, code, resource and message; a read's whole body. */
    const answerShape = (slot: Slot, sent: Sent, value: unknown): string => {
      if (sent.status >= 300) return JSON.stringify(shapeOf(sent, idsIn(value)));
      if (slot.op.method !== 'GET') return String(sent.status);
      return `${sent.status} ${idsIn(value).reduce((text, id) => text.split(id).join('<id>'), sent.text)}`;
    };

    it('another workspace’s ids in query strings and bodies: refused (or an empty answer) exactly like never-existing ids, and nothing changes', async () => {
      const wrong: string[] = [];
      const secrets = secretsOf(b);
      const check = async (slot: Slot) => {
        const value = fillSlot(slot, b.ids, b);
        const sent = await sendSlot(slot, a.key, value);
        const which = `${slotName(slot)} = B’s (${sent.path})`;
        if (sent.status >= 500 || (slot.op.method !== 'GET' && sent.status < 400 && !ACCEPTED[slotName(slot)])) wrong.push(`${which}: expected a refusal, got ${sent.status} ${sent.text.slice(0, 300)}`);
        const leaked = secrets.filter((secret) => !JSON.stringify(value).includes(secret) && sent.text.includes(secret));
        if (leaked.length) wrong.push(`${which}: the answer mentions B’s ${leaked.join(', ')}`);
        const fresh = neverExistingSlot(slot, a);
        const control = await sendSlot(slot, a.key, fresh);
        const [theirs, never] = [answerShape(slot, sent, value), answerShape(slot, control, fresh)];
        if (theirs !== never) wrong.push(`${which}: answers ${theirs.slice(0, 300)}, but to a never-existing id ${never.slice(0, 300)}`);
      };
      await unchanged(async () => {
        for (const slot of slots.filter((s) => !ACCEPTED[slotName(s)])) await check(slot);
      });
      // Accepted ones change A (as a never-existing id would), never B.
      await unchanged(async () => {
        for (const slot of slots.filter((s) => ACCEPTED[slotName(s)])) await check(slot);
      }, [b.ws.workspaceId]);
      assert.deepEqual(wrong, [], `${wrong.length} answered wrongly:\n${wrong.join('\n')}`);
    });

    it('within A: a key restricted to the first project, naming the second project’s ids in query strings and bodies, is refused and changes nothing', async () => {
      const restricted = await newKey(a.ws, { scopes: restrictedScopes, projectIds: [a.ids.projectId], workspaceResources: true });
      const otherIds = { ...a.ids, ...a.other! } as TenantIds;
      const secrets = secondProjectSecrets(a);
      const wrong: string[] = [];
      const within = slots.filter((slot) => JSON.stringify(fillSlot(slot, otherIds, a)) !== JSON.stringify(fillSlot(slot, a.ids, a)));
      assert.ok(within.length >= 15, `only ${within.length} slots differ between the projects`);
      await unchanged(async () => {
        for (const slot of within.filter((s) => !ACCEPTED_WITHIN[slotName(s)])) {
          const value = fillSlot(slot, otherIds, a);
          const sent = await sendSlot(slot, restricted, value);
          const which = `${slotName(slot)} = the second project’s (${sent.path})`;
          const refused = sent.status >= 400 && sent.status < 500;
          if (slot.op.method === 'GET' ? !(refused || sent.status === 200) : !refused) wrong.push(`${which}: expected a refusal${slot.op.method === 'GET' ? ' or an answer without it' : ''}, got ${sent.status} ${sent.text.slice(0, 300)}`);
          const leaked = secrets.filter((secret) => !JSON.stringify(value).includes(secret) && sent.text.includes(secret));
          if (leaked.length) wrong.push(`${which}: the answer mentions the second project’s ${leaked.join(', ')}`);
        }
      }, [a.ws.workspaceId]);
      assert.deepEqual(wrong, [], `${wrong.length} answered wrongly:\n${wrong.join('\n')}`);
    });

    it('ontology imports of a compiled package: another workspace’s is refused at compile; another project’s outside the key’s allowlist is refused', async () => {
      // Not a top-level body field (imports are a oneOf), so named here.
      const imports = `/api/v1/projects/${a.ids.projectId}/ontology/imports`;
      const compile = `/api/v1/projects/${a.ids.projectId}/ontology/compile`;
      // B's package: accepted like a never-existing id (references are checked at compile), and
      // compile refuses it naming the import, without a word of B's ontology.
      const added = await request('POST', imports, { key: a.key, body: { id: 'fromB', kind: 'package', ontologyPackageId: b.ids.packageId } });
      assert.equal(added.status, 201, JSON.stringify(added.body));
      try {
        const refused = await request('POST', compile, { key: a.key, body: {} });
        assert.equal(refused.status, 422, JSON.stringify(refused.body));
        assert.equal(refused.body.code, 'ontology_invalid');
        assert.match(JSON.stringify(refused.body), /fromB/);
        for (const secret of [b.ids.term, b.ids.property, b.ids.link, b.ids.shape]) assert.ok(!JSON.stringify(refused.body).includes(secret), `mentions ${secret}`);
      } finally {
        assert.equal((await request('DELETE', `${imports}/fromB`, { key: a.key })).status, 204);
      }
      // The second project's package, by a key restricted to the first: its ontology would be
      // compiled into a package this key can read, so the import is refused.
      const restricted = await newKey(a.ws, { scopes: restrictedScopes, projectIds: [a.ids.projectId], workspaceResources: true });
      await unchanged(async () => {
        const denied = await request('POST', imports, { key: restricted, body: { id: 'fromSecond', kind: 'package', ontologyPackageId: a.other!.packageId } });
        assert.equal(denied.status, 403, JSON.stringify(denied.body));
        assert.equal(denied.body.code, 'project_denied');
      }, [a.ws.workspaceId]);
      // An unrestricted key may import another project's package (docs/guides/ontology-and-sparql.md: imports of another project's compiled package).
      const allowed = await request('POST', imports, { key: a.key, body: { id: 'fromSecond', kind: 'package', ontologyPackageId: a.other!.packageId } });
      assert.equal(allowed.status, 201, JSON.stringify(allowed.body));
      assert.equal((await request('DELETE', `${imports}/fromSecond`, { key: a.key })).status, 204);
    });
  });
  describe('ids inside cursors and MCP sessions', () => {
    const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

    it('refuses another workspace’s job, binding and records cursors like never-existing ones, and changes nothing', async () => {
      await unchanged(async () => {
        const A = `/api/v1/projects/${a.ids.projectId}`;
        // A query continuation is {job, offset}: naming B's job on A's query is a 404 like any unknown job.
        const continuation = async (job: string) => request('POST', `${A}/queries/${a.ids.queryId}/execute?cursor=${b64({ job, offset: 0 })}`, { key: a.key, body: {} });
        const [theirs, never] = [await continuation(b.ids.jobId), await continuation(randomUUID())];
        assert.equal(theirs.status, 404, JSON.stringify(theirs.body));
        const asSent = (res: HttpResponse): Sent => ({ path: '', status: res.status, code: res.body?.code, body: res.body, text: JSON.stringify(res.body) });
        assert.deepEqual(shapeOf(asSent(theirs), [b.ids.jobId]), shapeOf(asSent(never), []));
        // A term-records cursor names the binding it was reading: B's binding is not one of A's.
        const termRead = async (binding: string) => request('GET', `${A}/ontology/terms/${a.ids.term}/records?cursor=${b64({ b: binding, c: null })}`, { key: a.key });
        const [theirBinding, neverBinding] = [await termRead(b.ids.bindingId), await termRead(randomUUID())];
        assert.equal(theirBinding.status, 422, JSON.stringify(theirBinding.body));
        assert.equal(theirBinding.body.code, neverBinding.body.code);
        assert.equal(theirBinding.body.message, neverBinding.body.message);
        // A records cursor B was issued is bound to B's key and endpoint.
        const page = await request('GET', `/api/v1/data-endpoints/${b.ids.sourceEndpointId}/records?limit=1`, { key: b.key });
        assert.equal(page.status, 200, JSON.stringify(page.body));
        const cursor = page.body.metadata.nextCursor as string;
        assert.ok(cursor, 'B’s read has a next page');
        const onA = await request('GET', `/api/v1/data-endpoints/${a.ids.sourceEndpointId}/records?limit=1&cursor=${cursor}`, { key: a.key });
        assert.equal(onA.status, 422, JSON.stringify(onA.body));
        assert.equal(onA.body.code, 'cursor_not_yours');
        assert.ok(!JSON.stringify(onA.body).includes(b.ids.sourceEndpointId), 'does not name B’s endpoint');
        assert.equal((await request('GET', `/api/v1/data-endpoints/${b.ids.sourceEndpointId}/records?limit=1&cursor=${cursor}`, { key: a.key })).status, 404);
      }, [a.ws.workspaceId]);
    });

    it('refuses A’s key on B’s MCP session (404, as for an unknown session), and B’s session keeps working', async () => {
      const theirs = await connectMcp(b.key);
      try {
        const sessionId = (theirs.transport as unknown as { sessionId?: string }).sessionId;
        assert.ok(sessionId, 'B’s session id');
        const call = { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'pipeline_get', arguments: { projectId: b.ids.projectId, pipelineId: b.ids.pipelineId } } };
        const headers = { Accept: 'application/json, text/event-stream', 'Mcp-Session-Id': sessionId!, 'Mcp-Protocol-Version': '2025-03-26' };
        await unchanged(async () => {
          const hijack = await request('POST', '/mcp', { key: a.key, body: call, headers });
          assert.equal(hijack.status, 404, JSON.stringify(hijack.body));
          const unknown = await request('POST', '/mcp', { key: a.key, body: call, headers: { ...headers, 'Mcp-Session-Id': randomUUID() } });
          assert.deepEqual([hijack.body.code, hijack.body.message], [unknown.body.code, unknown.body.message], 'indistinguishable from an unknown session');
          assert.ok(!JSON.stringify(hijack.body).includes(b.ids.pipelineId));
          // Bound to B's project on A's key, it is refused the same way.
          assert.equal((await request('POST', `/mcp/projects/${a.ids.projectId}`, { key: a.key, body: call, headers })).status, 404);
        });
        const still = (await theirs.callTool({ name: 'pipeline_get', arguments: { projectId: b.ids.projectId, pipelineId: b.ids.pipelineId } })) as { isError?: boolean };
        assert.ok(!still.isError, 'B’s session still answers B');
      } finally {
        await theirs.close();
      }
    });
  });
});
