import { NotFoundError } from '../core/errors';
import type { Executor } from '../db/connection';
import { Member, Project, Workspace } from '../db/models';
import { isUnrestricted, Principal } from './access';

export interface OrganizationView {
  id: string;
  name: string;
  plan: string;
  createdAt: string;
  projectCount: number;
  memberCount: number;
  settings: WorkspaceSettings;
}

export interface WorkspaceSettings {
  /** Whether the SPARQL endpoint answers: off (default), read (queries), write (queries and governed updates). */
  semanticConsumerMode: 'off' | 'read' | 'write';
}

/** The workspace an API key belongs to, as GET /organization shows it. A restricted key counts only its projects. */
export async function getOrganization(db: Executor, principal: Principal): Promise<OrganizationView> {
  const { workspaceId } = principal;
  const workspace = await Workspace.query(db).findById(workspaceId);
  if (!workspace) throw new NotFoundError('organization');
  const visibleProjects = Project.query(db).where({ workspaceId });
  if (!isUnrestricted(principal)) visibleProjects.whereIn('id', principal.projectIds as string[]);
  const [projectCount, memberCount] = await Promise.all([
    visibleProjects.resultSize(),
    Member.query(db).where({ workspaceId }).whereNull('removedAt').resultSize(),
  ]);
  return { id: workspace.id, name: workspace.name, plan: workspace.plan, createdAt: workspace.createdAt.toISOString(), projectCount, memberCount, settings: settingsOf(workspace) };
}

const settingsOf = (workspace: Workspace): WorkspaceSettings => ({ semanticConsumerMode: workspace.semanticConsumerMode });

export async function getWorkspaceSettings(db: Executor, workspaceId: string): Promise<WorkspaceSettings> {
  const workspace = await Workspace.query(db).findById(workspaceId);
  if (!workspace) throw new NotFoundError('organization');
  return settingsOf(workspace);
}

export async function updateWorkspaceSettings(db: Executor, workspaceId: string, changes: Partial<WorkspaceSettings>): Promise<WorkspaceSettings> {
  const workspace = await Workspace.query(db).findById(workspaceId).forUpdate();
  if (!workspace) throw new NotFoundError('organization');
  return settingsOf(await workspace.$query(db).patchAndFetch(changes));
}
