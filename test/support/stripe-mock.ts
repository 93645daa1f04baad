import Stripe from 'stripe';
import { startStripeMock, RunningStripeMock } from '../../scripts/infra/stripe-mock';

export interface StripeMockHandle {
  /** Base URL of the running stripe-mock; read it inside tests (it is set by the `before` hook). */
  readonly url: string;
}

/**
 * Starts a private stripe-mock for the enclosing `describe` (a real HTTP peer, not a stub) and
 * stops it after. The first run on a machine builds it with Go, hence the long hook timeout.
 */
export function useStripeMock(): StripeMockHandle {
  let running: RunningStripeMock | undefined;
  before(async function () {
    this.timeout(600_000);
    running = await startStripeMock();
  });
  after(async () => {
    await running?.stop();
    running = undefined;
  });
  return {
    get url() {
      if (!running) throw new Error('stripe-mock is not running (useStripeMock’s before hook has not run).');
      return running.url;
    },
  };
}

/** The official SDK pointed at stripe-mock, which accepts any `sk_test_` key. */
export function stripeClient(url: string): Stripe {
  const { hostname, port, protocol } = new URL(url);
  return new Stripe('sk_test_123', {
    host: hostname,
    port: Number(port),
    protocol: protocol === 'https:' ? 'https' : 'http',
    // A failed call against a local mock is a bug to see at once, not a blip to retry.
    maxNetworkRetries: 0,
    telemetry: false,
  });
}
