import { listInvoicesOperation, downgradePlanOperation, stripeWebhookOperation } from '../../services/usage/billing-operations';
import type { Operation } from '../../services/operations/operation';
import { openBillingPortalOperation, startBillingCheckoutOperation } from '../../services/usage/billing-operations';
import { defineRoute, RouteSpec } from '../route-spec';

// Stripe billing (SPEC 4.2, 6). Every route answers 503 billing_unavailable while no Stripe key is configured.

const TAG = 'Usage and billing';

/** Checkout and portal: a Stripe session URL to send the user to, returning to a same-origin path. */
function sessionRoute(path: string, operation: Operation): RouteSpec {
  return defineRoute({
    method: 'post',
    path,
    operation,
    tag: TAG,
    errors: [{ status: 502 }, { status: 503, description: 'billing_unavailable: Stripe is not configured.' }],
  }) as RouteSpec;
}

export const billingRoutes: RouteSpec[] = [
  sessionRoute('/api/v1/billing/checkout', startBillingCheckoutOperation),
  sessionRoute('/api/v1/billing/portal', openBillingPortalOperation),
  defineRoute({
    method: 'get',
    path: '/api/v1/billing/invoices',
    operation: listInvoicesOperation,
    tag: TAG,
    errors: [{ status: 503, description: 'billing_unavailable: Stripe is not configured.' }],
  }) as RouteSpec,
  defineRoute({
    method: 'post',
    path: '/api/v1/billing/downgrade',
    operation: downgradePlanOperation,
    tag: TAG,
    errors: [{ status: 502 }, { status: 503, description: 'billing_unavailable: Stripe is not configured.' }],
  }) as RouteSpec,
  defineRoute({
    method: 'post',
    path: '/api/v1/billing/stripe-webhook',
    operation: stripeWebhookOperation,
    description: 'A bad or missing signature, or one older than 300 seconds, is a 400 invalid_signature and changes nothing. A replayed event id is a no-op. Subscription events set the workspace plan; invoice events update its invoices, in event order per subscription and invoice: an event older than the one last applied is stale and changes nothing, a canceled subscription never comes back, and the plan follows the newest paying subscription. A signed event without a created time is a 422. Do not call it to change a subscription.',
    tag: TAG,
    rawBody: { mediaTypes: ['application/json'], maxBytes: 1024 * 1024, description: 'The event exactly as Stripe sent it.' },
    headers: [{ name: 'Stripe-Signature', required: true, description: 'Stripe’s signature of the raw body (t=…,v1=…); a missing, bad or older than 300 seconds one is a 400 invalid_signature.', schema: { type: 'string', minLength: 1 } }],
    // A signed event whose invoice values the database refuses (a date or amount out of range) is a 422 from the error middleware.
    errors: [{ status: 422, description: 'A signed event with a value Weft cannot store (an amount or a date out of range) or without its created time; nothing changes.' }, { status: 503 }],
  }) as RouteSpec,
];
