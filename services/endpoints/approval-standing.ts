import type { Executor } from '../../db/connection';
import type { ServiceDependencies } from '../operations/context';
import { ApiKey, Member, WriteActionDecision } from '../../db/models';
import { hasScope, principalFrom } from '../tenancy/access';
import { principalOfMember } from '../tenancy/member-access';

// Which approvals of a governed write count now. An approval counts while the key that gave it is
// active (not revoked, not expired) and holds policy:approve, and its member is still in the
// workspace; an approval a member gave in the console, without a key, while the member is still in
// the workspace and their role holds policy:approve: approvals are counted again at every decision and when the write is applied, so an
// approval whose key or member lapsed since it was given no longer completes an action.

/** Why an approval no longer counts. */
export type ApprovalLapse = 'key_revoked' | 'key_expired' | 'key_lacks_policy_approve' | 'member_removed' | 'member_lacks_policy_approve';

export const APPROVAL_LAPSES: readonly ApprovalLapse[] = ['key_revoked', 'key_expired', 'key_lacks_policy_approve', 'member_removed', 'member_lacks_policy_approve'];

export interface ApprovalStanding {
  /** Approvals that count now. */
  counted: number;
  /** Approvals given that no longer count, and why. */
  notCounted: Array<{ memberId: string; reason: ApprovalLapse; decidedAt: string }>;
}

/**
 * The standing of the approvals among `decisions` (of one or several actions), by action id, now
 * on the runtime's clock (a key past its expiresAt no longer counts). `lock` takes the approving
 * keys and members FOR SHARE, in the caller's transaction: a revocation, an expiry change or a
 * member's removal then commits before the count (and is seen) or after the caller's transaction
 * (the write applied with approvals that counted), never in between.
 */
export async function approvalStanding({ clock }: Pick<ServiceDependencies, 'clock'>, db: Executor, decisions: readonly WriteActionDecision[], { lock = false }: { lock?: boolean } = {}): Promise<Map<string, ApprovalStanding>> {
  const approvals = decisions.filter((d) => d.decision === 'approve');
  const standing = new Map<string, ApprovalStanding>();
  if (!approvals.length) return standing;
  const keyIds = [...new Set(approvals.flatMap((d) => (d.apiKeyId === null ? [] : [d.apiKeyId])))];
  const memberIds = [...new Set(approvals.map((d) => d.memberId))];
  const keysQuery = ApiKey.query(db).findByIds(keyIds).orderBy('id');
  const keys = await (lock ? keysQuery.forShare() : keysQuery);
  const membersQuery = Member.query(db).findByIds(memberIds).orderBy('id');
  const members = await (lock ? membersQuery.forShare() : membersQuery);
  const keyById = new Map(keys.map((key) => [key.id, key]));
  const memberById = new Map(members.map((member) => [member.id, member]));
  const now = clock.now();
  for (const decision of approvals) {
    const member = memberById.get(decision.memberId);
    const reason = decision.apiKeyId === null ? memberLapseOf(member) : lapseOf(keyById.get(decision.apiKeyId), member, now);
    const entry = standing.get(decision.writeActionId) ?? { counted: 0, notCounted: [] };
    if (reason) entry.notCounted.push({ memberId: decision.memberId, reason, decidedAt: decision.createdAt.toISOString() });
    else entry.counted += 1;
    standing.set(decision.writeActionId, entry);
  }
  return standing;
}

/** The standing of one action's approvals (approvalStanding for its decisions). */
export async function approvalStandingOf(deps: Pick<ServiceDependencies, 'clock'>, db: Executor, writeActionId: string, options: { lock?: boolean } = {}): Promise<ApprovalStanding> {
  const decisions = await WriteActionDecision.query(db).where({ writeActionId, decision: 'approve' }).orderBy('createdAt');
  return standingIn(await approvalStanding(deps, db, decisions, options), writeActionId);
}

export const standingIn = (standing: Map<string, ApprovalStanding>, writeActionId: string): ApprovalStanding => standing.get(writeActionId) ?? { counted: 0, notCounted: [] };

function lapseOf(key: ApiKey | undefined, member: Member | undefined, now: number): ApprovalLapse | null {
  if (!key || key.revokedAt) return 'key_revoked';
  if (key.expiresAt && new Date(key.expiresAt).getTime() <= now) return 'key_expired';
  if (!member || member.removedAt || member.workspaceId !== key.workspaceId) return 'member_removed';
  const principal = principalFrom({
    workspaceId: key.workspaceId,
    apiKeyId: key.id,
    memberId: key.createdByMemberId,
    memberActive: true,
    memberRole: member.role,
    scopes: key.scopes,
    projectIds: key.projectIds,
    workspaceResources: key.workspaceResources,
    readPermissions: key.readPermissions,
    writePermissions: key.writePermissions,
  });
  return hasScope(principal, 'policy:approve') ? null : 'key_lacks_policy_approve';
}

/** An approval a member gave in the console: their standing and their role's scopes now, as principalOfActor rebuilds them. */
function memberLapseOf(member: Member | undefined): ApprovalLapse | null {
  if (!member || member.removedAt) return 'member_removed';
  return hasScope(principalOfMember(member), 'policy:approve') ? null : 'member_lacks_policy_approve';
}
