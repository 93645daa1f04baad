import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import type { WriteActionDecision } from '../../db/models';
import { approvalStanding } from '../../services/endpoints/approval-standing';
import { actAs } from '../../services/operations/act-as';
import { workerDependencies } from '../../services/operations/context';
import { listRunsOperation } from '../../services/pipelines/run-operations';
import { hasScope } from '../../services/tenancy/access';
import { actorOf, isOwnWork, principalOfActor } from '../../services/tenancy/actors';
import { principalOfKey } from '../../services/tenancy/api-keys';
import { principalOfMember } from '../../services/tenancy/member-access';
import { addMember, removeMember } from '../../services/tenancy/workspaces';
import { env } from '../support/environment';
import { keyIdOf, newKey, newWorkspace, revokeKey } from '../support/fixtures';

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

    const asMember = await principalOfActor(db, ws.workspaceId, actor);
    assert.deepEqual(asMember, principalOfMember(member), 'the principal the console gave the member');
    assert.equal(hasScope(asMember, 'policy:approve'), false);
    assert.deepEqual(actorOf(asMember), actor, 'a member records no key');
    assert.equal(isOwnWork(asMember, actor), true);
    assert.equal(isOwnWork(asMember, { memberId: member.id, apiKeyId: randomUUID() }), false, 'work of a key the member made is the key’s');

    // Listing runs is an administrator's: refused as a member, admitted once promoted, as the member is then.
    const deps = workerDependencies(env());
    const listing = () => actAs(deps, { workspaceId: ws.workspaceId, ...actor }, 'test:member-actor', listRunsOperation, { params: {}, query: { limit: 25, offset: 0 }, body: undefined });
    assert.equal(await refusalOf(listing()), 'actor_not_administrator');
    await db('members').where({ id: member.id }).update({ role: 'admin', readPermissions: ['pii'], writePermissions: ['ledger'] });
    const promoted = await principalOfActor(db, ws.workspaceId, actor);
    assert.equal(promoted.memberRole, 'admin');
    assert.equal(hasScope(promoted, 'policy:approve'), true);
    assert.deepEqual([promoted.readPermissions, promoted.writePermissions], [['pii'], ['ledger']]);
    assert.equal(await refusalOf(listing()), 'admitted');

    await removeMember(db, ws.workspaceId, member.id);
    assert.equal(await refusalOf(principalOfActor(db, ws.workspaceId, actor)), 'member_removed');
    assert.equal(await refusalOf(listing()), 'member_removed');
    // A member of another workspace is not this workspace's actor.
    const other = await newWorkspace();
    assert.equal(await refusalOf(principalOfActor(db, other.workspaceId, { memberId: ws.memberId, apiKeyId: null })), 'member_removed');
  });

  it('rebuilds a key as principalOfKey does, its member only recorded, and refuses it once revoked', async () => {
    const { db } = env();
    const ws = await newWorkspace();
    const key = await newKey(ws, { scopes: ['runs:read'] });
    const apiKeyId = await keyIdOf(key);
    const actor = { memberId: ws.memberId, apiKeyId };
    const rebuilt = await principalOfActor(db, ws.workspaceId, actor);
    assert.deepEqual(rebuilt, await principalOfKey(db, ws.workspaceId, apiKeyId));
    assert.deepEqual(actorOf(rebuilt), actor);
    assert.equal(isOwnWork(rebuilt, { memberId: ws.memberId, apiKeyId: null }), false, 'the member’s console work is not the key’s');
    await revokeKey(key);
    assert.equal(await refusalOf(principalOfActor(db, ws.workspaceId, actor)), 'credential_revoked');
  });

  it('counts a member’s approval, given without a key, while their role holds policy:approve and they are in the workspace', async () => {
    const { db } = env();
    const ws = await newWorkspace();
    const admin = await addMember(db, ws.workspaceId, { name: `a-${randomUUID().slice(0, 6)}`, role: 'admin' });
    const writeActionId = randomUUID();
    const decision = { writeActionId, memberId: admin.id, apiKeyId: null, decision: 'approve', comment: null, createdAt: new Date() } as WriteActionDecision;
    const standing = async () => (await approvalStanding(db, [decision])).get(writeActionId)!;
    assert.deepEqual(await standing(), { counted: 1, notCounted: [] });
    await db('members').where({ id: admin.id }).update({ role: 'member' });
    assert.deepEqual((await standing()).notCounted.map((n) => n.reason), ['member_lacks_policy_approve']);
    await db('members').where({ id: admin.id }).update({ role: 'admin' });
    await removeMember(db, ws.workspaceId, admin.id);
    assert.deepEqual((await standing()).notCounted.map((n) => n.reason), ['member_removed']);
  });
});
