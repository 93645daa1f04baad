import assert from 'node:assert/strict';
import { installationCreditLimit } from '../../../core/config';
import { useProcessSettings } from '../../integration/billing/process-settings';

describe('WEFT_CREDIT_LIMIT, the installation’s credit limit', () => {
  const settings = useProcessSettings(['STRIPE_SECRET_KEY', 'WEFT_CREDIT_LIMIT']);

  it('defaults to plan with Stripe and to none without it; the setting wins either way', () => {
    settings.set({});
    assert.equal(installationCreditLimit(), 'none', 'no Stripe, no way to pay: nothing pauses');
    settings.set({ STRIPE_SECRET_KEY: 'sk_test_123' });
    assert.equal(installationCreditLimit(), 'plan');
    settings.set({ STRIPE_SECRET_KEY: 'sk_test_123', WEFT_CREDIT_LIMIT: 'none' });
    assert.equal(installationCreditLimit(), 'none');
    settings.set({ WEFT_CREDIT_LIMIT: ' plan ' });
    assert.equal(installationCreditLimit(), 'plan');
  });

  it('refuses an unknown value by name (config() calls it when the API or the worker starts)', () => {
    settings.set({ WEFT_CREDIT_LIMIT: 'unlimited' });
    assert.throws(() => installationCreditLimit(), /WEFT_CREDIT_LIMIT must be one of plan, none; got "unlimited"/);
  });
});
