import assert from 'node:assert/strict';
import { installPlugin } from '../../../services/endpoints/plugins';
import { env } from '../../support/environment';
import { as } from '../../support/fixtures';
import { action, currentSnapshot, managedTable, memberKey, putPolicy, tableRows, writeTenant, WriteTenant } from '../../support/source-writes';

describe('Governed source writes: immediate writes, snapshots, idempotency and the action log', function () {
  this.timeout(60_000);
  let t: WriteTenant;
  before(async () => {
    t = await writeTenant();
  });

  it('applies an upsert at once against the current snapshot, returns the new snapshot, and logs proposal and application', async () => {
    const endpointId = await managedTable(t);
    await putPolicy(t, endpointId);
    const empty = await currentSnapshot(t.writer, endpointId);
    assert.deepEqual(empty, { id: 'empty', version: '0' });
    const body = action(t, empty, { operation: 'upsert', rows: [{ id: 1, name: 'Ada' }, { id: 2, name: 'Bob' }] });
    const res = await t.writer.post(`/api/v1/data-endpoints/${endpointId}/writes`, body);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    const applied = res.body.writeAction;
    assert.equal(applied.status, 'applied');
    assert.equal(applied.affected, 2);
    assert.equal(applied.snapshotAfter.version, '1');
    assert.deepEqual(await currentSnapshot(t.writer, endpointId), { id: applied.snapshotAfter.id, version: '1' });
    assert.deepEqual((await tableRows(t.writer, endpointId)).map((r) => r.name), ['Ada', 'Bob']);

    const log = await t.writer.get(`/api/v1/data-endpoints/${endpointId}/write-log`);
    assert.equal(log.status, 200);
    assert.deepEqual(log.body.entries.map((e: { kind: string }) => e.kind).sort(), ['applied', 'proposed']);
    const entry = log.body.entries.find((e: { kind: string }) => e.kind === 'applied');
    assert.equal(entry.actionId, body.actionId);
    assert.equal(entry.idempotencyKey, body.idempotencyKey);
    assert.deepEqual({ id: entry.snapshotBefore.id, version: entry.snapshotBefore.version }, empty);
    assert.equal(entry.snapshotAfter.id, applied.snapshotAfter.id);
    assert.equal(entry.actorMemberId, t.ws.memberId);
  });

  it('refuses a stale expectedSourceSnapshot with a conflict naming the current snapshot, writes nothing, and logs the failure', async () => {
    const endpointId = await managedTable(t);
    await putPolicy(t, endpointId);
    const first = await t.writer.post(`/api/v1/data-endpoints/${endpointId}/writes`, action(t, { id: 'empty', version: '0' }, { operation: 'append', rows: [{ id: 1, name: 'Ada' }] }));
    assert.equal(first.status, 200);
    const stale = action(t, { id: 'empty', version: '0' }, { operation: 'upsert', rows: [{ id: 1, name: 'Eve' }] });
    const res = await t.writer.post(`/api/v1/data-endpoints/${endpointId}/writes`, stale);
    assert.equal(res.status, 409);
    assert.equal(res.body.code, 'snapshot_conflict');
    assert.equal(res.body.currentSnapshot.id, first.body.writeAction.snapshotAfter.id);
    assert.deepEqual((await tableRows(t.writer, endpointId)).map((r) => r.name), ['Ada']);
    const failed = await t.writer.get(`/api/v1/data-endpoints/${endpointId}/write-log?kind=failed`);
    assert.equal(failed.body.entries.length, 1);
    assert.equal(failed.body.entries[0].actionId, stale.actionId);
    assert.equal(failed.body.entries[0].detail.code, 'snapshot_conflict');
    // The replay answers the same failure, and still writes nothing.
    const again = await t.writer.post(`/api/v1/data-endpoints/${endpointId}/writes`, stale);
    assert.equal(again.status, 409);
    assert.equal(again.body.code, 'snapshot_conflict');
  });

  it('applies exactly one of two concurrent writes made against the same snapshot', async () => {
    const endpointId = await managedTable(t);
    await putPolicy(t, endpointId);
    const snapshot = await currentSnapshot(t.writer, endpointId);
    const results = await Promise.all(
      ['Ada', 'Eve'].map((name) => t.writer.post(`/api/v1/data-endpoints/${endpointId}/writes`, action(t, snapshot, { operation: 'upsert', rows: [{ id: 1, name }] }))),
    );
    assert.deepEqual(results.map((r) => r.status).sort(), [200, 409]);
    const winner = results.find((r) => r.status === 200)!.body.writeAction.input.rows[0].name;
    assert.deepEqual((await tableRows(t.writer, endpointId)).map((r) => r.name), [winner]);
    assert.equal((await currentSnapshot(t.writer, endpointId)).version, '1');
  });

  it('writes once for ten concurrent retries of one action, returning the same outcome to each', async () => {
    const endpointId = await managedTable(t, undefined);
    await putPolicy(t, endpointId);
    const body = action(t, await currentSnapshot(t.writer, endpointId), { operation: 'append', rows: [{ id: 1, name: 'Ada' }] });
    const results = await Promise.all(Array.from({ length: 10 }, () => t.writer.post(`/api/v1/data-endpoints/${endpointId}/writes`, body)));
    assert.deepEqual(results.map((r) => r.status), Array(10).fill(200));
    assert.equal(new Set(results.map((r) => r.body.writeAction.snapshotAfter.id)).size, 1);
    assert.equal(results.filter((r) => r.headers.get('idempotent-replayed') === 'true').length, 9);
    // A keyless table would take a second append as a second row: one row proves one write.
    assert.equal((await tableRows(t.writer, endpointId)).length, 1);
    assert.equal((await currentSnapshot(t.writer, endpointId)).version, '1');
    const applied = await t.writer.get(`/api/v1/data-endpoints/${endpointId}/write-log?kind=applied`);
    assert.equal(applied.body.entries.length, 1);
  });

  it('refuses the same idempotencyKey with another body, and the same actionId under another key', async () => {
    const endpointId = await managedTable(t);
    await putPolicy(t, endpointId);
    const body = action(t, await currentSnapshot(t.writer, endpointId), { operation: 'upsert', rows: [{ id: 1, name: 'Ada' }] });
    assert.equal((await t.writer.post(`/api/v1/data-endpoints/${endpointId}/writes`, body)).status, 200);
    const changed = await t.writer.post(`/api/v1/data-endpoints/${endpointId}/writes`, { ...body, input: { ...body.input, rows: [{ id: 1, name: 'Eve' }] } });
    assert.equal(changed.status, 409);
    assert.equal(changed.body.code, 'idempotency_key_reused');
    const sameAction = await t.writer.post(`/api/v1/data-endpoints/${endpointId}/writes`, { ...body, idempotencyKey: 'another-key-123' });
    assert.equal(sameAction.status, 409);
    assert.equal(sameAction.body.code, 'action_id_taken');
    assert.deepEqual((await tableRows(t.writer, endpointId)).map((r) => r.name), ['Ada']);
  });

  it('returns a dry run’s change set with before and after values and writes nothing', async () => {
    const endpointId = await managedTable(t);
    await putPolicy(t, endpointId);
    const seeded = await t.writer.post(`/api/v1/data-endpoints/${endpointId}/writes`, action(t, { id: 'empty', version: '0' }, { operation: 'append', rows: [{ id: 1, name: 'Ada', team: 'a' }, { id: 2, name: 'Bob', team: 'b' }, { id: 3, name: 'Cy', team: 'a' }] }));
    const snapshot = { id: seeded.body.writeAction.snapshotAfter.id, version: '1' };
    const upsert = await t.writer.post(`/api/v1/data-endpoints/${endpointId}/writes?dryRun=true`, action(t, snapshot, { operation: 'upsert', rows: [{ id: 2, name: 'Bobby' }, { id: 4, name: 'Dee' }, { id: 3, name: 'Cy' }] }));
    assert.equal(upsert.status, 200, JSON.stringify(upsert.body));
    assert.equal(upsert.body.dryRun, true);
    const { changeSet } = upsert.body;
    assert.deepEqual(changeSet.counts, { added: 1, changed: 1, removed: 0 });
    assert.deepEqual(changeSet.added[0].after, { id: 4, name: 'Dee' });
    assert.deepEqual(changeSet.changed[0].before, { id: 2, name: 'Bob', team: 'b' });
    assert.deepEqual(changeSet.changed[0].after, { id: 2, name: 'Bobby', team: 'b' });

    const del = await t.writer.post(`/api/v1/data-endpoints/${endpointId}/writes?dryRun=true`, action(t, snapshot, { operation: 'delete', where: [{ field: 'team', op: 'eq', value: 'a' }] }));
    assert.deepEqual(del.body.changeSet.counts, { added: 0, changed: 0, removed: 2 });
    assert.deepEqual(del.body.changeSet.removed.map((r: { before: { name: string } }) => r.before.name).sort(), ['Ada', 'Cy']);

    const stale = await t.writer.post(`/api/v1/data-endpoints/${endpointId}/writes?dryRun=true`, action(t, { id: 'empty', version: '0' }, { operation: 'delete', where: [{ field: 'id', op: 'eq', value: 1 }] }));
    assert.equal(stale.status, 409);
    assert.equal(stale.body.code, 'snapshot_conflict');

    assert.deepEqual(await currentSnapshot(t.writer, endpointId), snapshot);
    assert.deepEqual((await tableRows(t.writer, endpointId)).map((r) => r.name), ['Ada', 'Bob', 'Cy']);
    const log = await t.writer.get(`/api/v1/data-endpoints/${endpointId}/write-log`);
    assert.equal(log.body.pagination.total, 2, 'dry runs are not logged as actions');
  });

  it('lists in an endpoint’s write log only the actions of projects the key may see, as its list of writes does', async () => {
    const endpointId = await managedTable(t);
    await putPolicy(t, endpointId);
    const other = await as(t.ws.apiKey).post('/api/v1/projects', { name: `log-other-${Date.now()}` });
    assert.equal(other.status, 201, JSON.stringify(other.body));
    const ours = action(t, await currentSnapshot(t.writer, endpointId), { operation: 'append', rows: [{ id: 1 }] });
    assert.equal((await t.writer.post(`/api/v1/data-endpoints/${endpointId}/writes`, ours)).status, 200);
    const theirs = action(t, await currentSnapshot(t.writer, endpointId), { operation: 'append', rows: [{ id: 2 }] }, { projectId: other.body.project.id });
    assert.equal((await t.writer.post(`/api/v1/data-endpoints/${endpointId}/writes`, theirs)).status, 200);

    const actionIdsOf = (entries: Array<{ actionId: string }>) => [...new Set(entries.map((e) => e.actionId))].sort();
    const restricted = await memberKey(t, ['policy:read'], 'member', { projectIds: [t.ws.projectId], workspaceResources: true });
    const writes = await restricted.client.get(`/api/v1/data-endpoints/${endpointId}/writes`);
    assert.equal(writes.status, 200, JSON.stringify(writes.body));
    assert.deepEqual(actionIdsOf(writes.body.writeActions), [ours.actionId]);
    const log = await restricted.client.get(`/api/v1/data-endpoints/${endpointId}/write-log`);
    assert.equal(log.status, 200, JSON.stringify(log.body));
    assert.deepEqual(actionIdsOf(log.body.entries), [ours.actionId], 'the other project’s action is not in the log');
    assert.equal(log.body.pagination.total, 2, 'its proposal and application');
    const filtered = await restricted.client.get(`/api/v1/data-endpoints/${endpointId}/write-log?actionId=${theirs.actionId}`);
    assert.deepEqual(filtered.body.entries, [], 'nor found by its actionId');

    const unrestricted = await memberKey(t, ['policy:read']);
    const all = await unrestricted.client.get(`/api/v1/data-endpoints/${endpointId}/write-log`);
    assert.deepEqual(actionIdsOf(all.body.entries), [ours.actionId, theirs.actionId].sort());
  });

  it('enforces the policy: none, operation, project, grants, data:delete, and a capability without transactional writes', async () => {
    const endpointId = await managedTable(t);
    const snapshot = await currentSnapshot(t.writer, endpointId);
    const post = (client: ReturnType<typeof as>, input: Record<string, unknown>, overrides: Record<string, unknown> = {}) => client.post(`/api/v1/data-endpoints/${endpointId}/writes`, action(t, snapshot, input, overrides));
    const append = { operation: 'append', rows: [{ id: 1 }] };

    const restricted = await memberKey(t, ['data:write'], 'member', { projectIds: [t.ws.projectId] });
    let res = await post(restricted.client, append);
    assert.equal(res.status, 403);
    assert.equal(res.body.code, 'workspace_resources_denied');

    res = await post(t.writer, append);
    assert.equal(res.status, 403);
    assert.equal(res.body.code, 'write_policy_missing');

    await putPolicy(t, endpointId, { allowedOperations: ['append', 'delete'], requiredReadPermissions: ['crm.read'], requiredWritePermissions: ['crm.write'] });
    res = await post(t.writer, append);
    assert.equal(res.status, 403);
    assert.equal(res.body.code, 'missing_grants');
    assert.deepEqual(res.body.missingWritePermissions, ['crm.write']);

    const granted = await memberKey(t, ['data:read', 'data:write'], 'member', { readPermissions: ['crm.read'], writePermissions: ['crm.write'] });
    res = await post(granted.client, { operation: 'upsert', rows: [{ id: 1 }] });
    assert.equal(res.status, 403);
    assert.equal(res.body.code, 'operation_not_allowed');
    res = await post(granted.client, { operation: 'delete', where: [{ field: 'id', op: 'eq', value: 1 }] });
    assert.equal(res.status, 403);
    assert.equal(res.body.code, 'insufficient_scope');

    const other = await as(t.ws.apiKey).post('/api/v1/projects', { name: `other-${Date.now()}` });
    assert.equal(other.status, 201, JSON.stringify(other.body));
    await putPolicy(t, endpointId, { allowedOperations: ['append'], projectIds: [t.ws.projectId] });
    res = await post(t.writer, append, { projectId: other.body.project.id });
    assert.equal(res.status, 403);
    assert.equal(res.body.code, 'project_not_allowed');

    const http = await installPlugin(env().db, env().encryptionKey, t.ws.workspaceId, 'http_dataset', { baseUrl: 'https://example.com/' });
    const remote = await t.writer.post('/api/v1/data-endpoints', {
      name: `remote-${Date.now()}`,
      namespace: 'writes',
      role: 'source',
      contractKind: 'source_stream',
      pluginCapabilityInstallationId: http.id,
      target: { request: { url: 'https://example.com/items' }, response: { format: 'json', recordsPath: 'data' } },
    });
    assert.equal(remote.status, 201, JSON.stringify(remote.body));
    const refused = await t.writer.put(`/api/v1/data-endpoints/${remote.body.dataEndpoint.id}/write-policy`, { allowedOperations: ['append'] });
    assert.equal(refused.status, 422, JSON.stringify(refused.body));
    assert.equal(refused.body.code, 'writes_not_supported');
    const write = await t.writer.post(`/api/v1/data-endpoints/${remote.body.dataEndpoint.id}/writes`, action(t, snapshot, append));
    assert.equal(write.body.code, 'writes_not_supported');
    assert.equal((await tableRows(t.writer, endpointId)).length, 0);
  });
});
