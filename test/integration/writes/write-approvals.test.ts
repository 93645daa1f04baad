import assert from 'node:assert/strict';
import { until, within } from '../../support/polling';
import { removeMember } from '../../../services/tenancy/workspaces';
import { env } from '../../support/environment';
import { as, expireKey, newKey, revokeKey } from '../../support/fixtures';
import { action, approveAsKeyIsRevoked, currentSnapshot, managedTable, memberKey, putPolicy, tableRows, writeTenant, WriteTenant } from '../../support/source-writes';

/** Polls an action until `done` holds (the workflow settles it asynchronously). */
async function waitForAction(client: WriteTenant['writer'], endpointId: string, actionId: string, done: (status: string) => boolean, timeoutMs = 30_000) {
  const read = async () => {
    const res = await client.get(`/api/v1/data-endpoints/${endpointId}/writes/${actionId}`);
    assert.equal(res.status, 200, JSON.stringify(res.body));
    return res.body.writeAction;
  };
  const action = await within(timeoutMs, read, (found) => done(found.status), 250);
  if (!done(action.status)) assert.fail(`action ${actionId} is still ${action.status}`);
  return action;
}

describe('Governed writes that need approval, through the real Temporal server', function () {
  this.timeout(90_000);
  let t: WriteTenant;
  before(async () => {
    t = await writeTenant();
  });

  it('proposes, shows the status and change set, refuses the proposer, and applies once two other members approve', async () => {
    const endpointId = await managedTable(t);
    await putPolicy(t, endpointId, { approval: { required: true, approvers: 2 } });
    const [first, second] = [await memberKey(t), await memberKey(t)];
    const body = action(t, await currentSnapshot(t.writer, endpointId), { operation: 'upsert', rows: [{ id: 1, name: 'Ada' }, { id: 2, name: 'Bob' }] });
    const proposed = await t.writer.post(`/api/v1/data-endpoints/${endpointId}/writes`, body);
    assert.equal(proposed.status, 202, JSON.stringify(proposed.body));
    const pending = proposed.body.writeAction;
    assert.equal(pending.status, 'pending_approval');
    assert.equal(pending.approval.approvers, 2);
    assert.ok(Date.parse(pending.approval.expiresAt) > Date.now());
    assert.deepEqual(pending.changeSet.counts, { added: 2, changed: 0, removed: 0 });
    assert.equal(pending.workflowId.startsWith('weft-write-'), true);
    assert.equal((await tableRows(t.writer, endpointId)).length, 0, 'nothing is written before approval');

    const described = await env().temporal.workflow.getHandle(pending.workflowId).describe();
    assert.equal(described.status.name, 'RUNNING');
    assert.deepEqual(described.searchAttributes.DataEndpointId, [endpointId]);
    assert.deepEqual(described.searchAttributes.WorkspaceId, [t.ws.workspaceId]);

    const url = `/api/v1/data-endpoints/${endpointId}/writes/${body.actionId}`;
    assert.equal((await t.writer.get(url)).body.writeAction.status, 'pending_approval', 'the proposer reads its status');
    assert.equal((await first.client.get(url)).body.writeAction.status, 'pending_approval', 'an approver reads its status');

    const ownKeyApproval = await as(t.writerKey).post(`${url}/approve`, {});
    assert.equal(ownKeyApproval.status, 403, 'the writer key lacks policy:approve');
    // Another key of the proposing member, with policy:approve: still the proposer.
    const proposerApprover = await as(await newKey(t.ws, { scopes: ['policy:approve'] })).post(`${url}/approve`, {});
    assert.equal(proposerApprover.status, 403);
    assert.equal(proposerApprover.body.code, 'proposer_cannot_decide');

    const once = await first.client.post(`${url}/approve`, { comment: 'looks right' });
    assert.equal(once.status, 200, JSON.stringify(once.body));
    assert.equal(once.body.writeAction.status, 'pending_approval');
    assert.equal(once.body.writeAction.approval.decisions.length, 1);
    const twice = await first.client.post(`${url}/approve`, {});
    assert.equal(twice.status, 409);
    assert.equal(twice.body.code, 'already_decided');
    assert.equal((await tableRows(t.writer, endpointId)).length, 0);

    const done = await second.client.post(`${url}/approve`, {});
    assert.equal(done.status, 200, JSON.stringify(done.body));
    assert.equal(done.body.writeAction.status, 'applied');
    assert.equal(done.body.writeAction.snapshotAfter.version, '1');
    assert.deepEqual((await tableRows(t.writer, endpointId)).map((r) => r.name), ['Ada', 'Bob']);

    // The same request again returns the outcome and writes nothing.
    const replay = await t.writer.post(`/api/v1/data-endpoints/${endpointId}/writes`, body);
    assert.equal(replay.status, 200);
    assert.equal(replay.body.writeAction.status, 'applied');
    assert.equal((await currentSnapshot(t.writer, endpointId)).version, '1');

    const log = await t.writer.get(`/api/v1/data-endpoints/${endpointId}/write-log?actionId=${body.actionId}`);
    const kinds = log.body.entries.map((e: { kind: string }) => e.kind).reverse();
    assert.deepEqual(kinds, ['proposed', 'approved', 'approved', 'applied']);
    const applied = log.body.entries[0];
    assert.equal(applied.actorMemberId, second.memberId);
    assert.equal(applied.snapshotAfter.version, '1');
    assert.equal(log.body.entries[2].detail.comment, 'looks right');
    const closed = await env().temporal.workflow.getHandle(pending.workflowId).result();
    assert.equal(closed, 'applied');
  });

  it('ends an action rejected by one approver, writing nothing and taking no more decisions', async () => {
    const endpointId = await managedTable(t);
    await putPolicy(t, endpointId, { approval: { required: true, approvers: 1 } });
    const approver = await memberKey(t);
    const body = action(t, await currentSnapshot(t.writer, endpointId), { operation: 'append', rows: [{ id: 1, name: 'Ada' }] });
    assert.equal((await t.writer.post(`/api/v1/data-endpoints/${endpointId}/writes`, body)).status, 202);
    const url = `/api/v1/data-endpoints/${endpointId}/writes/${body.actionId}`;
    const rejected = await approver.client.post(`${url}/reject`, { comment: 'wrong table' });
    assert.equal(rejected.status, 200, JSON.stringify(rejected.body));
    assert.equal(rejected.body.writeAction.status, 'rejected');
    const late = await (await memberKey(t)).client.post(`${url}/approve`, {});
    assert.equal(late.status, 409);
    assert.equal(late.body.code, 'action_not_pending');
    assert.equal((await tableRows(t.writer, endpointId)).length, 0);
    assert.deepEqual((await currentSnapshot(t.writer, endpointId)), { id: 'empty', version: '0' });
    const log = await t.writer.get(`/api/v1/data-endpoints/${endpointId}/write-log`);
    assert.deepEqual(log.body.entries.map((e: { kind: string }) => e.kind).reverse(), ['proposed', 'rejected']);
  });

  it('expires an action nobody approves in time', async () => {
    const endpointId = await managedTable(t);
    await putPolicy(t, endpointId, { approval: { required: true, approvers: 1, timeoutSeconds: 5 } });
    const body = action(t, await currentSnapshot(t.writer, endpointId), { operation: 'append', rows: [{ id: 1 }] });
    assert.equal((await t.writer.post(`/api/v1/data-endpoints/${endpointId}/writes`, body)).status, 202);
    const expired = await waitForAction(t.writer, endpointId, body.actionId, (status) => status !== 'pending_approval');
    assert.equal(expired.status, 'expired');
    const late = await (await memberKey(t)).client.post(`/api/v1/data-endpoints/${endpointId}/writes/${body.actionId}/approve`, {});
    assert.equal(late.status, 409);
    assert.equal((await tableRows(t.writer, endpointId)).length, 0);
    const log = await t.writer.get(`/api/v1/data-endpoints/${endpointId}/write-log?kind=expired`);
    assert.equal(log.body.entries.length, 1);
    assert.equal(log.body.entries[0].actorMemberId, null);
  });

  it('fails the second of two approved actions proposed against the same snapshot, writing it not at all', async () => {
    const endpointId = await managedTable(t);
    await putPolicy(t, endpointId, { approval: { required: true, approvers: 1 } });
    const approver = await memberKey(t);
    const snapshot = await currentSnapshot(t.writer, endpointId);
    const bodies = ['Ada', 'Eve'].map((name) => action(t, snapshot, { operation: 'upsert', rows: [{ id: 1, name }] }));
    for (const body of bodies) assert.equal((await t.writer.post(`/api/v1/data-endpoints/${endpointId}/writes`, body)).status, 202);
    const first = await approver.client.post(`/api/v1/data-endpoints/${endpointId}/writes/${bodies[0].actionId}/approve`, {});
    assert.equal(first.body.writeAction.status, 'applied');
    const second = await approver.client.post(`/api/v1/data-endpoints/${endpointId}/writes/${bodies[1].actionId}/approve`, {});
    assert.equal(second.status, 200);
    assert.equal(second.body.writeAction.status, 'failed');
    assert.equal(second.body.writeAction.error.code, 'snapshot_conflict');
    assert.deepEqual((await tableRows(t.writer, endpointId)).map((r) => r.name), ['Ada']);
    // Replaying the failed proposal returns its failure.
    const replay = await t.writer.post(`/api/v1/data-endpoints/${endpointId}/writes`, bodies[1]);
    assert.equal(replay.status, 409);
    assert.equal(replay.body.code, 'snapshot_conflict');
  });

  it('keeps the outcome of one idempotencyKey across a worker restart during the approval wait', async () => {
    const endpointId = await managedTable(t);
    await putPolicy(t, endpointId, { approval: { required: true, approvers: 1 } });
    const approver = await memberKey(t);
    const body = action(t, await currentSnapshot(t.writer, endpointId), { operation: 'upsert', rows: [{ id: 7, name: 'Lin' }] });
    const url = `/api/v1/data-endpoints/${endpointId}/writes`;
    assert.equal((await t.writer.post(url, body)).status, 202);
    await env().stopWorker();
    let approval: Promise<{ status: number; body: any }>;
    try {
      const retried = await t.writer.post(url, body);
      assert.equal(retried.status, 202, 'the retry returns the waiting action, with no worker running');
      assert.equal(retried.headers.get('idempotent-replayed'), 'true');
      // Sent while no worker runs: the update waits in Temporal until one polls again (a workflow
      // task scheduled for it, which the workflow, idle in its wait, had none of).
      approval = approver.client.post(`${url}/${body.actionId}/approve`, {});
      const workflow = env().temporal.workflow.getHandle(retried.body.writeAction.workflowId);
      await until('the approval to wait in Temporal', async () => (await workflow.describe()).raw.pendingWorkflowTask);
    } finally {
      await env().startWorker();
    }
    const approved = await approval;
    assert.equal(approved.status, 200, JSON.stringify(approved.body));
    assert.equal(approved.body.writeAction.status, 'applied');
    const replay = await t.writer.post(url, body);
    assert.equal(replay.status, 200);
    assert.equal(replay.body.writeAction.snapshotAfter.version, '1');
    assert.equal((await tableRows(t.writer, endpointId)).length, 1);
    assert.equal((await t.writer.get(`/api/v1/data-endpoints/${endpointId}/write-log?kind=applied`)).body.entries.length, 1);
  });

  it('counts an approval only while its key is active and its member in the workspace: short of the count, the action stays pending and says why', async () => {
    const lapses: Array<[string, (approver: { key: string; memberId: string }) => Promise<void>]> = [
      ['key_revoked', (approver) => revokeKey(approver.key)],
      ['key_expired', (approver) => expireKey(approver.key)],
      ['member_removed', (approver) => removeMember(env().db, t.ws.workspaceId, approver.memberId)],
    ];
    for (const [reason, lapse] of lapses) {
      const endpointId = await managedTable(t);
      await putPolicy(t, endpointId, { approval: { required: true, approvers: 2 } });
      const [first, second, third] = [await memberKey(t), await memberKey(t), await memberKey(t)];
      const body = action(t, await currentSnapshot(t.writer, endpointId), { operation: 'append', rows: [{ id: 1, name: 'Ada' }] });
      assert.equal((await t.writer.post(`/api/v1/data-endpoints/${endpointId}/writes`, body)).status, 202);
      const url = `/api/v1/data-endpoints/${endpointId}/writes/${body.actionId}`;
      const once = await first.client.post(`${url}/approve`, {});
      assert.equal(once.status, 200, JSON.stringify(once.body));
      assert.equal(once.body.writeAction.approval.counted, 1);
      await lapse(first);

      // The second approval completes the count of decisions, not of approvals that still count.
      const twice = await second.client.post(`${url}/approve`, {});
      assert.equal(twice.status, 200, JSON.stringify(twice.body));
      assert.equal(twice.body.writeAction.status, 'pending_approval', `${reason}: the lapsed approval does not count`);
      assert.equal(twice.body.writeAction.approval.counted, 1);
      assert.deepEqual(twice.body.writeAction.approval.notCounted.map((n: { memberId: string; reason: string }) => [n.memberId, n.reason]), [[first.memberId, reason]]);
      const seen = (await t.writer.get(url)).body.writeAction;
      assert.equal(seen.status, 'pending_approval');
      assert.deepEqual(seen.approval.notCounted, twice.body.writeAction.approval.notCounted, 'the proposer reads why');
      assert.equal((await tableRows(t.writer, endpointId)).length, 0, `${reason}: nothing is written`);

      const thrice = await third.client.post(`${url}/approve`, {});
      assert.equal(thrice.status, 200, JSON.stringify(thrice.body));
      assert.equal(thrice.body.writeAction.status, 'applied', `${reason}: two approvals that count apply it`);
      assert.equal((await tableRows(t.writer, endpointId)).length, 1);
    }
  });

  it('times an action and its approvals by the runtime’s clock: its expiry is set from it, and an approval stops counting once it passes its key’s expiry', async () => {
    const endpointId = await managedTable(t);
    const timeoutSeconds = 3600;
    await putPolicy(t, endpointId, { approval: { required: true, approvers: 2, timeoutSeconds } });
    const keyExpiresAt = Date.now() + 600_000;
    const approver = await memberKey(t, undefined, 'member', { expiresAt: new Date(keyExpiresAt).toISOString() });
    const proposedAt = Date.now();
    env().clock.set(proposedAt);
    const body = action(t, await currentSnapshot(t.writer, endpointId), { operation: 'append', rows: [{ id: 1, name: 'Ada' }] });
    const proposed = await t.writer.post(`/api/v1/data-endpoints/${endpointId}/writes`, body);
    assert.equal(proposed.status, 202, JSON.stringify(proposed.body));
    assert.equal(proposed.body.writeAction.approval.expiresAt, new Date(proposedAt + timeoutSeconds * 1000).toISOString(), 'the approval timeout counts from the clock');
    const url = `/api/v1/data-endpoints/${endpointId}/writes/${body.actionId}`;
    const once = await approver.client.post(`${url}/approve`, {});
    assert.equal(once.status, 200, JSON.stringify(once.body));
    assert.equal(once.body.writeAction.approval.counted, 1);

    // Nothing changes in the database: only the clock moves, up to the approving key's expiry.
    env().clock.set(keyExpiresAt - 1);
    assert.equal((await t.writer.get(url)).body.writeAction.approval.counted, 1, 'a millisecond before its key’s expiry it counts');
    env().clock.advance(1);
    const lapsed = (await t.writer.get(url)).body.writeAction;
    assert.equal(lapsed.status, 'pending_approval');
    assert.equal(lapsed.approval.counted, 0);
    assert.deepEqual(lapsed.approval.notCounted.map((n: { memberId: string; reason: string }) => [n.memberId, n.reason]), [[approver.memberId, 'key_expired']]);
  });

  it('counts the approvals again when it applies: a key revoked as the write applies leaves the action pending for more approvals, writing nothing', async () => {
    const endpointId = await managedTable(t);
    await putPolicy(t, endpointId, { approval: { required: true, approvers: 1 } });
    const [approver, another] = [await memberKey(t), await memberKey(t)];
    const body = action(t, await currentSnapshot(t.writer, endpointId), { operation: 'append', rows: [{ id: 1, name: 'Ada' }] });
    const proposed = await t.writer.post(`/api/v1/data-endpoints/${endpointId}/writes`, body);
    assert.equal(proposed.status, 202, JSON.stringify(proposed.body));
    const url = `/api/v1/data-endpoints/${endpointId}/writes/${body.actionId}`;

    // The approver's key is revoked as the approval completes the count (approveAsKeyIsRevoked).
    const answered = await approveAsKeyIsRevoked(approver, url);
    assert.equal(answered.status, 200, JSON.stringify(answered.body));
    assert.equal(answered.body.writeAction.status, 'pending_approval');
    assert.equal(answered.body.writeAction.approval.counted, 0);
    assert.deepEqual(answered.body.writeAction.approval.notCounted.map((n: { memberId: string; reason: string }) => [n.memberId, n.reason]), [[approver.memberId, 'key_revoked']]);
    assert.equal((await tableRows(t.writer, endpointId)).length, 0, 'nothing is written');
    const log = await t.writer.get(`/api/v1/data-endpoints/${endpointId}/write-log?actionId=${body.actionId}`);
    assert.deepEqual(log.body.entries.map((e: { kind: string }) => e.kind).reverse(), ['proposed', 'approved']);

    // The workflow takes decisions again: another member's approval applies the write, once.
    const applied = await another.client.post(`${url}/approve`, {});
    assert.equal(applied.status, 200, JSON.stringify(applied.body));
    assert.equal(applied.body.writeAction.status, 'applied');
    assert.equal(applied.body.writeAction.approval.counted, 1);
    assert.deepEqual((await tableRows(t.writer, endpointId)).map((r) => r.name), ['Ada']);
    assert.equal(await env().temporal.workflow.getHandle(proposed.body.writeAction.workflowId).result(), 'applied');
  });

  it('shows an action to its proposer and approvers only; lists them with paging', async () => {
    const endpointId = await managedTable(t);
    await putPolicy(t, endpointId, { approval: { required: true, approvers: 1 } });
    const body = action(t, await currentSnapshot(t.writer, endpointId), { operation: 'append', rows: [{ id: 1 }] });
    assert.equal((await t.writer.post(`/api/v1/data-endpoints/${endpointId}/writes`, body)).status, 202);
    const bystander = await memberKey(t, ['data:write', 'data:read']);
    assert.equal((await bystander.client.get(`/api/v1/data-endpoints/${endpointId}/writes/${body.actionId}`)).status, 404);
    const bystanderList = await bystander.client.get(`/api/v1/data-endpoints/${endpointId}/writes`);
    assert.equal(bystanderList.body.writeActions.length, 0);
    const approver = await memberKey(t);
    const list = await approver.client.get(`/api/v1/data-endpoints/${endpointId}/writes?status=pending_approval&limit=1`);
    assert.equal(list.status, 200);
    assert.equal(list.body.writeActions[0].actionId, body.actionId);
    assert.equal(list.body.pagination.total, 1);
    const noLogAccess = await bystander.client.get(`/api/v1/data-endpoints/${endpointId}/write-log`);
    assert.equal(noLogAccess.status, 403);
  });
});
