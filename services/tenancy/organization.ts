import { NotFoundError } from '../../core/errors';
import { Workspace } from '../../db/models';
import { isUnrestricted, Principal } from './access';
import type { Executor } from '../../db/connection';
import type { OperationContext } from '../operations/context';

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

/**
 * The workspace an API key belongs to, as GET /organization shows it. A restricted key counts only
 * its projects. One statement written out: the query builder cost about 0.3 ms of CPU per call (of
 * 1.7 ms per request), and this is the request-path benchmark's handler.
 */
export async function getOrganization(ctx: OperationContext): Promise<OrganizationView> {
  const { db, principal } = ctx;
  const restricted = !isUnrestricted(principal);
  // Outside a transaction the definition cache answers: workspaces, projects and members all notify.
  if (db.isTransaction) return readOrganization(db, principal, restricted);
  const key = `organization:${restricted ? [...principal.projectIds].sort().join(',') : '*'}`;
  return ctx.deps.definitions.get(principal.workspaceId, key, () => readOrganization(db, principal, restricted));
}

async function readOrganization(db: Executor, principal: Principal, restricted: boolean): Promise<OrganizationView> {
  const { rows } = await db.raw(
    `SELECT w.id, w.name, w.plan, w.created_at, w.semantic_consumer_mode,
            (SELECT count(*) FROM projects p WHERE p.workspace_id = w.id${restricted ? ' AND p.id = ANY(?::uuid[])' : ''}) AS project_count,
            (SELECT count(*) FROM members m WHERE m.workspace_id = w.id AND m.removed_at IS NULL) AS member_count
       FROM workspaces w WHERE w.id = ?`,
    restricted ? [[...principal.projectIds], principal.workspaceId] : [principal.workspaceId],
  );
  const workspace = rows[0] as { id: string; name: string; plan: string; created_at: Date; semantic_consumer_mode: WorkspaceSettings['semanticConsumerMode']; project_count: string; member_count: string } | undefined;
  if (!workspace) throw new NotFoundError('organization');
  return {
    id: workspace.id,
    name: workspace.name,
    plan: workspace.plan,
    createdAt: workspace.created_at.toISOString(),
    projectCount: Number(workspace.project_count),
    memberCount: Number(workspace.member_count),
    settings: { semanticConsumerMode: workspace.semantic_consumer_mode },
  };
}

const settingsOf = (workspace: Workspace): WorkspaceSettings => ({ semanticConsumerMode: workspace.semanticConsumerMode });

export async function getWorkspaceSettings(ctx: OperationContext): Promise<WorkspaceSettings> {
  const { db, principal: { workspaceId } } = ctx;
  const workspace = await Workspace.query(db).findById(workspaceId);
  if (!workspace) throw new NotFoundError('organization');
  return settingsOf(workspace);
}

export async function updateWorkspaceSettings(ctx: OperationContext, changes: Partial<WorkspaceSettings>): Promise<WorkspaceSettings> {
  const { db, principal: { workspaceId } } = ctx;
  const workspace = await Workspace.query(db).findById(workspaceId).forUpdate();
  if (!workspace) throw new NotFoundError('organization');
  return settingsOf(await workspace.$query(db).patchAndFetch(changes));
}
