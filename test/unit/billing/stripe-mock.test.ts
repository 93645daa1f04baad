import assert from 'node:assert/strict';
import Stripe from 'stripe';
import { stripeClient, useStripeMock } from '../../support/stripe-mock';

/**
 * The billing test infrastructure itself: the official SDK against a real stripe-mock process,
 * which validates every request against Stripe's OpenAPI spec and answers with spec-shaped
 * fixtures (it keeps no state, so ids differ between calls and only echoed fields round-trip).
 */
describe('Stripe through stripe-mock', () => {
  const mock = useStripeMock();
  let stripe: Stripe;
  before(() => {
    stripe = stripeClient(mock.url);
  });

  it('creates a customer', async () => {
    const customer = await stripe.customers.create({ email: 'owner@example.com', metadata: { workspaceId: 'ws_1' } });
    assert.match(customer.id, /^cus_\w+$/);
    assert.equal(customer.object, 'customer');
    assert.equal(customer.email, 'owner@example.com');
    assert.equal(customer.livemode, false);
  });

  it('creates a subscription Checkout Session with a hosted URL', async () => {
    const session = await stripe.checkout.sessions.create({
      mode: 'subscription',
      customer: 'cus_test_owner',
      client_reference_id: 'ws_1',
      line_items: [{ price: 'price_team_monthly', quantity: 1 }],
      success_url: 'https://weft.example/billing/done',
      cancel_url: 'https://weft.example/billing',
    });
    assert.match(session.id, /^cs_test_\w+$/);
    assert.equal(session.object, 'checkout.session');
    assert.equal(session.mode, 'subscription');
    assert.equal(session.customer, 'cus_test_owner');
    assert.equal(session.client_reference_id, 'ws_1');
    assert.equal(session.success_url, 'https://weft.example/billing/done');
    assert.match(session.url ?? '', /^https:\/\/checkout\.stripe\.com\//);
  });

  it('rejects a request that breaks the API spec, as Stripe would', async () => {
    await assert.rejects(
      stripe.checkout.sessions.create({ mode: 'monthly' as Stripe.Checkout.SessionCreateParams.Mode, success_url: 'https://weft.example/' }),
      (error: Error) => {
        assert.ok(error instanceof Stripe.errors.StripeInvalidRequestError, String(error));
        assert.equal(error.statusCode, 400);
        assert.match(error.message, /mode/);
        return true;
      },
    );
  });

  it('rejects a key that is not a test-mode secret key', async () => {
    const withPublishableKey = new Stripe('pk_test_123', { host: '127.0.0.1', port: new URL(mock.url).port, protocol: 'http', maxNetworkRetries: 0 });
    await assert.rejects(withPublishableKey.customers.create({}), (error: Error) => {
      assert.ok(error instanceof Stripe.errors.StripeAuthenticationError, String(error));
      assert.equal(error.statusCode, 401);
      return true;
    });
  });

  it('creates a billing portal session', async () => {
    const portal = await stripe.billingPortal.sessions.create({ customer: 'cus_test_owner', return_url: 'https://weft.example/billing' });
    assert.match(portal.id, /^bps_\w+$/);
    assert.equal(portal.object, 'billing_portal.session');
    assert.equal(portal.customer, 'cus_test_owner');
    assert.equal(portal.return_url, 'https://weft.example/billing');
    assert.match(portal.url, /^https:\/\//);
  });

  it('lists invoices', async () => {
    const invoices = await stripe.invoices.list({ customer: 'cus_test_owner', limit: 3 });
    assert.equal(invoices.object, 'list');
    assert.equal(invoices.url, '/v1/invoices');
    assert.ok(invoices.data.length >= 1);
    for (const invoice of invoices.data) {
      assert.match(invoice.id ?? '', /^in_\w+$/);
      assert.equal(invoice.object, 'invoice');
      assert.equal(typeof invoice.amount_due, 'number');
    }
  });

  it('records a Billing Meter event, and refuses one without an event name', async () => {
    const event = await stripe.billing.meterEvents.create({
      event_name: 'weft_pipeline_rows',
      identifier: 'run-1',
      payload: { stripe_customer_id: 'cus_test_owner', value: '42' },
    });
    assert.equal(event.object, 'billing.meter_event');
    assert.equal(event.event_name, 'weft_pipeline_rows');
    assert.equal(event.identifier, 'run-1');
    assert.equal(event.livemode, false);

    await assert.rejects(
      stripe.billing.meterEvents.create({ payload: { value: '1' } } as unknown as Stripe.Billing.MeterEventCreateParams),
      (error: Error) => error instanceof Stripe.errors.StripeInvalidRequestError && /event_name/.test(error.message),
    );
  });

  describe('webhook signatures', () => {
    const secret = 'whsec_test_secret';
    const payload = JSON.stringify({ id: 'evt_test_1', object: 'event', type: 'invoice.paid', data: { object: { id: 'in_test_1', object: 'invoice' } } });
    const tolerance = 300;

    it('accepts a payload signed with the endpoint secret', () => {
      const header = stripe.webhooks.generateTestHeaderString({ payload, secret });
      assert.match(header, /^t=\d+,v1=[0-9a-f]{64}$/);
      const event = stripe.webhooks.constructEvent(payload, header, secret, tolerance);
      assert.equal(event.id, 'evt_test_1');
      assert.equal(event.type, 'invoice.paid');
    });

    it('rejects a wrong secret, a changed payload and a timestamp older than the tolerance', () => {
      const isSignatureError = (error: Error) => error instanceof Stripe.errors.StripeSignatureVerificationError;
      const header = stripe.webhooks.generateTestHeaderString({ payload, secret });
      assert.throws(() => stripe.webhooks.constructEvent(payload, header, 'whsec_other_secret', tolerance), isSignatureError);
      assert.throws(() => stripe.webhooks.constructEvent(payload.replace('invoice.paid', 'invoice.voided'), header, secret, tolerance), isSignatureError);

      const old = Math.floor(Date.now() / 1000) - tolerance - 60;
      const oldHeader = stripe.webhooks.generateTestHeaderString({ payload, secret, timestamp: old });
      assert.throws(
        () => stripe.webhooks.constructEvent(payload, oldHeader, secret, tolerance),
        (error: Error) => isSignatureError(error) && /tolerance/i.test(error.message),
      );
      // The same old header is fine without the tolerance check: only its age was wrong.
      assert.equal(stripe.webhooks.constructEvent(payload, oldHeader, secret, 0).id, 'evt_test_1');
    });
  });
});
