import { listDataEndpointsOperation, getDataEndpointOperation, createDataEndpointOperation, updateDataEndpointOperation, deleteDataEndpointOperation, checkDataEndpointOperation, validateDataEndpointOperation, discoverDataEndpointSchemaOperation, readDataEndpointRecordsOperation } from '../../services/endpoints/operations';
import { defineRoute } from '../route-spec';
import { MAX_RECORDS_LIMIT, DEFAULT_RECORDS_LIMIT } from '../../services/endpoints/records-read';

const BASE = '/api/v1/data-endpoints';

export const dataEndpointRoutes = [
  defineRoute({
    method: 'get',
    path: BASE,
    operation: listDataEndpointsOperation,
    tag: 'Data endpoints',
  }),
  defineRoute({
    method: 'get',
    path: `${BASE}/:endpoint_id`,
    operation: getDataEndpointOperation,
    tag: 'Data endpoints',
  }),
  defineRoute({
    method: 'post',
    path: BASE,
    operation: createDataEndpointOperation,
    tag: 'Data endpoints',
  }),
  defineRoute({
    method: 'patch',
    path: `${BASE}/:endpoint_id`,
    operation: updateDataEndpointOperation,
    tag: 'Data endpoints',
  }),
  defineRoute({
    method: 'delete',
    path: `${BASE}/:endpoint_id`,
    operation: deleteDataEndpointOperation,
    tag: 'Data endpoints',
  }),
  defineRoute({
    method: 'post',
    path: `${BASE}/:endpoint_id/check`,
    operation: checkDataEndpointOperation,
    tag: 'Data endpoints',
  }),
  defineRoute({
    method: 'post',
    path: `${BASE}/:endpoint_id/validate`,
    operation: validateDataEndpointOperation,
    tag: 'Data endpoints',
  }),
  defineRoute({
    method: 'get',
    path: `${BASE}/:endpoint_id/schema`,
    operation: discoverDataEndpointSchemaOperation,
    tag: 'Data endpoints',
    errors: [{ status: 502 }],
  }),
  defineRoute({
    method: 'get',
    path: `${BASE}/:endpoint_id/records`,
    operation: readDataEndpointRecordsOperation,
    description: `limit defaults to ${DEFAULT_RECORDS_LIMIT} and is capped at ${MAX_RECORDS_LIMIT}. Follow nextCursor with the same key and the same parameters.`,
    tag: 'Data endpoints',
    errors: [{ status: 502 }],
  }),
];
