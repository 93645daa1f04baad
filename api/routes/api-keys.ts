import { createApiKeyOperation, listApiKeysOperation, updateApiKeyOperation, revokeApiKeyOperation } from '../../services/tenancy/api-key-operations';
import { defineRoute } from '../route-spec';

export const apiKeyRoutes = [
  defineRoute({
    method: 'post',
    path: '/api/v1/api-keys',
    operation: createApiKeyOperation,
    description: 'No idempotency contract: a retry creates another key. Needs an unrestricted key with org:manage.',
    tag: 'API keys',
  }),
  defineRoute({
    method: 'get',
    path: '/api/v1/api-keys',
    operation: listApiKeysOperation,
    tag: 'API keys',
  }),
  defineRoute({
    method: 'patch',
    path: '/api/v1/api-keys/:key_id',
    operation: updateApiKeyOperation,
    tag: 'API keys',
  }),
  defineRoute({
    method: 'delete',
    path: '/api/v1/api-keys/:key_id',
    operation: revokeApiKeyOperation,
    tag: 'API keys',
  }),
];
