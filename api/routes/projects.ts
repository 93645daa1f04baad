import { listProjectsOperation, getProjectOperation, createProjectOperation, updateProjectOperation } from '../../services/tenancy/project-operations';
import { defineRoute } from '../route-spec';

export const projectRoutes = [
  defineRoute({
    method: 'get',
    path: '/api/v1/projects',
    operation: listProjectsOperation,
    tag: 'Projects',
  }),
  defineRoute({
    method: 'get',
    path: '/api/v1/projects/:project_id',
    operation: getProjectOperation,
    tag: 'Projects',
  }),
  defineRoute({
    method: 'post',
    path: '/api/v1/projects',
    operation: createProjectOperation,
    tag: 'Projects',
  }),
  defineRoute({
    method: 'patch',
    path: '/api/v1/projects/:project_id',
    operation: updateProjectOperation,
    tag: 'Projects',
  }),
];
