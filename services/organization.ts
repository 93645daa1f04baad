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
/** One query: the workspace with its visible project count and active member count (every authenticated GET pays for it). */
export async function getOrganization(db: Executor, principal: Principal): Promise<OrganizationView> {
  const { workspaceId } = principal;
  const visibleProjects = Project.query(db).where('projects.workspaceId', workspaceId).count('*');
  if (!isUnrestricted(principal)) visibleProjects.whereIn('projects.id', principal.projectIds as string[]);
  const activeMembers = Member.query(db).where('members.workspaceId', workspaceId).whereNull('members.removedAt').count('*');
  const workspace = (await Workspace.query(db)
    .findById(workspaceId)
    .select('workspaces.*', visibleProjects.as('projectCount'), activeMembers.as('memberCount'))) as (Workspace & { projectCount: string; memberCount: string }) | undefined;
  if (!workspace) throw new NotFoundError('organization');
  return {
    id: workspace.id,
    name: workspace.name,
    plan: workspace.plan,
    createdAt: workspace.createdAt.toISOString(),
    projectCount: Number(workspace.projectCount),
    memberCount: Number(workspace.memberCount),
    settings: settingsOf(workspace),
  };
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
