import { listDataEndpointsOperation, getDataEndpointOperation, createDataEndpointOperation, updateDataEndpointOperation, deleteDataEndpointOperation, checkDataEndpointOperation, validateDataEndpointOperation, discoverDataEndpointSchemaOperation, readDataEndpointRecordsOperation } from '../../services/endpoints/operations';
import { defineRoute } from '../route-spec';
import { MAX_RECORDS_LIMIT, DEFAULT_RECORDS_LIMIT } from '../../services/endpoints/records-read';
import { listResponse } from '../../schemas/common';
import { checkResultSchema, dataEndpointSchema, recordsResponseSchema, validationResultSchema } from '../../schemas/data-endpoints';

const endpointResponse = { type: 'object', required: ['dataEndpoint'], properties: { dataEndpoint: dataEndpointSchema } };
const BASE = '/api/v1/data-endpoints';

export const dataEndpointRoutes = [
  defineRoute({
    method: 'get',
    path: BASE,
    operation: listDataEndpointsOperation,
    tag: 'Data endpoints',
    responses: { 200: { description: 'A page of endpoints', schema: listResponse('dataEndpoints', dataEndpointSchema) } },
  }),
  defineRoute({
    method: 'get',
    path: `${BASE}/:endpoint_id`,
    operation: getDataEndpointOperation,
    tag: 'Data endpoints',
    responses: { 200: { description: 'The endpoint', schema: endpointResponse } },
  }),
  defineRoute({
    method: 'post',
    path: BASE,
    operation: createDataEndpointOperation,
    tag: 'Data endpoints',
    responses: { 201: { description: 'The new endpoint', schema: endpointResponse } },
  }),
  defineRoute({
    method: 'patch',
    path: `${BASE}/:endpoint_id`,
    operation: updateDataEndpointOperation,
    tag: 'Data endpoints',
    responses: { 200: { description: 'The updated endpoint', schema: endpointResponse } },
  }),
  defineRoute({
    method: 'delete',
    path: `${BASE}/:endpoint_id`,
    operation: deleteDataEndpointOperation,
    tag: 'Data endpoints',
    responses: { 204: { description: 'Deleted' } },
  }),
  defineRoute({
    method: 'post',
    path: `${BASE}/:endpoint_id/check`,
    operation: checkDataEndpointOperation,
    tag: 'Data endpoints',
    responses: { 200: { description: 'Check result (ok false when the remote side failed)', schema: checkResultSchema } },
  }),
  defineRoute({
    method: 'post',
    path: `${BASE}/:endpoint_id/validate`,
    operation: validateDataEndpointOperation,
    tag: 'Data endpoints',
    responses: { 200: { description: 'Validation result', schema: validationResultSchema } },
  }),
  defineRoute({
    method: 'get',
    path: `${BASE}/:endpoint_id/schema`,
    operation: discoverDataEndpointSchemaOperation,
    tag: 'Data endpoints',
    errors: [{ status: 502 }],
    responses: {
      200: {
        description: 'Discovered fields',
        schema: { type: 'object', required: ['fields'], properties: { fields: { type: 'array', items: { type: 'object', properties: { name: { type: 'string' }, type: { type: 'string' }, nullable: { type: 'boolean' } } } }, primaryKey: { type: 'array', items: { type: 'string' } } } },
      },
    },
  }),
  defineRoute({
    method: 'get',
    path: `${BASE}/:endpoint_id/records`,
    operation: readDataEndpointRecordsOperation,
    description: `limit defaults to ${DEFAULT_RECORDS_LIMIT} and is capped at ${MAX_RECORDS_LIMIT}. Follow nextCursor with the same key and the same parameters.`,
    tag: 'Data endpoints',
    errors: [{ status: 502 }],
    responses: { 200: { description: 'Records and read metadata', schema: recordsResponseSchema } },
  }),
];
