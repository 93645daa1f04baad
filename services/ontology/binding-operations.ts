import type { OperationContext } from '../operations/context';
import { defineOperation, Reply, RequestInput } from '../operations/operation';
import type { PageRequest } from '../shared/pagination';
import { BindingInput, bindingViews, createBinding, deleteBinding, listBindings, replaceBinding, requireBinding } from './read-bindings';
import { checkTermShapes, readTermRecords } from './term-records';
import type { JsonSchema } from '../../core/schema-validator';
import { idParams, listResponse, timestamp, uuid } from '../../schemas/common';
import { bindingInputSchema, bindingParams, listBindingsQuery, termParams, termRecordsQuery } from '../../schemas/ontology';

const bindingSchema: JsonSchema = {
  type: 'object',
  required: ['id', 'ontologyPackageId', 'termId', 'dataEndpointId', 'mapping', 'requiredReadPermissions', 'guardedEndpointIds', 'status'],
  properties: {
    id: uuid,
    projectId: uuid,
    ontologyPackageId: uuid,
    termId: { type: 'string' },
    dataEndpointId: uuid,
    mapping: bindingInputSchema.properties && (bindingInputSchema.properties as Record<string, JsonSchema>).mapping,
    requiredReadPermissions: { type: 'array', items: { type: 'string' } },
    guardedEndpointIds: { type: 'array', items: uuid, description: 'Every endpoint over the data the bound endpoint reaches: the binding\'s grants guard the data, so all of them.' },
    status: { type: 'string', enum: ['active', 'incompatible'], description: 'incompatible: the active package no longer has the term or a mapped property.' },
    createdByMemberId: uuid,
    createdAt: timestamp,
    updatedAt: timestamp,
  },
};

const bindingResponse = { type: 'object', required: ['binding'], properties: { binding: bindingSchema } };

type ProjectParams = { project_id: string };
type BindingParams = ProjectParams & { binding_id: string };
type TermParams = ProjectParams & { term: string };

export const listReadBindingsOperation = defineOperation({
  name: 'listReadBindings',
  summary: 'Read bindings of the project, filtered by ontologyPackageId, dataEndpointId and status.',
  access: { scopes: { anyOf: ['bindings:read'] }, project: true },
  effect: 'read',
  input: { params: idParams('project_id'), query: listBindingsQuery },
  output: { 200: { description: 'A page of bindings', schema: listResponse('bindings', bindingSchema) } },
  async run(ctx: OperationContext, { query }: RequestInput<ProjectParams, PageRequest & { ontologyPackageId?: string; dataEndpointId?: string; status?: string }, undefined>): Promise<Reply> {
    const { limit, offset, ...filter } = query;
    return { body: await listBindings(ctx, { limit, offset }, filter) };
  },
});

export const createReadBindingOperation = defineOperation({
  name: 'createReadBinding',
  summary: 'Bind a term to a source endpoint. Copies no records; the endpoint cannot be deleted while bound.',
  access: { scopes: { anyOf: ['bindings:write'] }, project: true, actor: 'accountable' as const, grants: 'read' as const },
  effect: 'write',
  input: { params: idParams('project_id'), body: bindingInputSchema },
  idempotent: true,
  output: { 201: { description: 'The binding', schema: bindingResponse } },
  async run(ctx: OperationContext, { body }: RequestInput<ProjectParams, Record<string, never>, BindingInput>): Promise<Reply> {
    return { status: 201, body: { binding: await createBinding(ctx, body) } };
  },
});

export const getReadBindingOperation = defineOperation({
  name: 'getReadBinding',
  summary: 'One read binding.',
  access: { scopes: { anyOf: ['bindings:read'] }, project: true },
  effect: 'read',
  input: { params: bindingParams },
  output: { 200: { description: 'The binding', schema: bindingResponse } },
  async run({ db, project }: OperationContext, { params }: RequestInput<BindingParams, Record<string, never>, undefined>): Promise<Reply> {
    return { body: { binding: (await bindingViews(db, project.workspaceId, [await requireBinding(db, project, params.binding_id)]))[0] } };
  },
});

export const replaceReadBindingOperation = defineOperation({
  name: 'replaceReadBinding',
  summary: 'Replace a read binding; validated as on creation. Needs the named read grants of the endpoint it covered, and of the one it covers next.',
  access: { scopes: { anyOf: ['bindings:write'] }, project: true, actor: 'accountable' as const, grants: 'read' as const },
  effect: 'write',
  input: { params: bindingParams, body: bindingInputSchema },
  output: { 200: { description: 'The binding', schema: bindingResponse } },
  async run(ctx: OperationContext, { params, body }: RequestInput<BindingParams, Record<string, never>, BindingInput>): Promise<Reply> {
    return { body: { binding: await replaceBinding(ctx, params.binding_id, body) } };
  },
});

export const deleteReadBindingOperation = defineOperation({
  name: 'deleteReadBinding',
  summary: 'Delete a read binding (its endpoint can then be deleted). Needs the endpoint’s named read grants, like binding it.',
  access: { scopes: { anyOf: ['bindings:write'] }, project: true, actor: 'accountable' as const, grants: 'read' as const },
  effect: 'write',
  input: { params: bindingParams },
  output: { 204: { description: 'Deleted' } },
  async run(ctx: OperationContext, { params }: RequestInput<BindingParams, Record<string, never>, undefined>): Promise<Reply> {
    await deleteBinding(ctx, params.binding_id);
    return { status: 204 };
  },
});

export const readTermRecordsOperation = defineOperation({
  name: 'readTermRecords',
  summary: 'The records of a term through its active bindings, as the term’s properties, cursor-paged.',
  access: { scopes: { anyOf: ['data:read'] }, project: true, grants: 'read' as const },
  effect: 'read',
  input: { params: termParams, query: termRecordsQuery },
  output: {
    200: {
      description: 'Term records',
      schema: { type: 'object', required: ['data', 'metadata'], properties: { data: { type: 'array', items: { type: 'object', description: '@id (subject IRI), @binding, and the term’s properties and links.' } }, metadata: { type: 'object' } } },
    },
  },
  async run(ctx: OperationContext, { params, query }: RequestInput<TermParams, { limit?: number; cursor?: string }, undefined>): Promise<Reply> {
    return { body: await readTermRecords(ctx, params.term, query) };
  },
});

export const checkTermShapesOperation = defineOperation({
  name: 'checkTermShapes',
  summary: 'How the term’s records conform to its SHACL shapes (and its properties’ cardinalities and datatypes).',
  access: { scopes: { anyOf: ['data:read'] }, project: true, grants: 'read' as const },
  effect: 'read',
  input: { params: termParams },
  output: {
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
  async run(ctx: OperationContext, { params }: RequestInput<TermParams, Record<string, never>, undefined>): Promise<Reply> {
    return { body: await checkTermShapes(ctx, params.term) };
  },
});

export const readBindingOperations = [
  listReadBindingsOperation,
  createReadBindingOperation,
  getReadBindingOperation,
  replaceReadBindingOperation,
  deleteReadBindingOperation,
  readTermRecordsOperation,
  checkTermShapesOperation,
];
