import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Member, QueryJob, type WriteActionDecision } from '../../../db/models';
import { submitSourceWriteOperation } from '../../../services/endpoints/write-operations';
import { runQueryJobAsItsKey } from '../../../services/ontology/query-jobs';
import { execute } from '../../../services/operations/invoke';
import { approvalStanding } from '../../../services/endpoints/approval-standing';
import { actAs } from '../../../services/operations/act-as';
import { workerDependencies } from '../../../services/operations/context';
import { listRunsOperation } from '../../../services/pipelines/run-operations';
import { callerIdOf, hasScope } from '../../../services/tenancy/access';
import { actorOf, isOwnWork, principalOfActor } from '../../../services/tenancy/actors';
import { principalOfKey } from '../../../services/tenancy/api-keys';
import { principalOfMember } from '../../../services/tenancy/member-access';
import { addMember, removeMember } from '../../../services/tenancy/workspaces';
import { env } from '../../support/environment';
import { keyIdOf, newKey, newWorkspace, revokeKey } from '../../support/fixtures';
import { activeQueryJob, ontologyTenant } from '../../support/ontology';
import { action, currentSnapshot, managedTable, memberKey, putPolicy, tableRows, writeTenant, type WriteTenant } from '../../support/source-writes';

// The actor of work that runs later, rebuilt from its id when the work runs (principalOfActor): a
// key as it stands then, or a member with the role and grants they hold then; a removed member is
// refused as a revoked key is.

describe('Actors of later work, rebuilt from their ids', function () {
  this.timeout(60_000);

  const refusalOf = async (work: Promise<unknown>): Promise<string> => {
    try {
      await work;
      return 'admitted';
    } catch (error) {
      return (error as { code?: string }).code ?? `unexpected ${(error as Error).message}`;
    }
  };

  it('rebuilds a member with their role and grants as they are when the work runs, and refuses a removed member', async () => {
    const { db } = env();
    const ws = await newWorkspace();
    const member = await addMember(db, ws.workspaceId, { name: `m-${randomUUID().slice(0, 6)}`, role: 'member' });
    const actor = { memberId: member.id, apiKeyId: null };

    const asMember = await principalOfActor(env(), db, ws.workspaceId, actor);
    assert.deepEqual(asMember, principalOfMember(member), 'the principal the console gave the member');
    assert.equal(hasScope(asMember, 'policy:approve'), false);
    assert.deepEqual(actorOf(asMember), actor, 'a member records no key');
    assert.equal(isOwnWork(asMember, actor), true);
    assert.equal(isOwnWork(asMember, { memberId: member.id, apiKeyId: randomUUID() }), false, 'work of a key the member made is the key’s');
    // What binds a cursor or a derived idempotency key to its caller: the member's own, not the empty key every member has.
    const another = await principalOfActor(env(), db, ws.workspaceId, { memberId: (await addMember(db, ws.workspaceId, { name: 'other', role: 'member' })).id, apiKeyId: null });
    assert.equal(callerIdOf(asMember), `member:${member.id}`);
    assert.notEqual(callerIdOf(asMember), callerIdOf(another));

    // Listing runs is an administrator's: refused as a member, admitted once promoted, as the member is then.
    const deps = workerDependencies(env());
    const listing = () => actAs(deps, { workspaceId: ws.workspaceId, ...actor }, 'test:member-actor', listRunsOperation, { params: {}, query: { limit: 25, offset: 0 }, body: undefined });
    assert.equal(await refusalOf(listing()), 'actor_not_administrator');
    await db('members').where({ id: member.id }).update({ role: 'admin', readPermissions: ['pii'], writePermissions: ['ledger'] });
    const promoted = await principalOfActor(env(), db, ws.workspaceId, actor);
    assert.equal(promoted.memberRole, 'admin');
    assert.equal(hasScope(promoted, 'policy:approve'), true);
    assert.deepEqual([promoted.readPermissions, promoted.writePermissions], [['pii'], ['ledger']]);
    assert.equal(await refusalOf(listing()), 'admitted');

    await removeMember(db, ws.workspaceId, member.id);
    assert.equal(await refusalOf(principalOfActor(env(), db, ws.workspaceId, actor)), 'member_removed');
    assert.equal(await refusalOf(listing()), 'member_removed');
    // A member of another workspace is not this workspace's actor.
    const other = await newWorkspace();
    assert.equal(await refusalOf(principalOfActor(env(), db, other.workspaceId, { memberId: ws.memberId, apiKeyId: null })), 'member_removed');
  });

  it('rebuilds a key as principalOfKey does, its member only recorded, and refuses it once revoked', async () => {
    const { db } = env();
    const ws = await newWorkspace();
    const key = await newKey(ws, { scopes: ['runs:read'] });
    const apiKeyId = await keyIdOf(key);
    const actor = { memberId: ws.memberId, apiKeyId };
    const rebuilt = await principalOfActor(env(), db, ws.workspaceId, actor);
    assert.deepEqual(rebuilt, await principalOfKey(env(), db, ws.workspaceId, apiKeyId));
    assert.deepEqual(actorOf(rebuilt), actor);
    assert.equal(callerIdOf(rebuilt), apiKeyId, 'a key is bound by its id, as before');
    assert.equal(isOwnWork(rebuilt, { memberId: ws.memberId, apiKeyId: null }), false, 'the member’s console work is not the key’s');
    await revokeKey(key);
    assert.equal(await refusalOf(principalOfActor(env(), db, ws.workspaceId, actor)), 'credential_revoked');
  });

  it('refuses a key to the work it started once the runtime’s clock passes its expiry, its row unchanged', async () => {
    const { db } = env();
    const ws = await newWorkspace();
    const expiresAt = Date.now() + 600_000;
    const key = await newKey(ws, { scopes: ['runs:read'], expiresAt: new Date(expiresAt).toISOString() });
    const actor = { memberId: ws.memberId, apiKeyId: await keyIdOf(key) };
    env().clock.set(expiresAt - 1);
    assert.equal(await refusalOf(principalOfActor(env(), db, ws.workspaceId, actor)), 'admitted');
    env().clock.advance(1);
    assert.equal(await refusalOf(principalOfActor(env(), db, ws.workspaceId, actor)), 'credential_expired');
  });

  it('counts a member’s approval, given without a key, while their role holds policy:approve and they are in the workspace', async () => {
    const { db } = env();
    const ws = await newWorkspace();
    const admin = await addMember(db, ws.workspaceId, { name: `a-${randomUUID().slice(0, 6)}`, role: 'admin' });
    const writeActionId = randomUUID();
    const decision = { writeActionId, memberId: admin.id, apiKeyId: null, decision: 'approve', comment: null, createdAt: new Date() } as WriteActionDecision;
    const standing = async () => (await approvalStanding(env(), db, [decision])).get(writeActionId)!;
    assert.deepEqual(await standing(), { counted: 1, notCounted: [] });
    await db('members').where({ id: admin.id }).update({ role: 'member' });
    assert.deepEqual((await standing()).notCounted.map((n) => n.reason), ['member_lacks_policy_approve']);
    await db('members').where({ id: admin.id }).update({ role: 'admin' });
    await removeMember(db, ws.workspaceId, admin.id);
    assert.deepEqual((await standing()).notCounted.map((n) => n.reason), ['member_removed']);
  });
});

describe('Work a member started, refused once the member is removed, as a revoked key’s', function () {
  this.timeout(120_000);

  it('fails an async query job whose member was removed before it ran, with the reason recorded', async () => {
    const { db } = env();
    const t = await ontologyTenant();
    const member = await addMember(db, t.ws.workspaceId, { name: `m-${randomUUID().slice(0, 6)}`, role: 'member' });
    const job = await activeQueryJob(t, { memberId: member.id });
    await removeMember(db, t.ws.workspaceId, member.id);
    const outcome = await runQueryJobAsItsKey(workerDependencies(env()), job.id);
    assert.equal(outcome.status, 'failed');
    const stored = (await QueryJob.query(db).findById(job.id))!;
    assert.equal((stored.error as { code: string }).code, 'member_removed');
  });

  /** A governed write an admin proposes in the console (as the console door invokes it: the member's principal, no key). */
  async function proposeAsMember(t: WriteTenant, endpointId: string, memberId: string, rows: Array<Record<string, unknown>>) {
    const member = (await Member.query(env().db).findById(memberId))!;
    const deps = env().dependencies();
    const body = action(t, await currentSnapshot(t.writer, endpointId), { operation: 'upsert', rows });
    const { output } = await execute({ deps, principal: principalOfMember(member), door: 'console', requestId: `test:${randomUUID()}` }, submitSourceWriteOperation, { params: { endpoint_id: endpointId }, query: {}, body } as never);
    return { body, output: output as { status?: number; body: { writeAction: { status: string; proposedByMemberId: string } } } };
  }

  it('applies a write a member proposed, as that member, once approved; refuses it when the member was removed before the approval', async () => {
    const { db } = env();
    const t = await writeTenant();
    const endpointId = await managedTable(t);
    await putPolicy(t, endpointId, { approval: { required: true, approvers: 1 } });
    const approver = await memberKey(t);
    const proposer = await addMember(db, t.ws.workspaceId, { name: `p-${randomUUID().slice(0, 6)}`, role: 'admin' });

    const kept = await proposeAsMember(t, endpointId, proposer.id, [{ id: 1, name: 'Ada' }]);
    assert.equal(kept.output.status, 202, JSON.stringify(kept.output));
    assert.equal(kept.output.body.writeAction.proposedByMemberId, proposer.id);
    assert.equal((await db('writeActions').where({ actionId: kept.body.actionId }).first()).proposedByApiKeyId, null, 'proposed without a key');
    const approved = await approver.client.post(`/api/v1/data-endpoints/${endpointId}/writes/${kept.body.actionId}/approve`, {});
    assert.equal(approved.status, 200, JSON.stringify(approved.body));
    assert.equal(approved.body.writeAction.status, 'applied', JSON.stringify(approved.body));
    assert.deepEqual((await tableRows(t.writer, endpointId)).map((row) => row.id), [1]);

    const refused = await proposeAsMember(t, endpointId, proposer.id, [{ id: 2, name: 'Mallory' }]);
    assert.equal(refused.output.status, 202);
    await removeMember(db, t.ws.workspaceId, proposer.id);
    const late = await approver.client.post(`/api/v1/data-endpoints/${endpointId}/writes/${refused.body.actionId}/approve`, {});
    assert.equal(late.status, 200, JSON.stringify(late.body));
    assert.equal(late.body.writeAction.status, 'failed');
    assert.equal(late.body.writeAction.error.code, 'member_removed');
    assert.deepEqual((await tableRows(t.writer, endpointId)).map((row) => row.id), [1], 'the refused write wrote nothing');
  });
});
