import { listProjectsOperation, getProjectOperation, createProjectOperation, updateProjectOperation } from '../../services/tenancy/project-operations';
import { defineRoute } from '../route-spec';
import { listResponse } from '../../schemas/common';
import { projectSchema } from '../../schemas/workspace';

const projectResponse = { type: 'object', required: ['project'], properties: { project: projectSchema } };

export const projectRoutes = [
  defineRoute({
    method: 'get',
    path: '/api/v1/projects',
    operation: listProjectsOperation,
    tag: 'Projects',
    responses: { 200: { description: 'A page of projects', schema: listResponse('projects', projectSchema) } },
  }),
  defineRoute({
    method: 'get',
    path: '/api/v1/projects/:project_id',
    operation: getProjectOperation,
    tag: 'Projects',
    responses: { 200: { description: 'The project', schema: projectResponse } },
  }),
  defineRoute({
    method: 'post',
    path: '/api/v1/projects',
    operation: createProjectOperation,
    tag: 'Projects',
    responses: { 201: { description: 'The new project', schema: projectResponse } },
  }),
  defineRoute({
    method: 'patch',
    path: '/api/v1/projects/:project_id',
    operation: updateProjectOperation,
    tag: 'Projects',
    responses: { 200: { description: 'The updated project', schema: projectResponse } },
  }),
];
