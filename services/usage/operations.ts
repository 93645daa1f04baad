import type { OperationContext } from '../operations/context';
import { defineOperation, Reply, RequestInput } from '../operations/operation';
import type { PageRequest } from '../shared/pagination';
import { getAlerts, putAlerts } from './alerts';
import { pricing, workspaceRates } from './plans';
import { billingMonth, listOperations, MAX_USAGE_DAYS, operationCharges, usageSummary } from './usage-report';
import { idParams, listQuery, listResponse, uuid } from '../../schemas/common';
import { isoDate, money, usageAlertsBody, usageQuery } from '../../schemas/usage';

const ADMIN = { scopes: { anyOf: ['org:manage'] } } as const;

export const getUsageOperation = defineOperation({
  name: 'getUsage',
  summary: `Metered usage of the workspace between two inclusive UTC dates (default the last 30 days; at most ${MAX_USAGE_DAYS} days), by kind and by day.`,
  access: ADMIN,
  effect: 'read',
  input: { query: usageQuery },
  output: { 200: { description: 'Usage by kind, with exact decimal totals, and by day (every UTC day of the range, with the kinds used that day)', schema: { type: 'object', required: ['usage'], properties: { usage: { type: 'object', properties: { from: isoDate, to: isoDate, currency: { type: 'string' }, total: money, totalExact: money, byKind: { type: 'array', items: { type: 'object' } }, daily: { type: 'array', items: { type: 'object', properties: { date: isoDate, byKind: { type: 'array', items: { type: 'object' } } } } } } } } } } },
  async run(ctx: OperationContext, { query }: RequestInput<Record<string, string>, { from?: string; to?: string }, undefined>): Promise<Reply> {
    return { body: { usage: await usageSummary(ctx, query) } };
  },
});

export const getBillingMonthOperation = defineOperation({
  name: 'getBillingMonth',
  summary: 'The current billing month: plan, included credit, used, remaining, overage, and whether paid work is paused.',
  access: ADMIN,
  effect: 'read',
  output: { 200: { description: 'The billing month', schema: { type: 'object', required: ['billing'], properties: { billing: { type: 'object' } } } } },
  async run(ctx: OperationContext, _input: RequestInput<Record<string, string>, Record<string, never>, undefined>): Promise<Reply> {
    return { body: { billing: await billingMonth(ctx) } };
  },
});

export const listMeteredOperationsOperation = defineOperation({
  name: 'listMeteredOperations',
  summary: 'Metered operations, newest first; filter by parent operation.',
  access: ADMIN,
  effect: 'read',
  input: { query: listQuery({ parentOperationId: uuid }) },
  output: { 200: { description: 'A page of operations', schema: listResponse('operations', { type: 'object' }) } },
  async run(ctx: OperationContext, { query }: RequestInput<Record<string, string>, PageRequest & { parentOperationId?: string }, undefined>): Promise<Reply> {
    const { limit, offset, ...filter } = query;
    return { body: await listOperations(ctx, { limit, offset }, filter) };
  },
});

export const getOperationChargesOperation = defineOperation({
  name: 'getOperationCharges',
  summary: 'The charges of one metered operation: item, quantity, unit price and amount.',
  access: ADMIN,
  effect: 'read',
  input: { params: idParams('operation_id') },
  output: { 200: { description: 'The operation and its charges', schema: { type: 'object', properties: { operation: { type: 'object' }, charges: { type: 'array', items: { type: 'object' } } } } } },
  async run(ctx: OperationContext, { params }: RequestInput<{ operation_id: string }, Record<string, never>, undefined>): Promise<Reply> {
    return { body: await operationCharges(ctx, params.operation_id) };
  },
});

export const getUsageAlertsOperation = defineOperation({
  name: 'getUsageAlerts',
  summary: 'Alert settings (monthlyBudget and thresholds in percent) and the alerts raised. Alerts never stop work.',
  access: ADMIN,
  effect: 'read',
  output: { 200: { description: 'Alert settings', schema: { type: 'object', required: ['alerts'], properties: { alerts: { type: 'object' } } } } },
  async run(ctx: OperationContext, _input: RequestInput<Record<string, string>, Record<string, never>, undefined>): Promise<Reply> {
    return { body: { alerts: await getAlerts(ctx) } };
  },
});

export const putUsageAlertsOperation = defineOperation({
  name: 'putUsageAlerts',
  summary: 'Save the monthly budget and thresholds. Crossing a threshold records an alert event; it is never a hard stop.',
  access: { ...ADMIN, actor: 'accountable' as const },
  effect: 'write',
  input: { body: usageAlertsBody },
  output: { 200: { description: 'The saved settings', schema: { type: 'object', required: ['alerts'], properties: { alerts: { type: 'object' } } } } },
  async run(ctx: OperationContext, { body }: RequestInput<Record<string, string>, Record<string, never>, { monthlyBudget: string | null; thresholds: number[] }>): Promise<Reply> {
    return { body: { alerts: await putAlerts(ctx, body) } };
  },
});

export const getUsageRatesOperation = defineOperation({
  name: 'getUsageRates',
  summary: 'The unit prices the workspace’s operations are charged at.',
  access: ADMIN,
  effect: 'read',
  output: { 200: { description: 'Rates', schema: { type: 'object' } } },
  async run(_ctx: OperationContext, _input: RequestInput): Promise<Reply> {
    return { body: workspaceRates() };
  },
});

export const getPricingOperation = defineOperation({
  name: 'getPricing',
  summary: 'Available plans and unit prices. Public: no credential.',
  access: { public: 'SPEC 4.2: pricing is public.' },
  effect: 'read',
  output: { 200: { description: 'Pricing', schema: { type: 'object' } } },
  async run(_ctx: OperationContext, _input: RequestInput): Promise<Reply> {
    return { body: pricing() };
  },
});

export const usageOperations = [
  getUsageOperation,
  getBillingMonthOperation,
  listMeteredOperationsOperation,
  getOperationChargesOperation,
  getUsageAlertsOperation,
  putUsageAlertsOperation,
  getUsageRatesOperation,
  getPricingOperation,
];
