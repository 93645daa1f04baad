import { getUsageRatesOperation, getPricingOperation } from '../../services/usage/operations';
import { getUsageOperation, getBillingMonthOperation, listMeteredOperationsOperation, getOperationChargesOperation, getUsageAlertsOperation, putUsageAlertsOperation } from '../../services/usage/operations';
import { defineRoute, RouteSpec } from '../route-spec';
import { listResponse } from '../../schemas/common';
import { isoDate, money } from '../../schemas/usage';

// Usage and billing records (SPEC 2.7, 4.2): org:manage, except the public pricing.

const TAG = 'Usage and billing';

export const usageRoutes: RouteSpec[] = [
  defineRoute({
    method: 'get',
    path: '/api/v1/usage',
    operation: getUsageOperation,
    tag: TAG,
    responses: { 200: { description: 'Usage by kind, with exact decimal totals, and by day (every UTC day of the range, with the kinds used that day)', schema: { type: 'object', required: ['usage'], properties: { usage: { type: 'object', properties: { from: isoDate, to: isoDate, currency: { type: 'string' }, total: money, totalExact: money, byKind: { type: 'array', items: { type: 'object' } }, daily: { type: 'array', items: { type: 'object', properties: { date: isoDate, byKind: { type: 'array', items: { type: 'object' } } } } } } } } } } },
  }) as RouteSpec,
  defineRoute({
    method: 'get',
    path: '/api/v1/usage/billing',
    operation: getBillingMonthOperation,
    tag: TAG,
    responses: { 200: { description: 'The billing month', schema: { type: 'object', required: ['billing'], properties: { billing: { type: 'object' } } } } },
  }) as RouteSpec,
  defineRoute({
    method: 'get',
    path: '/api/v1/usage/rates',
    operation: getUsageRatesOperation,
    tag: TAG,
    responses: { 200: { description: 'Rates', schema: { type: 'object' } } },
  }) as RouteSpec,
  defineRoute({
    method: 'get',
    path: '/api/v1/usage/operations',
    operation: listMeteredOperationsOperation,
    tag: TAG,
    responses: { 200: { description: 'A page of operations', schema: listResponse('operations', { type: 'object' }) } },
  }) as RouteSpec,
  defineRoute({
    method: 'get',
    path: '/api/v1/usage/operations/:operation_id/charges',
    operation: getOperationChargesOperation,
    tag: TAG,
    responses: { 200: { description: 'The operation and its charges', schema: { type: 'object', properties: { operation: { type: 'object' }, charges: { type: 'array', items: { type: 'object' } } } } } },
  }) as RouteSpec,
  defineRoute({
    method: 'get',
    path: '/api/v1/usage/alerts',
    operation: getUsageAlertsOperation,
    tag: TAG,
    responses: { 200: { description: 'Alert settings', schema: { type: 'object', required: ['alerts'], properties: { alerts: { type: 'object' } } } } },
  }) as RouteSpec,
  defineRoute({
    method: 'put',
    path: '/api/v1/usage/alerts',
    operation: putUsageAlertsOperation,
    tag: TAG,
    responses: { 200: { description: 'The saved settings', schema: { type: 'object', required: ['alerts'], properties: { alerts: { type: 'object' } } } } },
  }) as RouteSpec,
  defineRoute({
    method: 'get',
    path: '/api/v1/pricing',
    operation: getPricingOperation,
    tag: TAG,
    responses: { 200: { description: 'Pricing', schema: { type: 'object' } } },
  }) as RouteSpec,
];
