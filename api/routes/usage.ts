import { defineRoute, RouteSpec } from '../route-spec';
import type { PageRequest } from '../../services/shared/pagination';
import { billingMonth, getAlerts, listOperations, MAX_USAGE_DAYS, operationCharges, pricing, putAlerts, usageSummary, workspaceRates } from '../../services/usage/usage';
import { idParams, listQuery, listResponse, uuid } from '../schemas/common';
import type { JsonSchema } from '../../core/schema-validator';

// Usage and billing records (SPEC 2.7, 4.2): org:manage, except the public pricing.

const TAG = 'Usage and billing';
const ADMIN = { scopes: ['org:manage'] as const };
const money: JsonSchema = { type: 'string', pattern: '^-?[0-9]+(\\.[0-9]+)?$', description: 'A decimal amount as a string (USD), exact.' };
const isoDate: JsonSchema = { type: 'string', format: 'date' };

export const usageRoutes: RouteSpec[] = [
  defineRoute<Record<string, string>, { from?: string; to?: string }>({
    method: 'get',
    path: '/api/v1/usage',
    operationId: 'getUsage',
    summary: `Metered usage of the workspace between two inclusive UTC dates (default the last 30 days; at most ${MAX_USAGE_DAYS} days).`,
    tag: TAG,
    auth: ADMIN,
    query: { type: 'object', additionalProperties: false, properties: { from: isoDate, to: isoDate } },
    responses: { 200: { description: 'Usage by kind, with exact decimal totals', schema: { type: 'object', properties: { from: isoDate, to: isoDate, currency: { type: 'string' }, total: money, totalExact: money, byKind: { type: 'array', items: { type: 'object' } } } } } },
    async handler({ db, principal, query }) {
      return { body: { usage: await usageSummary(db, principal, query) } };
    },
  }) as RouteSpec,
  defineRoute({
    method: 'get',
    path: '/api/v1/usage/billing',
    operationId: 'getBillingMonth',
    summary: 'The current billing month: plan, included credit, used, remaining, overage, and whether paid work is paused.',
    tag: TAG,
    auth: ADMIN,
    responses: { 200: { description: 'The billing month', schema: { type: 'object', required: ['billing'], properties: { billing: { type: 'object' } } } } },
    async handler({ db, principal }) {
      return { body: { billing: await billingMonth(db, principal) } };
    },
  }) as RouteSpec,
  defineRoute({
    method: 'get',
    path: '/api/v1/usage/rates',
    operationId: 'getUsageRates',
    summary: 'The unit prices the workspace’s operations are charged at.',
    tag: TAG,
    auth: ADMIN,
    responses: { 200: { description: 'Rates', schema: { type: 'object' } } },
    async handler() {
      return { body: workspaceRates() };
    },
  }) as RouteSpec,
  defineRoute<Record<string, string>, PageRequest & { parentOperationId?: string }>({
    method: 'get',
    path: '/api/v1/usage/operations',
    operationId: 'listMeteredOperations',
    summary: 'Metered operations, newest first; filter by parent operation.',
    tag: TAG,
    auth: ADMIN,
    query: listQuery({ parentOperationId: uuid }),
    responses: { 200: { description: 'A page of operations', schema: listResponse('operations', { type: 'object' }) } },
    async handler({ db, principal, query }) {
      const { limit, offset, ...filter } = query;
      return { body: await listOperations(db, principal, { limit, offset }, filter) };
    },
  }) as RouteSpec,
  defineRoute<{ operation_id: string }>({
    method: 'get',
    path: '/api/v1/usage/operations/:operation_id/charges',
    operationId: 'getOperationCharges',
    summary: 'The charges of one metered operation: item, quantity, unit price and amount.',
    tag: TAG,
    auth: ADMIN,
    params: idParams('operation_id'),
    responses: { 200: { description: 'The operation and its charges', schema: { type: 'object', properties: { operation: { type: 'object' }, charges: { type: 'array', items: { type: 'object' } } } } } },
    async handler({ db, principal, params }) {
      return { body: await operationCharges(db, principal, params.operation_id) };
    },
  }) as RouteSpec,
  defineRoute({
    method: 'get',
    path: '/api/v1/usage/alerts',
    operationId: 'getUsageAlerts',
    summary: 'Alert settings (monthlyBudget and thresholds in percent) and the alerts raised. Alerts never stop work.',
    tag: TAG,
    auth: ADMIN,
    responses: { 200: { description: 'Alert settings', schema: { type: 'object', required: ['alerts'], properties: { alerts: { type: 'object' } } } } },
    async handler({ db, principal }) {
      return { body: { alerts: await getAlerts(db, principal) } };
    },
  }) as RouteSpec,
  defineRoute<Record<string, string>, Record<string, never>, { monthlyBudget: string | null; thresholds: number[] }>({
    method: 'put',
    path: '/api/v1/usage/alerts',
    operationId: 'putUsageAlerts',
    summary: 'Save the monthly budget and thresholds. Crossing a threshold records an alert event; it is never a hard stop.',
    tag: TAG,
    auth: { ...ADMIN, accountableActor: true },
    body: {
      type: 'object',
      additionalProperties: false,
      required: ['monthlyBudget', 'thresholds'],
      properties: {
        monthlyBudget: { anyOf: [{ ...money, pattern: '^[0-9]{1,12}(\\.[0-9]{1,10})?$' }, { type: 'null' }] },
        thresholds: { type: 'array', maxItems: 10, items: { type: 'integer', minimum: 1, maximum: 1000 }, description: 'Percentages of the monthly budget.' },
      },
    },
    responses: { 200: { description: 'The saved settings', schema: { type: 'object', required: ['alerts'], properties: { alerts: { type: 'object' } } } } },
    async handler({ db, principal, body }) {
      return { body: { alerts: await putAlerts(db, principal, body) } };
    },
  }) as RouteSpec,
  defineRoute({
    method: 'get',
    path: '/api/v1/pricing',
    operationId: 'getPricing',
    summary: 'Available plans and unit prices. Public: no credential.',
    tag: TAG,
    auth: { public: true, reason: 'SPEC 4.2: pricing is public.' },
    responses: { 200: { description: 'Pricing', schema: { type: 'object' } } },
    async handler() {
      return { body: pricing() };
    },
  }) as RouteSpec,
];
