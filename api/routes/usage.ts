import { getUsageRatesOperation, getPricingOperation } from '../../services/usage/operations';
import { getUsageOperation, getBillingMonthOperation, listMeteredOperationsOperation, getOperationChargesOperation, getUsageAlertsOperation, putUsageAlertsOperation } from '../../services/usage/operations';
import { defineRoute, RouteSpec } from '../route-spec';

// Usage and billing records (SPEC 2.7, 4.2): org:manage, except the public pricing.

const TAG = 'Usage and billing';

export const usageRoutes: RouteSpec[] = [
  defineRoute({
    method: 'get',
    path: '/api/v1/usage',
    operation: getUsageOperation,
    tag: TAG,
  }) as RouteSpec,
  defineRoute({
    method: 'get',
    path: '/api/v1/usage/billing',
    operation: getBillingMonthOperation,
    tag: TAG,
  }) as RouteSpec,
  defineRoute({
    method: 'get',
    path: '/api/v1/usage/rates',
    operation: getUsageRatesOperation,
    tag: TAG,
  }) as RouteSpec,
  defineRoute({
    method: 'get',
    path: '/api/v1/usage/operations',
    operation: listMeteredOperationsOperation,
    tag: TAG,
  }) as RouteSpec,
  defineRoute({
    method: 'get',
    path: '/api/v1/usage/operations/:operation_id/charges',
    operation: getOperationChargesOperation,
    tag: TAG,
  }) as RouteSpec,
  defineRoute({
    method: 'get',
    path: '/api/v1/usage/alerts',
    operation: getUsageAlertsOperation,
    tag: TAG,
  }) as RouteSpec,
  defineRoute({
    method: 'put',
    path: '/api/v1/usage/alerts',
    operation: putUsageAlertsOperation,
    tag: TAG,
  }) as RouteSpec,
  defineRoute({
    method: 'get',
    path: '/api/v1/pricing',
    operation: getPricingOperation,
    tag: TAG,
  }) as RouteSpec,
];
