import type { OperationContext } from '../operations/context';
import { defineOperation, Reply, RequestInput } from '../operations/operation';
import { getApiLimits, putApiLimits } from './api-limits';
import { apiLimitsSchema, putApiLimitsBody } from '../../schemas/workspace';

export const getApiLimitsOperation = defineOperation({
  name: 'getApiLimits',
  summary: 'Request limits per 60-second window: the saved settings, or the defaults.',
  access: { scopes: { anyOf: ['org:manage'] } },
  effect: 'read',
  output: { 200: { description: 'The limits', schema: apiLimitsSchema } },
  async run({ db, principal }: OperationContext, _input: RequestInput<Record<string, string>, Record<string, never>, undefined>): Promise<Reply> {
    return { body: await getApiLimits(db, principal.workspaceId) };
  },
});

export const putApiLimitsOperation = defineOperation({
  name: 'putApiLimits',
  summary: 'Save both request limits. The current window’s usage is kept.',
  access: { scopes: { anyOf: ['org:manage'] }, actor: 'accountable' as const },
  effect: 'write',
  input: { body: putApiLimitsBody },
  output: { 200: { description: 'The saved limits', schema: apiLimitsSchema } },
  async run({ db, deps, principal }: OperationContext, { body }: RequestInput<Record<string, string>, Record<string, never>, { workspaceRequests: number; apiKeyRequests: number }>): Promise<Reply> {
    return { body: await putApiLimits(deps, db, principal.workspaceId, body) };
  },
});

export const apiLimitOperations = [
  getApiLimitsOperation,
  putApiLimitsOperation,
];
