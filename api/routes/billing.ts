import { defineRoute, RouteSpec } from '../route-spec';
import { downgrade, listInvoices, openPortal, receiveWebhook, startCheckout } from '../../services/usage/billing';
import type { JsonSchema } from '../../core/schema-validator';

// Stripe billing (SPEC 4.2, 6). Every route answers 503 billing_unavailable while no Stripe key is configured.

const TAG = 'Usage and billing';
const ADMIN = { scopes: ['org:manage'] as const, unrestrictedKey: true, accountableActor: true };
const returnBody: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: { returnPath: { type: 'string', maxLength: 500, description: 'Where the user lands afterwards: a path on Weft’s own origin (WEFT_PUBLIC_URL), starting with one "/". Anything else is a 422.' } },
};
const urlResponse = { description: 'The URL to send the user to', schema: { type: 'object', required: ['url'], properties: { url: { type: 'string', format: 'uri' } } } };

/** Checkout and portal: a Stripe session URL to send the user to, returning to a same-origin path. */
function sessionRoute(path: string, operationId: string, summary: string, open: typeof startCheckout): RouteSpec {
  return defineRoute<Record<string, string>, Record<string, never>, { returnPath?: string }>({
    method: 'post',
    path,
    operationId,
    summary,
    tag: TAG,
    auth: ADMIN,
    transaction: false,
    body: returnBody,
    errors: [{ status: 502 }, { status: 503, description: 'billing_unavailable: Stripe is not configured.' }],
    responses: { 200: urlResponse },
    async handler({ db, principal, body }) {
      return { body: await open(db, principal, body.returnPath) };
    },
  }) as RouteSpec;
}

export const billingRoutes: RouteSpec[] = [
  sessionRoute('/api/v1/billing/checkout', 'startBillingCheckout', 'A Stripe Checkout URL to subscribe to the team plan.', startCheckout),
  sessionRoute('/api/v1/billing/portal', 'openBillingPortal', 'A Stripe customer portal URL (payment methods, invoices, cancellation).', openPortal),
  defineRoute({
    method: 'get',
    path: '/api/v1/billing/invoices',
    operationId: 'listInvoices',
    summary: 'Invoices as Stripe reported them through the webhook, newest first.',
    tag: TAG,
    auth: { scopes: ['org:manage'] },
    errors: [{ status: 503, description: 'billing_unavailable: Stripe is not configured.' }],
    responses: { 200: { description: 'Invoices', schema: { type: 'object', required: ['invoices'], properties: { invoices: { type: 'array', items: { type: 'object' } } } } } },
    async handler({ db, principal }) {
      return { body: await listInvoices(db, principal) };
    },
  }) as RouteSpec,
  defineRoute({
    method: 'post',
    path: '/api/v1/billing/downgrade',
    operationId: 'downgradePlan',
    summary: 'Cancel the subscription and return to the free plan now. An intentional administration action.',
    tag: TAG,
    auth: ADMIN,
    errors: [{ status: 502 }, { status: 503, description: 'billing_unavailable: Stripe is not configured.' }],
    responses: { 200: { description: 'The new plan', schema: { type: 'object', properties: { plan: { type: 'string' } } } } },
    async handler({ db, principal }) {
      return { body: await downgrade(db, principal) };
    },
  }) as RouteSpec,
  defineRoute<Record<string, string>, Record<string, never>, string>({
    method: 'post',
    path: '/api/v1/billing/stripe-webhook',
    operationId: 'stripeWebhook',
    summary: 'Stripe’s event callback (SPEC 6): verified against the raw body and Stripe-Signature; no API key.',
    description: 'A bad or missing signature, or one older than 300 seconds, is a 400 invalid_signature and changes nothing. A replayed event id is a no-op. Subscription events set the workspace plan; invoice events update its invoices. Do not call it to change a subscription.',
    tag: TAG,
    auth: { public: true, reason: 'Stripe authenticates by signature, not by key (SPEC 6).' },
    transaction: false,
    rawBody: { mediaTypes: ['application/json'], maxBytes: 1024 * 1024, description: 'The event exactly as Stripe sent it.' },
    headers: [{ name: 'Stripe-Signature', required: true, description: 'Stripe’s signature of the raw body (t=…,v1=…); a missing, bad or older than 300 seconds one is a 400 invalid_signature.', schema: { type: 'string', minLength: 1 } }],
    // A signed event whose invoice values the database refuses (a date or amount out of range) is a 422 from the error middleware.
    errors: [{ status: 422, description: 'A signed event with a value Weft cannot store (an amount or a date out of range); nothing changes.' }, { status: 503 }],
    responses: { 200: { description: 'Received', schema: { type: 'object', properties: { received: { type: 'boolean' }, duplicate: { type: 'boolean' } } } } },
    async handler({ deps, body, koa }) {
      return { body: await receiveWebhook(deps.db, body, koa.get('Stripe-Signature') || undefined) };
    },
  }) as RouteSpec,
];
