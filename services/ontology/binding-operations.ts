import type { OperationContext } from '../operations/context';
import { defineOperation, Reply, RequestInput } from '../operations/operation';
import type { PageRequest } from '../shared/pagination';
import { BindingInput, createBinding, deleteBinding, listBindings, presentBindings, replaceBinding, requireBinding } from './read-bindings';
import { checkTermShapes, readTermRecords } from './term-records';
import { idParams } from '../../schemas/common';
import { bindingInputSchema, bindingParams, listBindingsQuery, termParams, termRecordsQuery } from '../../schemas/ontology';

type ProjectParams = { project_id: string };
type BindingParams = ProjectParams & { binding_id: string };
type TermParams = ProjectParams & { term: string };

export const listReadBindingsOperation = defineOperation({
  name: 'listReadBindings',
  summary: 'Read bindings of the project, filtered by ontologyPackageId, dataEndpointId and status.',
  access: { scopes: { anyOf: ['bindings:read'] }, project: true },
  effect: 'read',
  input: { params: idParams('project_id'), query: listBindingsQuery },
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
  async run({ db, project }: OperationContext, { params }: RequestInput<BindingParams, Record<string, never>, undefined>): Promise<Reply> {
    return { body: { binding: (await presentBindings(db, project.workspaceId, [await requireBinding(db, project, params.binding_id)]))[0] } };
  },
});

export const replaceReadBindingOperation = defineOperation({
  name: 'replaceReadBinding',
  summary: 'Replace a read binding; validated as on creation. Needs the named read grants of the endpoint it covered, and of the one it covers next.',
  access: { scopes: { anyOf: ['bindings:write'] }, project: true, actor: 'accountable' as const, grants: 'read' as const },
  effect: 'write',
  input: { params: bindingParams, body: bindingInputSchema },
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
