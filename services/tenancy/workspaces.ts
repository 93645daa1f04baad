import { InputError } from '../../core/errors';
import type { Executor } from '../../db/connection';
import type { ServiceDependencies } from '../operations/context';
import { Member, Project, Workspace } from '../../db/models';
import { createApiKey } from './api-keys';

export interface BootstrapResult {
  workspaceId: string;
  projectId: string;
  memberId: string;
  apiKey: string;
}

/**
 * Operator action: a new workspace with an owner, a default project and an unrestricted
 * org:manage key. Run it in a transaction so a failure leaves nothing half-created.
 */
export async function bootstrapWorkspace(deps: Pick<ServiceDependencies, 'clock'>, db: Executor, input: { workspaceName: string; ownerName?: string; projectName?: string }): Promise<BootstrapResult> {
  const name = input.workspaceName.trim();
  if (!name || name.length > 200) throw new InputError('invalid_workspace_name', 'The workspace name must be 1 to 200 characters.');
  const workspace = await Workspace.query(db).insertAndFetch({ name });
  const member = await Member.query(db).insertAndFetch({ workspaceId: workspace.id, name: input.ownerName ?? 'owner', role: 'owner' });
  const project = await Project.query(db).insertAndFetch({ workspaceId: workspace.id, name: input.projectName ?? 'default', description: 'Created with the workspace.' });
  const { secret } = await createApiKey(deps, db, { workspaceId: workspace.id, memberId: member.id }, { name: 'bootstrap', scopes: ['org:manage', 'org:read'] });
  return { workspaceId: workspace.id, projectId: project.id, memberId: member.id, apiKey: secret };
}

/** Adds a member (operator action); the member can then be the accountable actor of keys. */
export async function addMember(db: Executor, workspaceId: string, input: { name: string; role: Member['role'] }): Promise<Member> {
  return Member.query(db).insertAndFetch({ workspaceId, name: input.name, role: input.role });
}

// Removing a member ends their console sessions and keeps the last owner (members.ts).
export { removeMember } from './members';
