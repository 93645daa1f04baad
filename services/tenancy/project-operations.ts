import type { OperationContext } from '../operations/context';
import { defineOperation, Reply, RequestInput } from '../operations/operation';
import { createProject, listProjects, presentProject, updateProject } from './projects';
import type { PageRequest } from '../shared/pagination';

export const listProjectsOperation = defineOperation({
  name: 'listProjects',
  summary: 'List projects. A project-restricted key sees only its allowlist.',
  access: { scopes: { anyOf: ['projects:read'] } },
  effect: 'read',
  async run({ db, principal }: OperationContext, { query }: RequestInput<Record<string, string>, PageRequest & { name?: string }, undefined>): Promise<Reply> {
    return { body: await listProjects(db, principal, { limit: query.limit, offset: query.offset }, { name: query.name }) };
  },
});

export const getProjectOperation = defineOperation({
  name: 'getProject',
  summary: 'One project.',
  access: { scopes: { anyOf: ['projects:read'] }, project: true },
  effect: 'read',
  async run({ project }: OperationContext, _input: RequestInput<{ project_id: string }, Record<string, never>, undefined>): Promise<Reply> {
    return { body: { project: presentProject(project) } };
  },
});

export const createProjectOperation = defineOperation({
  name: 'createProject',
  summary: 'Create a project. Project-restricted keys cannot: they would never see it.',
  access: { scopes: { anyOf: ['projects:write'] }, unrestrictedKey: true, actor: 'accountable' as const },
  effect: 'write',
  idempotent: true,
  async run({ db, principal }: OperationContext, { body }: RequestInput<Record<string, string>, Record<string, never>, { name: string; description?: string }>): Promise<Reply> {
    return { status: 201, body: { project: await createProject(db, principal.workspaceId, body) } };
  },
});

export const updateProjectOperation = defineOperation({
  name: 'updateProject',
  summary: 'Rename or describe a project.',
  access: { scopes: { anyOf: ['projects:write'] }, project: true, actor: 'accountable' as const },
  effect: 'write',
  async run({ db, project }: OperationContext, { body }: RequestInput<{ project_id: string }, Record<string, never>, { name?: string; description?: string }>): Promise<Reply> {
    return { body: { project: await updateProject(db, project, body) } };
  },
});

export const projectOperations = [
  listProjectsOperation,
  getProjectOperation,
  createProjectOperation,
  updateProjectOperation,
];
