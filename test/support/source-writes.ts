import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { installPlugin } from '../../services/endpoints/plugins';
import { addMember } from '../../services/tenancy/workspaces';
import type { BootstrapResult } from '../../services/tenancy/workspaces';
import { env } from './environment';
import { as, keyIdOf, newKey, newWorkspace, raiseRequestLimits } from './fixtures';

/** Every scope a governed-write test key might need; tests narrow it where scopes are the point. */
export const WRITER_SCOPES = ['endpoints:read', 'endpoints:write', 'data:read', 'data:write', 'data:delete', 'policy:read', 'policy:propose', 'policy:manage'];
export const APPROVER_SCOPES = ['data:read', 'policy:read', 'policy:approve'];

export interface WriteTenant {
  ws: BootstrapResult;
  /** Owner's key with every writer scope. */
  writer: ReturnType<typeof as>;
  writerKey: string;
  managedInstallationId: string;
}

export async function writeTenant(): Promise<WriteTenant> {
  const ws = await newWorkspace();
  await raiseRequestLimits(ws.workspaceId);
  const managed = await installPlugin(env().db, env().encryptionKey, ws.workspaceId, 'managed_table', {});
  const writerKey = await newKey(ws, { scopes: WRITER_SCOPES });
  return { ws, writer: as(writerKey), writerKey, managedInstallationId: managed.id };
}

/** A key of another member of the workspace (an approver, by default). */
export async function memberKey(t: WriteTenant, scopes = APPROVER_SCOPES, role: 'member' | 'admin' = 'member', extra: Record<string, unknown> = {}): Promise<{ key: string; memberId: string; client: ReturnType<typeof as> }> {
  const member = await addMember(env().db, t.ws.workspaceId, { name: `member-${randomUUID().slice(0, 6)}`, role });
  const key = await newKey(t.ws, { scopes, ...extra }, member.id);
  return { key, memberId: member.id, client: as(key) };
}

/** A managed table endpoint (role source) keyed on `id`. */
export async function managedTable(t: WriteTenant, primaryKey: string[] | undefined = ['id']): Promise<string> {
  const table = `t_${randomUUID().replace(/-/g, '').slice(0, 12)}`;
  const res = await t.writer.post('/api/v1/data-endpoints', {
    name: table,
    namespace: 'writes',
    role: 'source',
    contractKind: 'source_stream',
    pluginCapabilityInstallationId: t.managedInstallationId,
    target: { table, ...(primaryKey ? { primaryKey } : {}) },
  });
  assert.equal(res.status, 201, JSON.stringify(res.body));
  return res.body.dataEndpoint.id;
}

export async function putPolicy(t: WriteTenant, endpointId: string, policy: Record<string, unknown> = {}) {
  const res = await t.writer.put(`/api/v1/data-endpoints/${endpointId}/write-policy`, { allowedOperations: ['append', 'upsert', 'update', 'delete'], ...policy });
  assert.ok(res.status === 201 || res.status === 200, JSON.stringify(res.body));
  return res.body.writePolicy;
}

export async function currentSnapshot(client: ReturnType<typeof as>, endpointId: string): Promise<{ id: string; version: string }> {
  const res = await client.get(`/api/v1/data-endpoints/${endpointId}/snapshot`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return { id: res.body.snapshot.id, version: res.body.snapshot.version };
}

/** A write action body (SPEC 2.9) with fresh ids. */
export function action(t: WriteTenant, snapshot: { id: string; version: string }, input: Record<string, unknown>, overrides: Record<string, unknown> = {}) {
  return {
    actionId: randomUUID(),
    projectId: t.ws.projectId,
    idempotencyKey: `key-${randomUUID()}`,
    input: { contractVersion: 1, expectedSourceSnapshot: snapshot, ...input },
    ...overrides,
  };
}

export async function tableRows(client: ReturnType<typeof as>, endpointId: string): Promise<Array<Record<string, unknown>>> {
  const res = await client.get(`/api/v1/data-endpoints/${endpointId}/records?limit=1000&orderBy=${encodeURIComponent(JSON.stringify([{ field: 'id' }]))}`);
  assert.equal(res.status, 200, JSON.stringify(res.body));
  return res.body.data ?? res.body.records;
}

/**
 * Approves as `approver` while its key's revocation is under way: the revocation is written, not
 * committed, when the approval arrives (its decision finds the key active), and commits once the
 * apply waits on the approving key (the apply locks it to count the approvals again), or once the
 * approval has answered should the apply not look at the key. Returns the approval's answer.
 */
export async function approveAsKeyIsRevoked(approver: { key: string; client: ReturnType<typeof as> }, actionUrl: string): Promise<{ status: number; body: any }> {
  const { db } = env();
  const revocation = await db.transaction();
  let approval: Promise<{ status: number; body: any }>;
  try {
    await revocation('api_keys').where({ id: await keyIdOf(approver.key) }).update({ revokedAt: revocation.fn.now() });
    approval = approver.client.post(`${actionUrl}/approve`, {});
    let answered = false;
    approval.then(() => (answered = true), () => (answered = true));
    const deadline = Date.now() + 30_000;
    for (;;) {
      const waiting = await db.raw("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query ILIKE '%api_keys%for share%'");
      if (waiting.rows[0].n > 0 || answered) break;
      assert.ok(Date.now() < deadline, 'the apply waits on the approving key, or the approval answers');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await revocation.commit();
  } catch (error) {
    await revocation.rollback();
    throw error;
  }
  const [row] = await db('api_keys').where({ id: await keyIdOf(approver.key) }).select('workspaceId');
  env().definitions.changed(row.workspaceId);
  return approval;
}
