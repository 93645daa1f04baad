import assert from 'node:assert/strict';
import { env } from '../../support/environment';
import { as, newWorkspace } from '../../support/fixtures';

// Every migration has a working down(): the newest one is rolled back and applied again on the
// test database, and the API still authenticates and counts requests afterwards.

describe('Migrations', function () {
  this.timeout(60_000);

  it('roll the newest migration back and forward again, leaving a working request path', async () => {
    const db = env().db;
    const [, pending] = (await db.migrate.list()) as [unknown[], unknown[]];
    assert.equal(pending.length, 0, 'the test database is fully migrated');
    const [, rolledBack] = (await db.migrate.down()) as [number, string[]];
    assert.equal(rolledBack.length, 1, `rolled back: ${rolledBack.join(', ')}`);
    const [, reapplied] = (await db.migrate.up()) as [number, string[]];
    assert.deepEqual(reapplied, rolledBack);
    const ws = await newWorkspace();
    const res = await as(ws.apiKey).get('/api/v1/organization');
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.ok(res.headers.get('x-ratelimit-limit'), 'the request was counted');
  });

  it('give endpoints made before guards followed the data their identities, and merge policies that turn out to share data into the strictest', async () => {
    const db = env().db;
    const ws = await newWorkspace();
    // Back to just before the guards migration (newer ones first), then forward to the newest.
    for (;;) {
      const [, rolledBack] = (await db.migrate.down()) as [number, string[]];
      assert.equal(rolledBack.length, 1, `rolled back: ${rolledBack.join(', ')}`);
      if (rolledBack[0] === '20261202090000_guards_follow_the_data.ts') break;
    }
    const [installation] = await db('plugin_installations').insert({ workspace_id: ws.workspaceId, capability: 'managed_table', capability_version: '1.0.0', settings: {} }).returning('id');
    const endpoint = async (name: string, role: string, target: Record<string, unknown>) => (await db('data_endpoints').insert({
      workspace_id: ws.workspaceId, plugin_installation_id: installation.id, name, namespace: 'legacy', role, contract_kind: role === 'source' ? 'source_stream' : 'sink_table', target, created_by_member_id: ws.memberId,
    }).returning('id'))[0].id as string;
    const source = await endpoint('salaries-in', 'source', { table: 'salaries' });
    const destination = await endpoint('salaries-out', 'destination', { table: 'salaries', primaryKey: ['id'] });
    const other = await endpoint('orders', 'source', { table: 'orders' });
    const policy = (endpointId: string, fields: Record<string, unknown>) => db('write_policies').insert({ workspace_id: ws.workspaceId, data_endpoint_id: endpointId, created_by_member_id: ws.memberId, updated_by_member_id: ws.memberId, ...fields });
    await policy(source, { allowed_operations: db.raw("'{append,upsert,update}'::text[]"), required_read_permissions: db.raw("'{payroll}'::text[]"), approval_required: false, approval_timeout_seconds: 600 });
    await policy(destination, { allowed_operations: db.raw("'{upsert,update,delete}'::text[]"), required_write_permissions: db.raw("'{hr}'::text[]"), approval_required: true, approvals_required: 2, approval_timeout_seconds: 3600 });
    await db.migrate.latest();

    const identities = await db('data_endpoints').whereIn('id', [source, destination, other]).select('id', 'data_identity');
    assert.deepEqual(Object.fromEntries(identities.map((row) => [row.id, row.dataIdentity])), { [source]: 'managed_table:salaries', [destination]: 'managed_table:salaries', [other]: 'managed_table:orders' });
    const policies = await db('write_policies').where({ workspace_id: ws.workspaceId });
    assert.equal(policies.length, 1, 'one policy per data');
    const [merged] = policies;
    assert.equal(merged.dataIdentity, 'managed_table:salaries');
    assert.deepEqual([...merged.allowedOperations].sort(), ['update', 'upsert'], 'only what both allowed');
    assert.deepEqual(merged.requiredReadPermissions, ['payroll']);
    assert.deepEqual(merged.requiredWritePermissions, ['hr']);
    assert.equal(merged.approvalRequired, true);
    assert.equal(merged.approvalsRequired, 2);
    assert.equal(merged.approvalTimeoutSeconds, 600);
    assert.equal(merged.allowPipelineRuns, false);
  });
});
