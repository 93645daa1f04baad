import { within as probed } from './polling';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { PluginInstallation } from '../../db/models';
import { findCapability } from '../../plugins';
import { capabilityContext } from '../../services/endpoints/data-endpoints';
import { installPlugin } from '../../services/endpoints/plugins';
import type { BootstrapResult } from '../../services/tenancy/workspaces';
import { env } from './environment';
import { as, newKey, newWorkspace, raiseRequestLimits } from './fixtures';
import { customerOntology, OntologyTenant } from './ontology';

// A tenant for the tests of guards that follow the data (issue 33): a workspace with two
// managed_table installations, an active Customer/Order ontology, and a key that holds the named
// read grants (`granted`), so that guarded data can be set up and read back.

/** Every scope a consumer key may hold, but no administrative one. */
export const CONSUMER_SCOPES = [
  'endpoints:read', 'endpoints:write', 'data:read', 'pipelines:read', 'pipelines:write', 'pipelines:execute', 'runs:read',
  'bindings:read', 'bindings:write', 'ontologies:read', 'ontologies:write', 'sparql:query', 'queries:read', 'queries:write', 'queries:publish', 'queries:execute',
];

export interface GuardTenant {
  ws: BootstrapResult;
  /** The workspace's unrestricted org:manage key (no named grants). */
  owner: ReturnType<typeof as>;
  /** Every consumer scope, data:write and policy:*, and the named read grants given to guardTenant. */
  grantedKey: string;
  granted: ReturnType<typeof as>;
  base: string;
  managedInstallationId: string;
  /** A second managed_table installation of the same workspace: it reaches the same tables. */
  secondManagedInstallationId: string;
  packageId: string;
  baseIri: string;
}

export async function guardTenant(readPermissions: string[] = ['payroll']): Promise<GuardTenant> {
  const ws = await newWorkspace();
  await raiseRequestLimits(ws.workspaceId);
  const { db, encryptionKey } = env();
  const managed = await installPlugin(db, encryptionKey, ws.workspaceId, 'managed_table', {});
  const second = await installPlugin(db, encryptionKey, ws.workspaceId, 'managed_table', {});
  const grantedKey = await newKey(ws, { scopes: [...CONSUMER_SCOPES, 'data:write', 'policy:read', 'policy:manage'], readPermissions });
  const base = `/api/v1/projects/${ws.projectId}/ontology`;
  const ontology: OntologyTenant = { ws, client: as(grantedKey), key: grantedKey, base, managedInstallationId: managed.id };
  const packageId = await customerOntology(ontology);
  const baseIri = (await as(grantedKey).get(base)).body.ontology.baseIri as string;
  assert.equal((await as(ws.apiKey).patch('/api/v1/organization/settings', { semanticConsumerMode: 'read' })).status, 200);
  return { ws, owner: as(ws.apiKey), grantedKey, granted: as(grantedKey), base, managedInstallationId: managed.id, secondManagedInstallationId: second.id, packageId, baseIri };
}

/** The body that makes a managed_table endpoint over `table`. */
export function tableEndpointBody(installationId: string, table: string, { role = 'source', name = `${table}-${randomUUID().slice(0, 8)}`, primaryKey }: { role?: 'source' | 'destination'; name?: string; primaryKey?: string[] } = {}) {
  return {
    name,
    namespace: 'guards',
    role,
    contractKind: role === 'source' ? 'source_stream' : 'sink_table',
    pluginCapabilityInstallationId: installationId,
    target: { table, ...(primaryKey ? { primaryKey } : {}) },
  };
}

/** A managed_table endpoint over `table`, made by `client` (it must be allowed to). */
export async function tableEndpoint(client: ReturnType<typeof as>, installationId: string, table: string, options: Parameters<typeof tableEndpointBody>[2] = {}): Promise<string> {
  const res = await client.post('/api/v1/data-endpoints', tableEndpointBody(installationId, table, options));
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.dataEndpoint.id as string;
}

/** Writes rows into a workspace's managed table through the capability, as a pipeline commit would. */
export async function seedTable(installationId: string, table: string, rows: Array<Record<string, unknown>>, primaryKey = ['id']): Promise<void> {
  const model = (await PluginInstallation.query(env().db).findById(installationId))!;
  await findCapability('managed_table').writeRecords!(capabilityContext(env().db, model, env().dependencies()), { table, primaryKey }, { operation: 'append', rows, provenance: { kind: 'write', id: randomUUID() } });
}

/** The number of data endpoints of the workspace (a refused creation must leave it unchanged). */
export async function endpointCount(workspaceId: string): Promise<number> {
  const row = await env().db('data_endpoints').where({ workspaceId }).count<{ n: string }[]>('* as n').first();
  return Number(row?.n);
}

/** A read binding made by `client`; returns the binding as answered. */
export async function bindAs(client: ReturnType<typeof as>, t: GuardTenant, body: { termId: string; dataEndpointId: string; mapping: Record<string, unknown>; requiredReadPermissions?: string[] }) {
  const res = await client.post(`${t.base}/read-bindings`, { ontologyPackageId: t.packageId, ...body });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.binding as { id: string; guardedEndpointIds: string[]; requiredReadPermissions: string[] };
}

/**
 * Probes until `done` holds or `ms` pass (the bound is the property under test), then answers the
 * last value probed. Never a fixed sleep: it probes again at once, with a short pause.
 */
export async function within<T>(ms: number, probe: () => Promise<T>, done: (value: T) => boolean, what: string): Promise<T> {
  const value = await probed(ms, probe, done, 20);
  if (!done(value)) throw new Error(`${what}: not seen within ${ms} ms (last: ${JSON.stringify(value)})`);
  return value;
}
