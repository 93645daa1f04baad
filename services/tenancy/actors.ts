import { AuthenticationError } from '../../core/errors';
import type { Executor } from '../../db/connection';
import { Member } from '../../db/models';
import type { ServiceDependencies } from '../operations/context';
import type { Principal } from './access';
import { principalOfKey } from './api-keys';
import { principalOfMember } from './member-access';

// Who started work that runs later (a run, an async query job, a governed write, an approval): a
// key, or a member signed in to the console, who has none. The work records its actor, and acts
// later as that actor rebuilt from its id, as it stands then.

/** The recorded actor of work: its member, and its key, or null for a member signed in to the console. */
export interface Actor {
  memberId: string;
  apiKeyId: string | null;
}

/** The actor a principal records for work it starts. */
export const actorOf = (principal: Principal): Actor => ({ memberId: principal.memberId, apiKeyId: principal.signedIn ? null : principal.apiKeyId });

/**
 * The principal of a recorded actor as it stands now: a key's (refused when revoked, expired or
 * unknown since; its member's standing and its current restrictions apply), or a member's (their
 * role and grants now; refused like a revoked key when they were removed from the workspace).
 */
export async function principalOfActor(deps: Pick<ServiceDependencies, 'clock'>, db: Executor, workspaceId: string, actor: Actor): Promise<Principal> {
  if (actor.apiKeyId !== null) return principalOfKey(deps, db, workspaceId, actor.apiKeyId);
  const member = await Member.query(db).findOne({ id: actor.memberId, workspaceId });
  if (!member || member.removedAt) throw new AuthenticationError('member_removed', 'The member who started this work has been removed from the workspace since, so the work does not go on.');
  return principalOfMember(member);
}

/** The columns (memberId, apiKeyId) that make recorded work this principal's own: its key's, or a signed-in member's made without a key. */
export const ownWorkColumns = (principal: Principal): Partial<Actor> => (principal.signedIn ? { memberId: principal.memberId, apiKeyId: null } : { apiKeyId: principal.apiKeyId });

/** Is work recorded with this actor the principal's own (ownWorkColumns)? */
export const isOwnWork = (principal: Principal, work: Actor): boolean => (principal.signedIn ? work.apiKeyId === null && work.memberId === principal.memberId : work.apiKeyId === principal.apiKeyId);
