import { raw } from 'objection';
import { InputError, NotFoundError } from '../../core/errors';
import type { Executor } from '../../db/connection';
import { Project } from '../../db/models';
import { Principal, authorizeProject, isUnrestricted } from './access';
import { PageRequest, pageOf } from '../shared/pagination';
import type { OperationContext, ServiceDependencies } from '../operations/context';
import { presentProject, type ProjectView } from './presenters';

/**
 * Loads a project the principal may use: another workspace's project is a 404 (tenants never
 * learn of each other's ids), one outside the key's allowlist a 403. Takes (deps, db, principal), not a
 * context: invoke calls it to build the context's project.
 */
export async function requireProject(deps: Pick<ServiceDependencies, 'definitions'>, db: Executor, principal: Principal, projectId: string): Promise<Project> {
  // Outside a transaction the runtime's definition cache answers (projects change rarely); a
  // transaction reads its own view.
  const find = () => Project.query(db).findOne({ id: projectId, workspaceId: principal.workspaceId });
  // A kept project is handed out as a copy: an operation may change its own (patch() updates the instance).
  const project = db.isTransaction ? await find() : (await deps.definitions.get(principal.workspaceId, `project:${projectId}`, async () => (await find()) ?? null))?.$clone();
  if (!project) throw new NotFoundError('project', 'No project with this id in this workspace.');
  authorizeProject(principal, projectId);
  return project;
}

export async function listProjects(ctx: OperationContext, page: PageRequest, filter: { name?: string } = {}) {
  const { db, principal } = ctx;
  const base = Project.query(db).where({ workspaceId: principal.workspaceId });
  if (!isUnrestricted(principal)) base.whereIn('id', principal.projectIds as string[]);
  if (filter.name) base.where('name', filter.name);
  const { rows, pagination } = await pageOf(base, page);
  return { projects: rows.map(presentProject), pagination };
}

/** Takes (db, workspaceId), not a context: fixtures create projects as no key. */
export async function createProject(db: Executor, workspaceId: string, input: { name: string; description?: string }): Promise<ProjectView> {
  const project = await Project.query(db).insertAndFetch({ workspaceId, name: input.name, description: input.description ?? '' });
  return presentProject(project);
}

/** Changes the operation's project (loaded and authorized by invoke with requireProject). */
export async function updateProject(ctx: OperationContext, input: { name?: string; description?: string }): Promise<ProjectView> {
  const { db, project } = ctx;
  const updated = await project.$query(db).patchAndFetch({ ...input, updatedAt: raw('now()') as unknown as Date });
  return presentProject(updated);
}

/** Every id must name a project of the workspace; the problems point into `projectIds` of the request. */
export async function assertProjectsInWorkspace(db: Executor, workspaceId: string, projectIds: string[]): Promise<void> {
  if (projectIds.length === 0) return;
  const found = await Project.query(db).where({ workspaceId }).whereIn('id', projectIds).select('id');
  const known = new Set(found.map((p) => p.id));
  const unknown = projectIds.filter((id) => !known.has(id));
  if (unknown.length) {
    throw new InputError('unknown_project', `Every projectIds entry must be a project of this workspace; unknown: ${unknown.join(', ')}.`,
      unknown.map((id) => ({ path: `/projectIds/${projectIds.indexOf(id)}`, message: 'is not a project of this workspace' })));
  }
}
