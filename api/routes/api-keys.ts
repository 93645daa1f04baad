import { defineRoute } from '../route-spec';
import { createApiKey, CreateApiKeyInput, listApiKeys, revokeApiKey, updateApiKey, UpdateApiKeyInput } from '../../services/tenancy/api-keys';
import type { PageRequest } from '../../services/shared/pagination';
import { idParams, listQuery, listResponse } from '../schemas/common';
import { apiKeySchema, createApiKeyBody, updateApiKeyBody } from '../schemas/workspace';

const keyParams = idParams('key_id');
const keyResponse = { type: 'object', required: ['key'], properties: { key: apiKeySchema } };

export const apiKeyRoutes = [
  defineRoute<Record<string, string>, Record<string, never>, CreateApiKeyInput>({
    method: 'post',
    path: '/api/v1/api-keys',
    operationId: 'createApiKey',
    summary: 'Create an API key. The secret is in this response only.',
    description: 'No idempotency contract: a retry creates another key. Needs an unrestricted key with org:manage.',
    tag: 'API keys',
    auth: { scopes: ['org:manage'], unrestrictedKey: true, accountableActor: true },
    body: createApiKeyBody,
    responses: {
      201: {
        description: 'The new key; key.secret is shown once and cannot be recovered.',
        schema: { type: 'object', required: ['key'], properties: { key: { ...apiKeySchema, required: [...(apiKeySchema.required as string[]), 'secret'], properties: { ...(apiKeySchema.properties as object), secret: { type: 'string', 'x-weft-secret': true } } } } },
      },
    },
    async handler({ db, principal, body }) {
      const { key, secret } = await createApiKey(db, principal, body);
      return { status: 201, body: { key: { ...key, secret } } };
    },
  }),
  defineRoute<Record<string, string>, PageRequest>({
    method: 'get',
    path: '/api/v1/api-keys',
    operationId: 'listApiKeys',
    summary: 'List the workspace’s keys that are not revoked (never their secrets).',
    tag: 'API keys',
    auth: { scopes: ['org:manage'] },
    query: listQuery(),
    responses: { 200: { description: 'A page of keys', schema: listResponse('keys', apiKeySchema) } },
    async handler({ db, principal, query }) {
      return { body: await listApiKeys(db, principal.workspaceId, query) };
    },
  }),
  defineRoute<{ key_id: string }, Record<string, never>, UpdateApiKeyInput>({
    method: 'patch',
    path: '/api/v1/api-keys/:key_id',
    operationId: 'updateApiKey',
    summary: 'Change a key’s project allowlist, workspaceResources or read grants.',
    tag: 'API keys',
    auth: { scopes: ['org:manage'], accountableActor: true },
    params: keyParams,
    body: updateApiKeyBody,
    responses: { 200: { description: 'The updated key', schema: keyResponse } },
    async handler({ db, principal, params, body }) {
      return { body: { key: await updateApiKey(db, principal.workspaceId, params.key_id, body) } };
    },
  }),
  defineRoute<{ key_id: string }>({
    method: 'delete',
    path: '/api/v1/api-keys/:key_id',
    operationId: 'revokeApiKey',
    summary: 'Revoke a key, irreversibly. Earlier writes and run history remain.',
    tag: 'API keys',
    auth: { scopes: ['org:manage'], accountableActor: true },
    params: keyParams,
    responses: { 204: { description: 'Revoked' } },
    async handler({ db, principal, params }) {
      await revokeApiKey(db, principal.workspaceId, params.key_id);
      return { status: 204 };
    },
  }),
];
