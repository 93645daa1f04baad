import type { OperationContext } from '../operations/context';
import { defineOperation, Reply, RequestInput } from '../operations/operation';
import {
  checkDataEndpoint,
  createDataEndpoint,
  DataEndpointInput,
  DataEndpointPatch,
  deleteDataEndpoint,
  discoverEndpointSchema,
  getDataEndpoint,
  listDataEndpoints,
  updateDataEndpoint,
  validateDataEndpoint,
} from './data-endpoints';
import { readRecordsMetered, RecordsReadParams } from './records-read';
import type { PageRequest } from '../shared/pagination';
import { idParams, listResponse } from '../../schemas/common';
import { checkResultSchema, createDataEndpointBody, dataEndpointSchema, listDataEndpointsQuery, recordsQuery, recordsResponseSchema, updateDataEndpointBody, validationResultSchema } from '../../schemas/data-endpoints';

const endpointResponse = { type: 'object', required: ['dataEndpoint'], properties: { dataEndpoint: dataEndpointSchema } };

export const listDataEndpointsOperation = defineOperation({
  name: 'listDataEndpoints',
  summary: 'List data endpoints, filtered by name, namespace and role.',
  access: { scopes: { anyOf: ['endpoints:read'] }, workspaceResources: true },
  effect: 'read',
  input: { query: listDataEndpointsQuery },
  output: { 200: { description: 'A page of endpoints', schema: listResponse('dataEndpoints', dataEndpointSchema) } },
  async run(ctx: OperationContext, { query }: RequestInput<Record<string, string>, PageRequest & { name?: string; namespace?: string; role?: string }, undefined>): Promise<Reply> {
    const { limit, offset, ...filter } = query;
    return { body: await listDataEndpoints(ctx, { limit, offset }, filter) };
  },
});

export const getDataEndpointOperation = defineOperation({
  name: 'getDataEndpoint',
  summary: 'One data endpoint.',
  access: { scopes: { anyOf: ['endpoints:read'] }, workspaceResources: true },
  effect: 'read',
  input: { params: idParams('endpoint_id') },
  output: { 200: { description: 'The endpoint', schema: endpointResponse } },
  async run(ctx: OperationContext, { params }: RequestInput<{ endpoint_id: string }, Record<string, never>, undefined>): Promise<Reply> {
    return { body: { dataEndpoint: await getDataEndpoint(ctx, params.endpoint_id) } };
  },
});

export const createDataEndpointOperation = defineOperation({
  name: 'createDataEndpoint',
  summary: 'Configure a data endpoint on an installed capability. Starts no ingestion, grants no permission. Over guarded data it needs what reading (and, for a destination, writing) that data needs.',
  access: { scopes: { anyOf: ['endpoints:write'] }, workspaceResources: true, actor: 'accountable' as const, grants: 'read and write' as const },
  effect: 'write',
  input: { body: createDataEndpointBody },
  idempotent: true,
  output: { 201: { description: 'The new endpoint', schema: endpointResponse } },
  async run(ctx: OperationContext, { body }: RequestInput<Record<string, string>, Record<string, never>, DataEndpointInput>): Promise<Reply> {
    return { status: 201, body: { dataEndpoint: await createDataEndpoint(ctx, body) } };
  },
});

export const updateDataEndpointOperation = defineOperation({
  name: 'updateDataEndpoint',
  summary: 'Change an endpoint. The target is revalidated against the capability contract; a target onto other data needs what making an endpoint over it needs, and an endpoint whose bindings or write policy guard its data cannot move off it (409).',
  access: { scopes: { anyOf: ['endpoints:write'] }, workspaceResources: true, actor: 'accountable' as const, grants: 'read and write' as const },
  effect: 'write',
  input: { params: idParams('endpoint_id'), body: updateDataEndpointBody },
  output: { 200: { description: 'The updated endpoint', schema: endpointResponse } },
  async run(ctx: OperationContext, { params, body }: RequestInput<{ endpoint_id: string }, Record<string, never>, DataEndpointPatch>): Promise<Reply> {
    return { body: { dataEndpoint: await updateDataEndpoint(ctx, params.endpoint_id, body) } };
  },
});

export const deleteDataEndpointOperation = defineOperation({
  name: 'deleteDataEndpoint',
  summary: 'Delete an endpoint. Blocked (409 endpoint_referenced) while pipelines or bindings refer to it.',
  access: { scopes: { anyOf: ['endpoints:write'] }, workspaceResources: true, actor: 'accountable' as const },
  effect: 'write',
  input: { params: idParams('endpoint_id') },
  output: { 204: { description: 'Deleted' } },
  async run(ctx: OperationContext, { params }: RequestInput<{ endpoint_id: string }, Record<string, never>, undefined>): Promise<Reply> {
    await deleteDataEndpoint(ctx, params.endpoint_id);
    return { status: 204 };
  },
});

export const checkDataEndpointOperation = defineOperation({
  name: 'checkDataEndpoint',
  summary: 'Check the connection through the capability. Does not prove every record is readable.',
  access: { scopes: { anyOf: ['endpoints:write'] }, workspaceResources: true, actor: 'accountable' as const },
  effect: 'external',
  input: { params: idParams('endpoint_id') },
  output: { 200: { description: 'Check result (ok false when the remote side failed)', schema: checkResultSchema } },
  async run(ctx: OperationContext, { params }: RequestInput<{ endpoint_id: string }, Record<string, never>, undefined>): Promise<Reply> {
    return { body: await checkDataEndpoint(ctx, params.endpoint_id) };
  },
});

export const validateDataEndpointOperation = defineOperation({
  name: 'validateDataEndpoint',
  summary: "Validate the stored configuration against the installed capability's contract.",
  access: { scopes: { anyOf: ['endpoints:read'] }, workspaceResources: true },
  effect: 'external',
  input: { params: idParams('endpoint_id') },
  output: { 200: { description: 'Validation result', schema: validationResultSchema } },
  async run(ctx: OperationContext, { params }: RequestInput<{ endpoint_id: string }, Record<string, never>, undefined>): Promise<Reply> {
    return { body: await validateDataEndpoint(ctx, params.endpoint_id) };
  },
});

export const discoverDataEndpointSchemaOperation = defineOperation({
  name: 'discoverDataEndpointSchema',
  summary: 'Target fields discovered through the capability.',
  access: { scopes: { anyOf: ['endpoints:read'] }, workspaceResources: true, actor: 'accountable' as const },
  effect: 'read',
  input: { params: idParams('endpoint_id') },
  output: {
    200: {
      description: 'Discovered fields',
      schema: { type: 'object', required: ['fields'], properties: { fields: { type: 'array', items: { type: 'object', properties: { name: { type: 'string' }, type: { type: 'string' }, nullable: { type: 'boolean' } } } }, primaryKey: { type: 'array', items: { type: 'string' } } } },
    },
  },
  async run(ctx: OperationContext, { params }: RequestInput<{ endpoint_id: string }, Record<string, never>, undefined>): Promise<Reply> {
    return { body: await discoverEndpointSchema(ctx, params.endpoint_id) };
  },
});

export const readDataEndpointRecordsOperation = defineOperation({
  name: 'readDataEndpointRecords',
  summary: 'A bounded read of records, with opaque continuation cursors.',
  access: { scopes: { anyOf: ['data:read'] }, workspaceResources: true, grants: 'read' as const },
  effect: 'read',
  input: { params: idParams('endpoint_id'), query: recordsQuery },
  output: { 200: { description: 'Records and read metadata', schema: recordsResponseSchema } },
  async run(ctx: OperationContext, { params, query }: RequestInput<{ endpoint_id: string }, RecordsReadParams, undefined>): Promise<Reply> {
    return { body: await readRecordsMetered(ctx, params.endpoint_id, query) };
  },
});

export const dataEndpointOperations = [
  listDataEndpointsOperation,
  getDataEndpointOperation,
  createDataEndpointOperation,
  updateDataEndpointOperation,
  deleteDataEndpointOperation,
  checkDataEndpointOperation,
  validateDataEndpointOperation,
  discoverDataEndpointSchemaOperation,
  readDataEndpointRecordsOperation,
];
