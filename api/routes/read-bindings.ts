import { defineRoute, RouteSpec } from '../route-spec';
import type { PageRequest } from '../../services/shared/pagination';
import { BindingInput, createBinding, deleteBinding, listBindings, presentBinding, replaceBinding, requireBinding } from '../../services/ontology/read-bindings';
import { checkTermShapes, readTermRecords, SHAPE_CHECK_MAX_RECORDS } from '../../services/ontology/term-records';
import { DEFAULT_RECORDS_LIMIT, MAX_RECORDS_LIMIT } from '../../services/endpoints/records-read';
import { LOCAL_NAME_PATTERN } from '../../ontology/definition';
import { idParams, listQuery, listResponse, timestamp, uuid } from '../schemas/common';
import type { JsonSchema } from '../../core/schema-validator';

// Read bindings (SPEC 2.6, 4.5) and the term-record reads and shape checks that go through them.

const BASE = '/api/v1/projects/:project_id/ontology';
const TAG = 'Ontology bindings';
const localName: JsonSchema = { type: 'string', pattern: LOCAL_NAME_PATTERN };
const grant: JsonSchema = { type: 'string', minLength: 1, maxLength: 200, pattern: '^[A-Za-z0-9._:-]+$' };

export const bindingInputSchema: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['ontologyPackageId', 'termId', 'dataEndpointId', 'mapping'],
  properties: {
    ontologyPackageId: { ...uuid, description: 'A compiled package of this project’s ontology that defines the term.' },
    termId: { ...localName, description: 'A class of that package.' },
    dataEndpointId: { ...uuid, description: 'A source endpoint of this workspace.' },
    mapping: {
      type: 'object',
      additionalProperties: false,
      required: ['subjectTemplate', 'properties'],
      properties: {
        subjectTemplate: { type: 'string', minLength: 1, maxLength: 500, description: 'IRI template for each record’s subject, with {field} placeholders, e.g. https://example.com/customers/{id}.' },
        properties: { type: 'object', maxProperties: 200, propertyNames: { pattern: LOCAL_NAME_PATTERN }, additionalProperties: { type: 'string', minLength: 1, maxLength: 200 }, description: 'Term property -> endpoint field.' },
        links: {
          type: 'object',
          maxProperties: 50,
          propertyNames: { pattern: LOCAL_NAME_PATTERN },
          additionalProperties: {
            type: 'object',
            additionalProperties: false,
            required: ['field', 'targetTemplate'],
            properties: { field: { type: 'string', minLength: 1, maxLength: 200 }, targetTemplate: { type: 'string', minLength: 1, maxLength: 500 } },
          },
          description: 'Link -> the field holding the target’s key and the target’s IRI template.',
        },
      },
    },
    requiredReadPermissions: { type: 'array', uniqueItems: true, maxItems: 50, items: grant, default: [], description: 'Named read grants a key must hold to see this binding’s records (in term reads and SPARQL).' },
  },
};

const bindingSchema: JsonSchema = {
  type: 'object',
  required: ['id', 'ontologyPackageId', 'termId', 'dataEndpointId', 'mapping', 'requiredReadPermissions', 'status'],
  properties: {
    id: uuid,
    projectId: uuid,
    ontologyPackageId: uuid,
    termId: { type: 'string' },
    dataEndpointId: uuid,
    mapping: bindingInputSchema.properties && (bindingInputSchema.properties as Record<string, JsonSchema>).mapping,
    requiredReadPermissions: { type: 'array', items: { type: 'string' } },
    status: { type: 'string', enum: ['active', 'incompatible'], description: 'incompatible: the active package no longer has the term or a mapped property.' },
    createdByMemberId: uuid,
    createdAt: timestamp,
    updatedAt: timestamp,
  },
};

const bindingResponse = { type: 'object', required: ['binding'], properties: { binding: bindingSchema } };
const bindingParams = idParams('project_id', 'binding_id');
const termParams: JsonSchema = { type: 'object', required: ['project_id', 'term'], properties: { project_id: uuid, term: localName } };

type ProjectParams = { project_id: string };
type BindingParams = ProjectParams & { binding_id: string };
type TermParams = ProjectParams & { term: string };

export const readBindingRoutes: RouteSpec[] = [
  defineRoute<ProjectParams, PageRequest & { ontologyPackageId?: string; dataEndpointId?: string; status?: string }>({
    method: 'get',
    path: `${BASE}/read-bindings`,
    operationId: 'listReadBindings',
    summary: 'Read bindings of the project, filtered by ontologyPackageId, dataEndpointId and status.',
    tag: TAG,
    auth: { scopes: ['bindings:read'], projectParam: 'project_id' },
    params: idParams('project_id'),
    query: listQuery({ ontologyPackageId: uuid, dataEndpointId: uuid, status: { type: 'string', enum: ['active', 'incompatible'] } }),
    responses: { 200: { description: 'A page of bindings', schema: listResponse('bindings', bindingSchema) } },
    async handler({ db, project, query }) {
      const { limit, offset, ...filter } = query;
      return { body: await listBindings(db, project, { limit, offset }, filter) };
    },
  }) as RouteSpec,
  defineRoute<ProjectParams, Record<string, never>, BindingInput>({
    method: 'post',
    path: `${BASE}/read-bindings`,
    operationId: 'createReadBinding',
    summary: 'Bind a term to a source endpoint. Copies no records; the endpoint cannot be deleted while bound.',
    description: 'Validation lists every problem: a package of another ontology, a term the package lacks, an endpoint that is not a readable source, properties the term lacks, and fields the endpoint schema lacks.',
    tag: TAG,
    auth: { scopes: ['bindings:write'], projectParam: 'project_id', accountableActor: true },
    params: idParams('project_id'),
    body: bindingInputSchema,
    idempotent: true,
    responses: { 201: { description: 'The binding', schema: bindingResponse } },
    async handler({ db, principal, project, body, deps }) {
      return { status: 201, body: { binding: await createBinding(db, deps.encryptionKey, principal, project, body) } };
    },
  }) as RouteSpec,
  defineRoute<BindingParams>({
    method: 'get',
    path: `${BASE}/read-bindings/:binding_id`,
    operationId: 'getReadBinding',
    summary: 'One read binding.',
    tag: TAG,
    auth: { scopes: ['bindings:read'], projectParam: 'project_id' },
    params: bindingParams,
    responses: { 200: { description: 'The binding', schema: bindingResponse } },
    async handler({ db, project, params }) {
      return { body: { binding: presentBinding(await requireBinding(db, project, params.binding_id)) } };
    },
  }) as RouteSpec,
  defineRoute<BindingParams, Record<string, never>, BindingInput>({
    method: 'put',
    path: `${BASE}/read-bindings/:binding_id`,
    operationId: 'replaceReadBinding',
    summary: 'Replace a read binding; validated as on creation.',
    tag: TAG,
    auth: { scopes: ['bindings:write'], projectParam: 'project_id', accountableActor: true },
    params: bindingParams,
    body: bindingInputSchema,
    responses: { 200: { description: 'The binding', schema: bindingResponse } },
    async handler({ db, project, params, body, deps }) {
      return { body: { binding: await replaceBinding(db, deps.encryptionKey, project, params.binding_id, body) } };
    },
  }) as RouteSpec,
  defineRoute<BindingParams>({
    method: 'delete',
    path: `${BASE}/read-bindings/:binding_id`,
    operationId: 'deleteReadBinding',
    summary: 'Delete a read binding (its endpoint can then be deleted).',
    tag: TAG,
    auth: { scopes: ['bindings:write'], projectParam: 'project_id', accountableActor: true },
    params: bindingParams,
    responses: { 204: { description: 'Deleted' } },
    async handler({ db, project, params }) {
      await deleteBinding(db, project, params.binding_id);
      return { status: 204 };
    },
  }) as RouteSpec,
  defineRoute<TermParams, { limit?: number; cursor?: string }>({
    method: 'get',
    path: `${BASE}/terms/:term/records`,
    operationId: 'readTermRecords',
    summary: 'The records of a term through its active bindings, as the term’s properties, cursor-paged.',
    description: `Needs data:read and, per binding, the named read grants it requires (no scope stands in for them): bindings the key may not read contribute nothing and are counted in metadata.withheldBindings; if none is readable the answer is 403 read_grant_required. limit defaults to ${DEFAULT_RECORDS_LIMIT} (cap ${MAX_RECORDS_LIMIT}); follow metadata.nextCursor with the same key.`,
    tag: TAG,
    auth: { scopes: ['data:read'], projectParam: 'project_id' },
    params: termParams,
    query: {
      type: 'object',
      additionalProperties: false,
      properties: { limit: { type: 'integer', minimum: 1, maximum: MAX_RECORDS_LIMIT, default: DEFAULT_RECORDS_LIMIT }, cursor: { type: 'string', maxLength: 12_000 } },
    },
    errors: [{ status: 502 }],
    responses: {
      200: {
        description: 'Term records',
        schema: { type: 'object', required: ['data', 'metadata'], properties: { data: { type: 'array', items: { type: 'object', description: '@id (subject IRI), @binding, and the term’s properties and links.' } }, metadata: { type: 'object' } } },
      },
    },
    async handler({ db, principal, project, params, query, deps }) {
      return { body: await readTermRecords(db, principal, deps.encryptionKey, project, params.term, query) };
    },
  }) as RouteSpec,
  defineRoute<TermParams>({
    method: 'get',
    path: `${BASE}/terms/:term/shape-check`,
    operationId: 'checkTermShapes',
    summary: 'How the term’s records conform to its SHACL shapes (and its properties’ cardinalities and datatypes).',
    description: `Reads at most ${SHAPE_CHECK_MAX_RECORDS} records through the readable bindings and validates them with rdf-validate-shacl; truncated says when there were more.`,
    tag: TAG,
    auth: { scopes: ['data:read'], projectParam: 'project_id' },
    params: termParams,
    errors: [{ status: 502 }],
    responses: {
      200: {
        description: 'A SHACL validation report',
        schema: {
          type: 'object',
          required: ['conforms', 'checkedRecords', 'results'],
          properties: {
            term: { type: 'string' },
            conforms: { type: 'boolean' },
            checkedRecords: { type: 'integer' },
            truncated: { type: 'boolean' },
            withheldBindings: { type: 'integer' },
            results: { type: 'array', items: { type: 'object', properties: { focusNode: { type: ['string', 'null'] }, path: { type: ['string', 'null'] }, value: { type: ['string', 'null'] }, message: { type: ['string', 'null'] }, severity: { type: ['string', 'null'] }, constraint: { type: ['string', 'null'] }, sourceShape: { type: ['string', 'null'] } } } },
          },
        },
      },
    },
    async handler({ db, principal, project, params, deps }) {
      return { body: await checkTermShapes(db, principal, deps.encryptionKey, project, params.term) };
    },
  }) as RouteSpec,
];
