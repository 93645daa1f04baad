import { PermissionError } from '../../core/errors';
import { isScope, type Scope } from '../../core/scopes';

/** Scopes an operation needs, stated explicitly: any one of them, or all of them. */
export type ScopeRule = { anyOf: readonly Scope[] } | { allOf: readonly Scope[] };

/** The scopes of a rule, for messages and the generated access matrix. */
export const scopesOf = (rule: ScopeRule): readonly Scope[] => ('anyOf' in rule ? rule.anyOf : rule.allOf);

/**
 * What a key must hold to call an operation (SPEC 5.2 layers). Declared once, on the operation;
 * invoke() enforces it for every door.
 */
export interface Requirement {
  scopes: ScopeRule;
  /** The input names a project (`projectId`): it must be in the workspace and in the key's allowlist. */
  project?: boolean;
  /** Only keys without a project restriction (key creation, limits, billing). */
  unrestrictedKey?: boolean;
  /** Shared workspace resources (endpoints, plugins): a restricted key needs workspaceResources. */
  workspaceResources?: boolean;
  /** accountable: the key's creating member must still be in the workspace; administrator: as owner or admin. */
  actor?: 'accountable' | 'administrator';
  /**
   * The named grants of the data the operation touches: `read`, the endpoints' named read grants
   * (the union over their read bindings); `write`, the write grants their write policies require.
   * They depend on which endpoint, so the data guard and the write policy check them with the
   * endpoint in hand, and refuse to check for an operation that did not declare them (data-guard.ts).
   */
  grants?: NamedGrants;
}

export type NamedGrants = 'read' | 'write' | 'read and write';

/** Does a declaration of named grants cover this kind? */
export const declaresGrants = (declared: NamedGrants | undefined, kind: 'read' | 'write'): boolean => declared === 'read and write' || declared === kind;

/** Who is calling: an authenticated API key and what it was granted (SPEC 5.2 layers), or a member signed in to the console. */
export interface Principal {
  workspaceId: string;
  /** The key; empty for a member signed in to the console (`signedIn`), who has none: work they start records no key (actorOf, actors.ts). */
  apiKeyId: string;
  /** A member signed in to the console, with what their role grants (member-access.ts), not a key. */
  signedIn?: true;
  /** The member that created the key: the accountable actor for its mutations and run access. */
  memberId: string;
  memberActive: boolean;
  /** The accountable member's role (owner and admin are administrators). */
  memberRole?: 'owner' | 'admin' | 'member';
  scopes: ReadonlySet<Scope>;
  /** Empty: every project, present and future. Otherwise an allowlist. */
  projectIds: readonly string[];
  workspaceResources: boolean;
  readPermissions: readonly string[];
  /** Named write grants that write policies require. */
  writePermissions: readonly string[];
}

/**
 * The caller a principal is, as one id: its key, or the signed-in member, who has none (apiKeyId
 * is empty for every member, so it cannot tell two members apart).
 */
export const callerIdOf = (principal: Pick<Principal, 'apiKeyId' | 'memberId' | 'signedIn'>): string => (principal.signedIn ? `member:${principal.memberId}` : principal.apiKeyId);

/** A key's stored fields as a principal: only scopes Weft knows, no role or write grants when none are stored. */
export function principalFrom(key: Omit<Principal, 'scopes' | 'memberRole' | 'writePermissions' | 'memberActive'> & {
  scopes: readonly string[];
  memberActive: boolean | null;
  memberRole: Principal['memberRole'] | null;
  writePermissions: readonly string[] | null;
}): Principal {
  return {
    workspaceId: key.workspaceId,
    apiKeyId: key.apiKeyId,
    memberId: key.memberId,
    memberActive: key.memberActive === true,
    memberRole: key.memberRole ?? undefined,
    scopes: new Set(key.scopes.filter(isScope)),
    projectIds: key.projectIds,
    workspaceResources: key.workspaceResources,
    readPermissions: key.readPermissions,
    writePermissions: key.writePermissions ?? [],
  };
}

export const isUnrestricted = (principal: Principal): boolean => principal.projectIds.length === 0;

export function hasScope(principal: Principal, scope: Scope): boolean {
  if (principal.scopes.has(scope)) return true;
  // org:manage is administrative and stands in for operation scopes, but only on unrestricted keys.
  return scope !== 'org:manage' && principal.scopes.has('org:manage') && isUnrestricted(principal);
}

/**
 * Checks the workspace-level layers of an operation's requirement; the project is checked by
 * invoke() with the project in hand, named grants by the data guard with the endpoint in hand.
 */
export function authorize(principal: Principal, requirement: Requirement): void {
  const scopes = scopesOf(requirement.scopes);
  const granted = 'allOf' in requirement.scopes ? scopes.every((scope) => hasScope(principal, scope)) : scopes.some((scope) => hasScope(principal, scope));
  if (!granted) {
    const missing = scopes.filter((scope) => !hasScope(principal, scope));
    const needed = 'allOf' in requirement.scopes ? missing.join(' and ') : scopes.join(' or ');
    throw new PermissionError('insufficient_scope', `This API key lacks the scope this operation needs: ${needed}.`, {
      requiredScopes: 'allOf' in requirement.scopes ? missing : scopes,
    });
  }
  if (requirement.unrestrictedKey && !isUnrestricted(principal)) {
    throw new PermissionError('restricted_key', 'Only an API key without a project restriction may do this.');
  }
  if (requirement.workspaceResources && !isUnrestricted(principal) && !principal.workspaceResources) {
    throw new PermissionError('workspace_resources_denied', 'This project-restricted API key has no access to shared workspace resources (workspaceResources is false).');
  }
  if (requirement.actor === 'accountable' && !principal.memberActive) {
    throw new PermissionError('actor_not_accountable', 'The member who created this API key is no longer in the workspace, so the key cannot make changes or read runs.');
  }
  if (requirement.actor === 'administrator') {
    if (!principal.memberActive) throw new PermissionError('actor_not_accountable', 'The member who created this API key is no longer in the workspace, so the key cannot make changes or read runs.');
    if (principal.memberRole !== 'owner' && principal.memberRole !== 'admin') {
      throw new PermissionError('actor_not_administrator', 'Listing runs needs an API key created by a workspace owner or admin.');
    }
  }
}

/**
 * Project allowlist layer. The caller has already confirmed the project exists in the principal's workspace.
 * `named: false` when the project was not named by the request but found through a resource (a run,
 * a write action, a pipeline): the refusal then does not tell the key which project that is.
 */
export function authorizeProject(principal: Principal, projectId: string, { named = true }: { named?: boolean } = {}): void {
  if (!isUnrestricted(principal) && !principal.projectIds.includes(projectId)) {
    throw new PermissionError('project_denied', named ? 'This API key is not allowed to access this project.' : 'This API key is not allowed to access the project this belongs to.', named ? { projectId } : {});
  }
}

/** Named read grants that a binding requires: queries:execute alone does not satisfy them. */
export function missingReadPermissions(principal: Principal, required: readonly string[]): string[] {
  return required.filter((permission) => !principal.readPermissions.includes(permission));
}

/**
 * The requirement of work that must pass two operations' access at once (an approved SPARQL update
 * is applied with the update's access and the governed write's): every scope of both, every layer
 * either states. Only rules without alternatives combine into one all-of rule.
 */
export function bothRequirements(first: Requirement, second: Requirement): Requirement {
  const definite = (rule: ScopeRule): readonly Scope[] => {
    if ('anyOf' in rule && rule.anyOf.length > 1) throw new Error(`Cannot combine the alternatives ${rule.anyOf.join(', ')} into one all-of rule.`);
    return scopesOf(rule);
  };
  const grants = [first.grants, second.grants].flatMap((declared) => (declared === 'read and write' ? ['read', 'write'] : declared ? [declared] : []));
  const actor = first.actor === 'administrator' || second.actor === 'administrator' ? 'administrator' : first.actor ?? second.actor;
  return {
    scopes: { allOf: [...new Set([...definite(first.scopes), ...definite(second.scopes)])] },
    ...(first.project || second.project ? { project: true } : {}),
    ...(first.unrestrictedKey || second.unrestrictedKey ? { unrestrictedKey: true } : {}),
    ...(first.workspaceResources || second.workspaceResources ? { workspaceResources: true } : {}),
    ...(actor ? { actor } : {}),
    ...(grants.length ? { grants: grants.includes('read') && grants.includes('write') ? 'read and write' : (grants[0] as NamedGrants) } : {}),
  };
}
