import type { OperationContext } from '../operations/context';
import { defineOperation, Reply, RequestInput } from '../operations/operation';
import { createApiKey, CreateApiKeyInput, listApiKeys, revokeApiKey, updateApiKey, UpdateApiKeyInput } from './api-keys';
import type { PageRequest } from '../shared/pagination';
import { idParams, listQuery, listResponse } from '../../schemas/common';
import { apiKeySchema, createApiKeyBody, updateApiKeyBody } from '../../schemas/workspace';

const keyResponse = { type: 'object', required: ['key'], properties: { key: apiKeySchema } };

export const createApiKeyOperation = defineOperation({
  name: 'createApiKey',
  summary: 'Create an API key. The secret is in this response only.',
  access: { scopes: { anyOf: ['org:manage'] }, unrestrictedKey: true, actor: 'accountable' as const },
  effect: 'write',
  input: { body: createApiKeyBody },
  output: {
    201: {
      description: 'The new key; key.secret is shown once and cannot be recovered.',
      schema: { type: 'object', required: ['key'], properties: { key: { ...apiKeySchema, required: [...(apiKeySchema.required as string[]), 'secret'], properties: { ...(apiKeySchema.properties as object), secret: { type: 'string', 'x-weft-secret': true } } } } },
    },
  },
  async run({ db, deps, principal }: OperationContext, { body }: RequestInput<Record<string, string>, Record<string, never>, CreateApiKeyInput>): Promise<Reply> {
    const { key, secret } = await createApiKey(deps, db, principal, body);
    return { status: 201, body: { key: { ...key, secret } } };
  },
});

export const listApiKeysOperation = defineOperation({
  name: 'listApiKeys',
  summary: 'List the workspace’s keys that are not revoked (never their secrets).',
  access: { scopes: { anyOf: ['org:manage'] } },
  effect: 'read',
  input: { query: listQuery() },
  output: { 200: { description: 'A page of keys', schema: listResponse('keys', apiKeySchema) } },
  async run(ctx: OperationContext, { query }: RequestInput<Record<string, string>, PageRequest, undefined>): Promise<Reply> {
    return { body: await listApiKeys(ctx, query) };
  },
});

export const updateApiKeyOperation = defineOperation({
  name: 'updateApiKey',
  summary: 'Change a key’s project allowlist, workspaceResources or read grants.',
  access: { scopes: { anyOf: ['org:manage'] }, actor: 'accountable' as const },
  effect: 'write',
  input: { params: idParams('key_id'), body: updateApiKeyBody },
  output: { 200: { description: 'The updated key', schema: keyResponse } },
  async run(ctx: OperationContext, { params, body }: RequestInput<{ key_id: string }, Record<string, never>, UpdateApiKeyInput>): Promise<Reply> {
    return { body: { key: await updateApiKey(ctx, params.key_id, body) } };
  },
});

export const revokeApiKeyOperation = defineOperation({
  name: 'revokeApiKey',
  summary: 'Revoke a key, irreversibly. Earlier writes and run history remain.',
  access: { scopes: { anyOf: ['org:manage'] }, actor: 'accountable' as const },
  effect: 'write',
  input: { params: idParams('key_id') },
  output: { 204: { description: 'Revoked' } },
  async run(ctx: OperationContext, { params }: RequestInput<{ key_id: string }, Record<string, never>, undefined>): Promise<Reply> {
    await revokeApiKey(ctx, params.key_id);
    return { status: 204 };
  },
});

export const apiKeyOperations = [
  createApiKeyOperation,
  listApiKeysOperation,
  updateApiKeyOperation,
  revokeApiKeyOperation,
];
