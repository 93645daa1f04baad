import type { OperationContext } from '../operations/context';
import { defineOperation, Reply, RequestInput } from '../operations/operation';
import { downgrade, listInvoices, openPortal, receiveWebhook, startCheckout } from './billing';
import { billingReturnBody } from '../../schemas/usage';

const urlResponse = { description: 'The URL to send the user to', schema: { type: 'object', required: ['url'], properties: { url: { type: 'string', format: 'uri' } } } };

const ADMIN = { scopes: { anyOf: ['org:manage'] }, unrestrictedKey: true, actor: 'accountable' as const } as const;

/** Checkout and portal: a Stripe session URL to send the user to, returning to a same-origin path. */
function sessionOperation(name: string, summary: string, open: typeof startCheckout) {
  return defineOperation({
    name,
    summary,
    access: ADMIN,
    effect: 'external',
    input: { body: billingReturnBody },
    output: { 200: urlResponse },
    async run(ctx: OperationContext, { body }: RequestInput<Record<string, string>, Record<string, never>, { returnPath?: string }>): Promise<Reply> {
      return { body: await open(ctx, body?.returnPath) };
    },
  });
}

export const startBillingCheckoutOperation = sessionOperation('startBillingCheckout', 'A Stripe Checkout URL to subscribe to the team plan.', startCheckout);
export const openBillingPortalOperation = sessionOperation('openBillingPortal', 'A Stripe customer portal URL (payment methods, invoices, cancellation).', openPortal);

export const listInvoicesOperation = defineOperation({
  name: 'listInvoices',
  summary: 'Invoices as Stripe reported them through the webhook, newest first.',
  access: { scopes: { anyOf: ['org:manage'] } },
  effect: 'read',
  output: { 200: { description: 'Invoices', schema: { type: 'object', required: ['invoices'], properties: { invoices: { type: 'array', items: { type: 'object' } } } } } },
  async run(ctx: OperationContext, _input: RequestInput<Record<string, string>, Record<string, never>, undefined>): Promise<Reply> {
    return { body: await listInvoices(ctx) };
  },
});

export const downgradePlanOperation = defineOperation({
  name: 'downgradePlan',
  summary: 'Cancel the subscription and return to the free plan now. An intentional administration action.',
  access: ADMIN,
  // Cancels at Stripe with no transaction open, then records the cancellation in one of its own.
  effect: 'external',
  output: { 200: { description: 'The new plan', schema: { type: 'object', properties: { plan: { type: 'string' } } } } },
  async run(ctx: OperationContext, _input: RequestInput<Record<string, string>, Record<string, never>, undefined>): Promise<Reply> {
    return { body: await downgrade(ctx) };
  },
});

export const stripeWebhookOperation = defineOperation({
  name: 'stripeWebhook',
  summary: 'Stripe’s event callback (SPEC 6): verified against the raw body and Stripe-Signature; no API key.',
  access: { public: 'Stripe authenticates by signature, not by key (SPEC 6).' },
  effect: 'external',
  output: {
    200: {
      description: 'Received',
      schema: { type: 'object', properties: { received: { type: 'boolean' }, duplicate: { type: 'boolean' }, outcome: { type: 'string', enum: ['applied', 'stale', 'ignored', 'no_workspace'], description: 'What the event did; absent for a replayed id.' } } },
    },
  },
  async run({ deps }: OperationContext, { body, headers }: RequestInput<Record<string, string>, Record<string, never>, string>): Promise<Reply> {
    return { body: await receiveWebhook(deps, body, headers?.['stripe-signature'] || undefined) };
  },
});

export const billingOperations = [
  startBillingCheckoutOperation,
  openBillingPortalOperation,
  listInvoicesOperation,
  downgradePlanOperation,
  stripeWebhookOperation,
];
