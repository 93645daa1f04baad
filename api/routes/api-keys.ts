import { createApiKeyOperation, listApiKeysOperation, updateApiKeyOperation, revokeApiKeyOperation } from '../../services/tenancy/api-key-operations';
import { defineRoute } from '../route-spec';
import { listResponse } from '../../schemas/common';
import { apiKeySchema } from '../../schemas/workspace';

const keyResponse = { type: 'object', required: ['key'], properties: { key: apiKeySchema } };

export const apiKeyRoutes = [
  defineRoute({
    method: 'post',
    path: '/api/v1/api-keys',
    operation: createApiKeyOperation,
    description: 'No idempotency contract: a retry creates another key. Needs an unrestricted key with org:manage.',
    tag: 'API keys',
    responses: {
      201: {
        description: 'The new key; key.secret is shown once and cannot be recovered.',
        schema: { type: 'object', required: ['key'], properties: { key: { ...apiKeySchema, required: [...(apiKeySchema.required as string[]), 'secret'], properties: { ...(apiKeySchema.properties as object), secret: { type: 'string', 'x-weft-secret': true } } } } },
      },
    },
  }),
  defineRoute({
    method: 'get',
    path: '/api/v1/api-keys',
    operation: listApiKeysOperation,
    tag: 'API keys',
    responses: { 200: { description: 'A page of keys', schema: listResponse('keys', apiKeySchema) } },
  }),
  defineRoute({
    method: 'patch',
    path: '/api/v1/api-keys/:key_id',
    operation: updateApiKeyOperation,
    tag: 'API keys',
    responses: { 200: { description: 'The updated key', schema: keyResponse } },
  }),
  defineRoute({
    method: 'delete',
    path: '/api/v1/api-keys/:key_id',
    operation: revokeApiKeyOperation,
    tag: 'API keys',
    responses: { 204: { description: 'Revoked' } },
  }),
];
