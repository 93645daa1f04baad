import { defineRoute } from '../route-spec';
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
} from '../../services/endpoints/data-endpoints';
import { MAX_RECORDS_LIMIT, readRecordsMetered, RecordsReadParams, DEFAULT_RECORDS_LIMIT } from '../../services/endpoints/records-read';
import type { PageRequest } from '../../services/shared/pagination';
import { idParams, listQuery, listResponse } from '../schemas/common';
import {
  checkResultSchema,
  createDataEndpointBody,
  dataEndpointSchema,
  ENDPOINT_ROLES,
  IDENTITY_LABEL,
  recordsResponseSchema,
  updateDataEndpointBody,
  validationResultSchema,
} from '../schemas/data-endpoints';

const endpointParams = idParams('endpoint_id');
const endpointResponse = { type: 'object', required: ['dataEndpoint'], properties: { dataEndpoint: dataEndpointSchema } };
const BASE = '/api/v1/data-endpoints';

export const dataEndpointRoutes = [
  defineRoute<Record<string, string>, PageRequest & { name?: string; namespace?: string; role?: string }>({
    method: 'get',
    path: BASE,
    operationId: 'listDataEndpoints',
    summary: 'List data endpoints, filtered by name, namespace and role.',
    tag: 'Data endpoints',
    auth: { scopes: ['endpoints:read'], workspaceResources: true },
    query: listQuery({ name: IDENTITY_LABEL, namespace: IDENTITY_LABEL, role: { type: 'string', enum: [...ENDPOINT_ROLES] } }),
    responses: { 200: { description: 'A page of endpoints', schema: listResponse('dataEndpoints', dataEndpointSchema) } },
    async handler({ db, principal, query }) {
      const { limit, offset, ...filter } = query;
      return { body: await listDataEndpoints(db, principal.workspaceId, { limit, offset }, filter) };
    },
  }),
  defineRoute<{ endpoint_id: string }>({
    method: 'get',
    path: `${BASE}/:endpoint_id`,
    operationId: 'getDataEndpoint',
    summary: 'One data endpoint.',
    tag: 'Data endpoints',
    auth: { scopes: ['endpoints:read'], workspaceResources: true },
    params: endpointParams,
    responses: { 200: { description: 'The endpoint', schema: endpointResponse } },
    async handler({ db, principal, params }) {
      return { body: { dataEndpoint: await getDataEndpoint(db, principal.workspaceId, params.endpoint_id) } };
    },
  }),
  defineRoute<Record<string, string>, Record<string, never>, DataEndpointInput>({
    method: 'post',
    path: BASE,
    operationId: 'createDataEndpoint',
    summary: 'Configure a data endpoint on an installed capability. Starts no ingestion, grants no permission.',
    tag: 'Data endpoints',
    auth: { scopes: ['endpoints:write'], workspaceResources: true, accountableActor: true },
    idempotent: true,
    body: createDataEndpointBody,
    responses: { 201: { description: 'The new endpoint', schema: endpointResponse } },
    async handler({ db, principal, body, deps }) {
      return { status: 201, body: { dataEndpoint: await createDataEndpoint(db, principal, deps.encryptionKey, body) } };
    },
  }),
  defineRoute<{ endpoint_id: string }, Record<string, never>, DataEndpointPatch>({
    method: 'patch',
    path: `${BASE}/:endpoint_id`,
    operationId: 'updateDataEndpoint',
    summary: 'Change an endpoint. The target is revalidated against the capability contract.',
    tag: 'Data endpoints',
    auth: { scopes: ['endpoints:write'], workspaceResources: true, accountableActor: true },
    params: endpointParams,
    body: updateDataEndpointBody,
    responses: { 200: { description: 'The updated endpoint', schema: endpointResponse } },
    async handler({ db, principal, params, body, deps }) {
      return { body: { dataEndpoint: await updateDataEndpoint(db, principal.workspaceId, deps.encryptionKey, params.endpoint_id, body) } };
    },
  }),
  defineRoute<{ endpoint_id: string }>({
    method: 'delete',
    path: `${BASE}/:endpoint_id`,
    operationId: 'deleteDataEndpoint',
    summary: 'Delete an endpoint. Blocked (409 endpoint_referenced) while pipelines or bindings refer to it.',
    tag: 'Data endpoints',
    auth: { scopes: ['endpoints:write'], workspaceResources: true, accountableActor: true },
    params: endpointParams,
    responses: { 204: { description: 'Deleted' } },
    async handler({ db, principal, params }) {
      await deleteDataEndpoint(db, principal.workspaceId, params.endpoint_id);
      return { status: 204 };
    },
  }),
  defineRoute<{ endpoint_id: string }>({
    method: 'post',
    path: `${BASE}/:endpoint_id/check`,
    operationId: 'checkDataEndpoint',
    summary: 'Check the connection through the capability. Does not prove every record is readable.',
    tag: 'Data endpoints',
    auth: { scopes: ['endpoints:write'], workspaceResources: true, accountableActor: true },
    transaction: false,
    params: endpointParams,
    responses: { 200: { description: 'Check result (ok false when the remote side failed)', schema: checkResultSchema } },
    async handler({ db, principal, params, deps }) {
      return { body: await checkDataEndpoint(db, principal.workspaceId, deps.encryptionKey, params.endpoint_id) };
    },
  }),
  defineRoute<{ endpoint_id: string }>({
    method: 'post',
    path: `${BASE}/:endpoint_id/validate`,
    operationId: 'validateDataEndpoint',
    summary: "Validate the stored configuration against the installed capability's contract.",
    tag: 'Data endpoints',
    auth: { scopes: ['endpoints:read'], workspaceResources: true },
    transaction: false,
    params: endpointParams,
    responses: { 200: { description: 'Validation result', schema: validationResultSchema } },
    async handler({ db, principal, params, deps }) {
      return { body: await validateDataEndpoint(db, principal.workspaceId, deps.encryptionKey, params.endpoint_id) };
    },
  }),
  defineRoute<{ endpoint_id: string }>({
    method: 'get',
    path: `${BASE}/:endpoint_id/schema`,
    operationId: 'discoverDataEndpointSchema',
    summary: 'Target fields discovered through the capability.',
    tag: 'Data endpoints',
    auth: { scopes: ['endpoints:read'], workspaceResources: true, accountableActor: true },
    params: endpointParams,
    errors: [{ status: 502 }],
    responses: {
      200: {
        description: 'Discovered fields',
        schema: { type: 'object', required: ['fields'], properties: { fields: { type: 'array', items: { type: 'object', properties: { name: { type: 'string' }, type: { type: 'string' }, nullable: { type: 'boolean' } } } }, primaryKey: { type: 'array', items: { type: 'string' } } } },
      },
    },
    async handler({ db, principal, params, deps }) {
      return { body: await discoverEndpointSchema(db, principal.workspaceId, deps.encryptionKey, params.endpoint_id) };
    },
  }),
  defineRoute<{ endpoint_id: string }, RecordsReadParams>({
    method: 'get',
    path: `${BASE}/:endpoint_id/records`,
    operationId: 'readDataEndpointRecords',
    summary: 'A bounded read of records, with opaque continuation cursors.',
    description: `limit defaults to ${DEFAULT_RECORDS_LIMIT} and is capped at ${MAX_RECORDS_LIMIT}. Follow nextCursor with the same key and the same parameters.`,
    tag: 'Data endpoints',
    auth: { scopes: ['data:read'], workspaceResources: true },
    params: endpointParams,
    query: {
      type: 'object',
      additionalProperties: false,
      properties: {
        limit: { type: 'integer', minimum: 1, maximum: MAX_RECORDS_LIMIT, default: DEFAULT_RECORDS_LIMIT, description: `Records per page (cap ${MAX_RECORDS_LIMIT}).` },
        select: { anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }], description: 'Fields to return: repeated or comma-separated.' },
        where: { type: 'string', description: 'URL-encoded JSON array of {field, op, value|values}; op is eq, ne, in, exists, gt, gte, lt or lte.' },
        orderBy: { type: 'string', description: 'URL-encoded JSON array of {field, direction: asc|desc}.' },
        snapshotId: { type: 'string', minLength: 1, maxLength: 500, description: 'Read one committed snapshot (capabilities with snapshot reads).' },
        asOf: { type: 'string', format: 'date-time', description: 'Read the snapshot current at this time (capabilities with snapshot reads).' },
        cursor: { type: 'string', maxLength: 8192, description: 'nextCursor of the previous page.' },
      },
    },
    errors: [{ status: 502 }],
    responses: { 200: { description: 'Records and read metadata', schema: recordsResponseSchema } },
    async handler({ db, principal, params, query, deps }) {
      return { body: await readRecordsMetered(db, principal, deps.encryptionKey, params.endpoint_id, query) };
    },
  }),
];
