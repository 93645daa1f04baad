import { PermissionError } from '../../core/errors';
import type { Scope } from '../../core/scopes';

/** Who is calling: an authenticated API key and what it was granted (SPEC 5.2 layers). */
export interface Principal {
  workspaceId: string;
  apiKeyId: string;
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

/** What an operation needs beyond being authenticated. Routes and MCP tools declare one each. */
export interface AccessRequirement {
  /** Any one of these scopes suffices. */
  scopes: readonly Scope[];
  /** Only unrestricted keys (no project allowlist) may call, e.g. key creation. */
  unrestrictedKey?: boolean;
  /** Shared workspace resources (data endpoints, plugins): restricted keys need workspaceResources. */
  workspaceResources?: boolean;
  /** The key's creating member must still belong to the workspace. */
  accountableActor?: boolean;
  /** The key's creating member must still belong to the workspace as an owner or admin (run listings). */
  administratorActor?: boolean;
}

export const isUnrestricted = (principal: Principal): boolean => principal.projectIds.length === 0;

export function hasScope(principal: Principal, scope: Scope): boolean {
  if (principal.scopes.has(scope)) return true;
  // org:manage is administrative and stands in for operation scopes, but only on unrestricted keys.
  return scope !== 'org:manage' && principal.scopes.has('org:manage') && isUnrestricted(principal);
}

/** Checks the workspace-level layers of a requirement; project access is checked per project. */
export function authorize(principal: Principal, requirement: AccessRequirement): void {
  if (!requirement.scopes.some((scope) => hasScope(principal, scope))) {
    throw new PermissionError('insufficient_scope', `This API key lacks the scope this operation needs: ${requirement.scopes.join(' or ')}.`, {
      requiredScopes: requirement.scopes,
    });
  }
  if (requirement.unrestrictedKey && !isUnrestricted(principal)) {
    throw new PermissionError('restricted_key', 'Only an API key without a project restriction may do this.');
  }
  if (requirement.workspaceResources && !isUnrestricted(principal) && !principal.workspaceResources) {
    throw new PermissionError('workspace_resources_denied', 'This project-restricted API key has no access to shared workspace resources (workspaceResources is false).');
  }
  if (requirement.accountableActor && !principal.memberActive) {
    throw new PermissionError('actor_not_accountable', 'The member who created this API key is no longer in the workspace, so the key cannot make changes or read runs.');
  }
  if (requirement.administratorActor) {
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
