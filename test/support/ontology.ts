import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { PluginInstallation, QueryJob } from '../../db/models';
import { findCapability } from '../../plugins';
import { capabilityContext } from '../../services/endpoints/data-endpoints';
import { installPlugin } from '../../services/endpoints/plugins';
import type { BootstrapResult } from '../../services/tenancy/workspaces';
import { env } from './environment';
import type { SparqlSettings } from '../../ontology/sparql-threads/settings';
import { as, keyIdOf, newKey, newWorkspace, raiseRequestLimits, request } from './fixtures';

export const ONTOLOGY_SCOPES = ['ontologies:read', 'ontologies:write', 'bindings:read', 'bindings:write', 'data:read', 'endpoints:read', 'endpoints:write', 'sparql:query', 'sparql:update', 'org:read'];

export interface OntologyTenant {
  ws: BootstrapResult;
  client: ReturnType<typeof as>;
  key: string;
  base: string;
  managedInstallationId: string;
}

export async function ontologyTenant(): Promise<OntologyTenant> {
  const ws = await newWorkspace();
  await raiseRequestLimits(ws.workspaceId);
  const managed = await installPlugin(env().db, env().encryptionKey, ws.workspaceId, 'managed_table', {});
  const key = await newKey(ws, { scopes: ONTOLOGY_SCOPES, readPermissions: ['customers.read'] });
  return { ws, key, client: as(key), base: `/api/v1/projects/${ws.projectId}/ontology`, managedInstallationId: managed.id };
}

/** A managed-table source endpoint holding `rows` (written through the capability, as a pipeline would); `primaryKey: null` for a table without one. */
export async function seededTable(t: OntologyTenant, rows: Array<Record<string, unknown>>, primaryKey: string[] | null = ['id']): Promise<string> {
  const table = `t_${randomUUID().replace(/-/g, '').slice(0, 12)}`;
  const res = await t.client.post('/api/v1/data-endpoints', {
    name: table,
    namespace: 'ontology',
    role: 'source',
    contractKind: 'source_stream',
    pluginCapabilityInstallationId: t.managedInstallationId,
    target: primaryKey ? { table, primaryKey } : { table },
  });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  const model = (await PluginInstallation.query(env().db).findById(t.managedInstallationId))!;
  await findCapability('managed_table').writeRecords!(capabilityContext(env().db, model, env().dependencies()), primaryKey ? { table, primaryKey } : { table }, { operation: 'append', rows, provenance: { kind: 'write', id: randomUUID() } });
  return res.body.dataEndpoint.id;
}

/** Posts terms, links and shapes to the tenant's ontology, compiles and activates it. Returns the package id. */
export async function activeOntology(t: OntologyTenant, { terms, links = [], shapes = [] }: { terms: object[]; links?: object[]; shapes?: object[] }): Promise<string> {
  for (const [part, items] of [['terms', terms], ['links', links], ['shapes', shapes]] as const) {
    for (const item of items) {
      const res = await t.client.post(`${t.base}/${part}`, item);
      assert.equal(res.status, 201, JSON.stringify(res.body));
    }
  }
  const compiled = await t.client.post(`${t.base}/compile`, {});
  assert.equal(compiled.status, 201, JSON.stringify(compiled.body));
  assert.equal((await t.client.post(`${t.base}/activate`, { packageId: compiled.body.package.id })).status, 200);
  return compiled.body.package.id;
}

/** Customer (name, age) and Order (total) placedBy Customer, compiled and active. Returns the package id. */
export function customerOntology(t: OntologyTenant): Promise<string> {
  return activeOntology(t, {
    terms: [
      { id: 'Customer', kind: 'class', label: 'Customer' },
      { id: 'Order', kind: 'class' },
      { id: 'name', kind: 'property', domain: 'Customer', datatype: 'xsd:string', minCount: 1, maxCount: 1 },
      { id: 'age', kind: 'property', domain: 'Customer', datatype: 'xsd:integer', maxCount: 1 },
      { id: 'total', kind: 'property', domain: 'Order', datatype: 'xsd:decimal' },
    ],
    links: [{ id: 'placedBy', from: 'Order', to: 'Customer', maxCount: 1 }],
    shapes: [{ id: 'AdultShape', targetClass: 'Customer', properties: [{ path: 'age', minInclusive: 18, message: 'customers are adults' }] }],
  });
}

export async function bind(t: OntologyTenant, body: Record<string, unknown>): Promise<string> {
  const res = await t.client.post(`${t.base}/read-bindings`, body);
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.binding.id;
}

/**
 * An accepted async query job of this key, or of a member in the console (no key), as the execute
 * operation leaves it for its workflow (none is started).
 */
export async function activeQueryJob(t: OntologyTenant, by: string | { memberId: string }): Promise<QueryJob> {
  const query = await env().db('published_queries').insert({ workspaceId: t.ws.workspaceId, projectId: t.ws.projectId, name: `q-${randomUUID().slice(0, 8)}`, createdByMemberId: t.ws.memberId }).returning('id');
  return QueryJob.query(env().db).insertAndFetch({
    workspaceId: t.ws.workspaceId,
    projectId: t.ws.projectId,
    queryId: query[0].id,
    releaseVersion: 1,
    ...(typeof by === 'string' ? { apiKeyId: await keyIdOf(by), memberId: t.ws.memberId } : { apiKeyId: null, memberId: by.memberId }),
    status: 'active',
    input: { input: {}, page: { limit: 10, offset: 0 } },
    inputHash: 'test',
    workflowId: `test-job-${randomUUID()}`,
    expiresAt: new Date(Date.now() + 3_600_000),
  } as never);
}

/**
 * An ASK's or CONSTRUCT's answer as text to compare (the boolean; the N-Triples lines sorted, every
 * blank node label as one, since each answer names its own), and the triples read into the API.
 */
export async function shownAnswer(url: string, key: string, text: string): Promise<{ shown: string; triples: number }> {
  const accept = /^\s*(PREFIX[^\n]*\n\s*)*ASK/i.test(text) ? 'application/sparql-results+json' : 'application/n-triples';
  const res = await request('POST', url, { key, rawBody: text, headers: { 'Content-Type': 'application/sparql-query', Accept: accept } });
  assert.equal(res.status, 200, `${text}: ${JSON.stringify(res.body)}`);
  const shown = typeof res.body === 'string' ? res.body.split('\n').filter(Boolean).map((line) => line.replace(/_:\S+/g, '_:b')).sort().join('\n') : String(res.body.boolean);
  return { shown, triples: Number(res.headers.get('weft-dataset-triples')) };
}

/**
 * Changes the SPARQL settings of the test environment's runtimes (the in-process API's, and the
 * one object the runtimes a test builds share with their query threads) until the returned
 * function restores them; a query pool started meanwhile keeps the ones it started with.
 */
export function overrideSparqlSettings(changes: Partial<SparqlSettings>): () => void {
  const changed = [...new Set([env().sparqlQueries.settings, env().apiDependencies.sparqlQueries.settings])].map((settings) => ({ settings, before: { ...settings } }));
  for (const { settings } of changed) Object.assign(settings, changes);
  return () => {
    for (const { settings, before } of changed) Object.assign(settings, before);
  };
}

/** overrideSparqlSettings for the describe block it is called in: set before its tests, restored after them. */
export function sparqlSettingsForBlock(changes: Partial<SparqlSettings>): void {
  let restore: (() => void) | undefined;
  before(() => {
    restore = overrideSparqlSettings(changes);
  });
  after(() => restore?.());
}
