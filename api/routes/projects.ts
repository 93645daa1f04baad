import { defineRoute } from '../route-spec';
import { createProject, listProjects, presentProject, updateProject } from '../../services/tenancy/projects';
import type { PageRequest } from '../../services/shared/pagination';
import { idParams, listQuery, listResponse } from '../schemas/common';
import { createProjectBody, projectSchema, updateProjectBody } from '../schemas/workspace';

const projectResponse = { type: 'object', required: ['project'], properties: { project: projectSchema } };

export const projectRoutes = [
  defineRoute<Record<string, string>, PageRequest & { name?: string }>({
    method: 'get',
    path: '/api/v1/projects',
    operationId: 'listProjects',
    summary: 'List projects. A project-restricted key sees only its allowlist.',
    tag: 'Projects',
    auth: { scopes: ['projects:read'] },
    query: listQuery({ name: { type: 'string', minLength: 1, maxLength: 200, description: 'Exact project name.' } }),
    responses: { 200: { description: 'A page of projects', schema: listResponse('projects', projectSchema) } },
    async handler({ db, principal, query }) {
      return { body: await listProjects(db, principal, { limit: query.limit, offset: query.offset }, { name: query.name }) };
    },
  }),
  defineRoute<{ project_id: string }>({
    method: 'get',
    path: '/api/v1/projects/:project_id',
    operationId: 'getProject',
    summary: 'One project.',
    tag: 'Projects',
    auth: { scopes: ['projects:read'], projectParam: 'project_id' },
    params: idParams('project_id'),
    responses: { 200: { description: 'The project', schema: projectResponse } },
    async handler({ project }) {
      return { body: { project: presentProject(project) } };
    },
  }),
  defineRoute<Record<string, string>, Record<string, never>, { name: string; description?: string }>({
    method: 'post',
    path: '/api/v1/projects',
    operationId: 'createProject',
    summary: 'Create a project. Project-restricted keys cannot: they would never see it.',
    tag: 'Projects',
    auth: { scopes: ['projects:write'], unrestrictedKey: true, accountableActor: true },
    idempotent: true,
    body: createProjectBody,
    responses: { 201: { description: 'The new project', schema: projectResponse } },
    async handler({ db, principal, body }) {
      return { status: 201, body: { project: await createProject(db, principal.workspaceId, body) } };
    },
  }),
  defineRoute<{ project_id: string }, Record<string, never>, { name?: string; description?: string }>({
    method: 'patch',
    path: '/api/v1/projects/:project_id',
    operationId: 'updateProject',
    summary: 'Rename or describe a project.',
    tag: 'Projects',
    auth: { scopes: ['projects:write'], projectParam: 'project_id', accountableActor: true },
    params: idParams('project_id'),
    body: updateProjectBody,
    responses: { 200: { description: 'The updated project', schema: projectResponse } },
    async handler({ db, project, body }) {
      return { body: { project: await updateProject(db, project, body) } };
    },
  }),
];
