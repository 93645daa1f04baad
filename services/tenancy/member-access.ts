import { SCOPES, type Scope } from '../../core/scopes';
import type { Member } from '../../db/models';
import type { Principal } from './access';

// What a signed-in member may do in the console: derived here and nowhere else. The console's
// routes invoke operations with the principal made here, so every operation's declared access
// decides, as for a key; a refusal is the same refusal, with the same code, as over HTTP.

/** The scopes every member holds on every project: the read scopes, running pipelines and queries, SPARQL queries. */
export const MEMBER_SCOPES: readonly Scope[] = [
  ...SCOPES.filter((scope) => scope.endsWith(':read')),
  'pipelines:execute',
  'queries:execute',
  'sparql:query',
];

/** Owners and admins hold every scope on every project, as an unrestricted org:manage key does. */
export const ADMINISTRATOR_SCOPES: readonly Scope[] = SCOPES;

export const scopesOfRole = (role: Member['role']): readonly Scope[] => (role === 'member' ? MEMBER_SCOPES : ADMINISTRATOR_SCOPES);

/**
 * The principal of a signed-in member: the role's scopes on every project and the shared
 * resources, and only the named grants the member was given (a role implies none). There is no
 * key: apiKeyId is empty and `signedIn` is set, so work the member starts records the member as
 * its actor (actorOf, actors.ts) and is rebuilt from their id when it runs (principalOfActor).
 */
export function principalOfMember(member: Pick<Member, 'id' | 'workspaceId' | 'role' | 'readPermissions' | 'writePermissions'>): Principal {
  return {
    workspaceId: member.workspaceId,
    apiKeyId: '',
    signedIn: true,
    memberId: member.id,
    memberActive: true,
    memberRole: member.role,
    scopes: new Set(scopesOfRole(member.role)),
    projectIds: [],
    workspaceResources: true,
    readPermissions: member.readPermissions ?? [],
    writePermissions: member.writePermissions ?? [],
  };
}

/**
 * Whether the console shows a member links into the Temporal Web UI: owners and admins only, since
 * that UI is operator-facing and shows every workspace's workflows.
 */
export const seesTemporalUi = (principal: Pick<Principal, 'memberRole'>): boolean => principal.memberRole === 'owner' || principal.memberRole === 'admin';
