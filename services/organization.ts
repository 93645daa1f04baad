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
  return { id: workspace.id, name: workspace.name, plan: workspace.plan, createdAt: workspace.createdAt.toISOString(), projectCount, memberCount };
}
