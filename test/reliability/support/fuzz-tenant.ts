import { randomUUID } from 'node:crypto';
import { SCOPES } from '../../../core/scopes';
import { installPlugin } from '../../../services/endpoints/plugins';
import type { BootstrapResult } from '../../../services/tenancy/workspaces';
import { env } from '../../support/environment';
import { as, keyIdOf, newKey, newWorkspace, raiseRequestLimits } from '../../support/fixtures';
import { expectStatus, managedEndpointPair, snapshotOf } from './tenant-fixtures';

/**
 * The request fuzzer's tenant: a workspace with raised request limits, a key holding every scope,
 * and one real resource of each kind a path names, built through the public API (the plugin
 * installation is an operator action). Nothing here starts a pipeline run or a query job: the
 * fuzzer's own requests are the only work, so a refused request's digest sees only its own writes.
 */
export interface FuzzTenant {
  ws: BootstrapResult;
  /** Every scope (org:manage included), unrestricted. */
  key: string;
  /** Real values of path parameters, by parameter name. */
  params: Record<string, string[]>;
  /** Every real id, for uuid fields of bodies. */
  uuids: string[];
  /** The managed_table installation, and the source endpoint's current snapshot at set-up. */
  installationId: string;
  snapshot: { id: string; version: string };
}

export async function fuzzTenant(): Promise<FuzzTenant> {
  const ws = await newWorkspace(`fuzz-${randomUUID().slice(0, 8)}`);
  await raiseRequestLimits(ws.workspaceId);
  const key = await newKey(ws, { name: 'fuzz-every-scope', scopes: [...SCOPES] });
  const client = as(key);
  const P = `/api/v1/projects/${ws.projectId}`;
  const O = `${P}/ontology`;
  const installation = await installPlugin(env().db, env().encryptionKey, ws.workspaceId, 'managed_table', {});

  expectStatus(await client.patch('/api/v1/organization/settings', { semanticConsumerMode: 'write' }), 200, 'semantic mode');
  const victim = await keyIdOf(await newKey(ws, { name: 'victim', scopes: ['org:read'] }));
  const second = await client.post('/api/v1/projects', { name: 'second' });
  expectStatus(second, 201, 'second project');

  const table = `fuzz_${randomUUID().replace(/-/g, '').slice(0, 8)}`;
  const { sourceId, destinationId } = await managedEndpointPair(client, installation.id, table, 'fuzz');

  const snapshot = () => snapshotOf(client, sourceId);
  expectStatus(await client.put(`/api/v1/data-endpoints/${sourceId}/write-policy`, { allowedOperations: ['append', 'upsert', 'update', 'delete'] }), [200, 201], 'write policy');
  const applied = await client.post(`/api/v1/data-endpoints/${sourceId}/writes`, {
    actionId: randomUUID(), projectId: ws.projectId, idempotencyKey: `seed-${randomUUID()}`,
    input: { contractVersion: 1, expectedSourceSnapshot: await snapshot(), operation: 'append', rows: [{ id: 1, total: 10 }, { id: 2, total: 20 }] },
  });
  expectStatus(applied, 200, 'applied write');
  // Approval needed from now on, with a day to decide: the pending action stays pending.
  expectStatus(await client.put(`/api/v1/data-endpoints/${sourceId}/write-policy`, { allowedOperations: ['append', 'upsert', 'update', 'delete'], approval: { required: true, approvers: 1, timeoutSeconds: 86_400 } }), 200, 'approval policy');
  const pending = await client.post(`/api/v1/data-endpoints/${sourceId}/writes`, {
    actionId: randomUUID(), projectId: ws.projectId, idempotencyKey: `pending-${randomUUID()}`,
    input: { contractVersion: 1, expectedSourceSnapshot: await snapshot(), operation: 'upsert', rows: [{ id: 3, total: 30 }] },
  });
  expectStatus(pending, 202, 'pending write');

  const pipelineDocument = {
    nodes: [
      { id: 'src', type: 'source', endpointId: sourceId, mode: 'full' },
      { id: 'dst', type: 'destination', endpointId: destinationId, writeMode: 'upsert' },
    ],
    edges: [{ from: 'src', to: 'dst' }],
  };
  const pipeline = await client.post(`${P}/pipelines`, { name: 'fuzz-pipeline', document: pipelineDocument });
  expectStatus(pipeline, 201, 'pipeline');
  const pipelineId = pipeline.body.pipeline.id as string;
  expectStatus(await client.post(`${P}/pipelines/${pipelineId}/branches`, { name: 'dev' }), 201, 'pipeline branch');
  const v2 = await client.post(`${P}/pipelines/${pipelineId}/versions`, { document: pipelineDocument, branchName: 'dev', commitMessage: 'dev' });
  expectStatus(v2, 201, 'pipeline version');

  const names = { term: 'Order', property: 'total', link: 'next', shape: 'OrderShape', constraint: 'totalKey', import: 'rdfsImport' };
  for (const [path, body] of [
    ['terms', { id: names.term, kind: 'class', label: 'Order' }],
    ['terms', { id: names.property, kind: 'property', domain: names.term, datatype: 'xsd:decimal', maxCount: 1 }],
    ['links', { id: names.link, from: names.term, to: names.term }],
    ['shapes', { id: names.shape, targetClass: names.term, properties: [{ path: names.property, minInclusive: 0 }] }],
    ['constraints', { id: names.constraint, kind: 'functional', terms: [names.property] }],
    ['imports', { id: names.import, kind: 'vocabulary', vocabulary: 'rdfs' }],
  ] as const) {
    expectStatus(await client.post(`${O}/${path}`, body), 201, `ontology ${path}`);
  }
  const compiled = await client.post(`${O}/compile`, {});
  expectStatus(compiled, 201, 'compile');
  const packageId = compiled.body.package.id as string;
  expectStatus(await client.post(`${O}/activate`, { packageId }), 200, 'activate');
  const versions = await client.get(`${O}/versions?limit=1`);
  expectStatus(versions, 200, 'ontology versions');
  const binding = await client.post(`${O}/read-bindings`, {
    ontologyPackageId: packageId, termId: names.term, dataEndpointId: sourceId,
    mapping: { subjectTemplate: 'https://example.com/orders/{id}', properties: { [names.property]: 'total' } },
  });
  expectStatus(binding, 201, 'read binding');

  const query = await client.post(`${O}/queries`, {
    name: 'fuzz-orders',
    sparql: `SELECT ?order ?total WHERE { ?order a :${names.term} ; :${names.property} ?total } ORDER BY ?total`,
    inputSchema: { type: 'object', properties: {} },
    outputSchema: { type: 'object', required: ['order', 'total'], properties: { order: { type: 'string' }, total: { type: 'number' } } },
  });
  expectStatus(query, 201, 'query');
  const queryId = query.body.query.id as string;
  expectStatus(await client.post(`${O}/queries/${queryId}/releases`, { expectedQueryVersionId: query.body.query.version.id }), 201, 'release');

  const operations = await client.get('/api/v1/usage/operations?limit=1');
  expectStatus(operations, 200, 'usage operations');

  const params: Record<string, string[]> = {
    project_id: [ws.projectId, second.body.project.id],
    key_id: [victim],
    endpoint_id: [sourceId, destinationId],
    action_id: [pending.body.writeAction.actionId, applied.body.writeAction.actionId],
    pipeline_id: [pipelineId],
    version_id: [pipeline.body.version.id, v2.body.version.id, versions.body.versions[0].id],
    package_id: [packageId],
    binding_id: [binding.body.binding.id],
    query_id: [queryId],
    operation_id: operations.body.operations.map((o: { id: string }) => o.id).slice(0, 1),
    term: [names.term, names.property],
    link: [names.link],
    shape: [names.shape],
    constraint: [names.constraint],
    import: [names.import],
    version: ['1'],
  };
  const uuids = [...new Set([installation.id, ...Object.values(params).flat().filter((v) => /^[0-9a-f]{8}-[0-9a-f]{4}-/.test(v))])];
  return { ws, key, params, uuids, installationId: installation.id, snapshot: await snapshot() };
}
