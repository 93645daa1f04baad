import type { OperationContext } from '../operations/context';
import { defineOperation, Reply, RequestInput } from '../operations/operation';
import { createProject, listProjects, updateProject } from './projects';
import { presentProject } from './presenters';
import type { PageRequest } from '../shared/pagination';
import { idParams, listQuery, listResponse } from '../../schemas/common';
import { createProjectBody, projectSchema, updateProjectBody } from '../../schemas/workspace';

const projectResponse = { type: 'object', required: ['project'], properties: { project: projectSchema } };

export const listProjectsOperation = defineOperation({
  name: 'listProjects',
  summary: 'List projects. A project-restricted key sees only its allowlist.',
  access: { scopes: { anyOf: ['projects:read'] } },
  effect: 'read',
  input: { query: listQuery({ name: { type: 'string', minLength: 1, maxLength: 200, description: 'Exact project name.' } }) },
  output: { 200: { description: 'A page of projects', schema: listResponse('projects', projectSchema) } },
  async run(ctx: OperationContext, { query }: RequestInput<Record<string, string>, PageRequest & { name?: string }, undefined>): Promise<Reply> {
    return { body: await listProjects(ctx, { limit: query.limit, offset: query.offset }, { name: query.name }) };
  },
});

export const getProjectOperation = defineOperation({
  name: 'getProject',
  summary: 'One project.',
  access: { scopes: { anyOf: ['projects:read'] }, project: true },
  effect: 'read',
  input: { params: idParams('project_id') },
  output: { 200: { description: 'The project', schema: projectResponse } },
  async run({ project }: OperationContext, _input: RequestInput<{ project_id: string }, Record<string, never>, undefined>): Promise<Reply> {
    return { body: { project: presentProject(project) } };
  },
});

export const createProjectOperation = defineOperation({
  name: 'createProject',
  summary: 'Create a project. Project-restricted keys cannot: they would never see it.',
  access: { scopes: { anyOf: ['projects:write'] }, unrestrictedKey: true, actor: 'accountable' as const },
  effect: 'write',
  input: { body: createProjectBody },
  idempotent: true,
  output: { 201: { description: 'The new project', schema: projectResponse } },
  async run({ db, principal }: OperationContext, { body }: RequestInput<Record<string, string>, Record<string, never>, { name: string; description?: string }>): Promise<Reply> {
    return { status: 201, body: { project: await createProject(db, principal.workspaceId, body) } };
  },
});

export const updateProjectOperation = defineOperation({
  name: 'updateProject',
  summary: 'Rename or describe a project.',
  access: { scopes: { anyOf: ['projects:write'] }, project: true, actor: 'accountable' as const },
  effect: 'write',
  input: { params: idParams('project_id'), body: updateProjectBody },
  output: { 200: { description: 'The updated project', schema: projectResponse } },
  async run(ctx: OperationContext, { body }: RequestInput<{ project_id: string }, Record<string, never>, { name?: string; description?: string }>): Promise<Reply> {
    return { body: { project: await updateProject(ctx, body) } };
  },
});

export const projectOperations = [
  listProjectsOperation,
  getProjectOperation,
  createProjectOperation,
  updateProjectOperation,
];
