import { NotFoundError } from '../core/errors';
import type { Executor } from '../db/connection';
import { Member, Project, Workspace } from '../db/models';

export interface OrganizationView {
  id: string;
  name: string;
  plan: string;
  createdAt: string;
  projectCount: number;
  memberCount: number;
}

/** The workspace an API key belongs to, as GET /organization shows it. */
export async function getOrganization(db: Executor, workspaceId: string): Promise<OrganizationView> {
  const workspace = await Workspace.query(db).findById(workspaceId);
  if (!workspace) throw new NotFoundError('organization');
  const [projectCount, memberCount] = await Promise.all([
    Project.query(db).where({ workspaceId }).resultSize(),
    Member.query(db).where({ workspaceId }).whereNull('removedAt').resultSize(),
  ]);
  return { id: workspace.id, name: workspace.name, plan: workspace.plan, createdAt: workspace.createdAt.toISOString(), projectCount, memberCount };
}
