import { listReadBindingsOperation, createReadBindingOperation, getReadBindingOperation, replaceReadBindingOperation, deleteReadBindingOperation, readTermRecordsOperation, checkTermShapesOperation } from '../../services/ontology/binding-operations';
import { defineRoute, RouteSpec } from '../route-spec';
import { SHAPE_CHECK_MAX_RECORDS } from '../../services/ontology/term-records';
import { DEFAULT_RECORDS_LIMIT, MAX_RECORDS_LIMIT } from '../../services/endpoints/records-read';

// Read bindings (SPEC 2.6, 4.5) and the term-record reads and shape checks that go through them.

const BASE = '/api/v1/projects/:project_id/ontology';
const TAG = 'Ontology bindings';

/** Why unbinding is guarded like binding. */
const UNBINDING = 'A binding’s grants protect its endpoint’s records: an endpoint needs the grants of every binding over it, so removing or moving one can open the data.';

export const readBindingRoutes: RouteSpec[] = [
  defineRoute({
    method: 'get',
    path: `${BASE}/read-bindings`,
    operation: listReadBindingsOperation,
    tag: TAG,
  }) as RouteSpec,
  defineRoute({
    method: 'post',
    path: `${BASE}/read-bindings`,
    operation: createReadBindingOperation,
    description: 'Validation lists every problem: a package of another ontology, a term the package lacks, an endpoint that is not a readable source, properties the term lacks, and fields the endpoint schema lacks.',
    tag: TAG,
  }) as RouteSpec,
  defineRoute({
    method: 'get',
    path: `${BASE}/read-bindings/:binding_id`,
    operation: getReadBindingOperation,
    tag: TAG,
  }) as RouteSpec,
  defineRoute({
    method: 'put',
    path: `${BASE}/read-bindings/:binding_id`,
    operation: replaceReadBindingOperation,
    description: `${UNBINDING} Replacing one needs the named read grants of the endpoint it covered, as it is now, and of the endpoint it covers next (403 read_grant_required), with workspaceResources for project-restricted keys. Validated as on creation.`,
    tag: TAG,
  }) as RouteSpec,
  defineRoute({
    method: 'delete',
    path: `${BASE}/read-bindings/:binding_id`,
    operation: deleteReadBindingOperation,
    description: `${UNBINDING} Deleting one needs the endpoint’s named read grants (403 read_grant_required), with workspaceResources for project-restricted keys.`,
    tag: TAG,
  }) as RouteSpec,
  defineRoute({
    method: 'get',
    path: `${BASE}/terms/:term/records`,
    operation: readTermRecordsOperation,
    description: `Needs data:read and, per binding, the named read grants it requires (no scope stands in for them): bindings the key may not read contribute nothing and are counted in metadata.withheldBindings; if none is readable the answer is 403 read_grant_required. limit defaults to ${DEFAULT_RECORDS_LIMIT} (cap ${MAX_RECORDS_LIMIT}); follow metadata.nextCursor with the same key.`,
    tag: TAG,
    errors: [{ status: 502 }],
  }) as RouteSpec,
  defineRoute({
    method: 'get',
    path: `${BASE}/terms/:term/shape-check`,
    operation: checkTermShapesOperation,
    description: `Reads at most ${SHAPE_CHECK_MAX_RECORDS} records through the readable bindings and validates them with rdf-validate-shacl; truncated says when there were more.`,
    tag: TAG,
    errors: [{ status: 502 }],
  }) as RouteSpec,
];
