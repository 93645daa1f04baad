import type { JsonSchema } from '../core/schema-validator';

// Usage, alerts and billing (SPEC 2.7, 4.2, 6).

export const money: JsonSchema = { type: 'string', pattern: '^-?[0-9]+(\\.[0-9]+)?$', description: 'A decimal amount as a string (USD), exact.' };
export const isoDate: JsonSchema = { type: 'string', format: 'date' };

export const usageQuery: JsonSchema = { type: 'object', additionalProperties: false, properties: { from: isoDate, to: isoDate } };

export const usageAlertsBody: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['monthlyBudget', 'thresholds'],
  properties: {
    monthlyBudget: { anyOf: [{ ...money, pattern: '^[0-9]{1,12}(\\.[0-9]{1,10})?$' }, { type: 'null' }] },
    thresholds: { type: 'array', maxItems: 10, items: { type: 'integer', minimum: 1, maximum: 1000 }, description: 'Percentages of the monthly budget.' },
  },
};

/** Checkout and portal sessions: where the user returns to. */
export const billingReturnBody: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: { returnPath: { type: 'string', maxLength: 500, description: 'Where the user lands afterwards: a path on Weft’s own origin (WEFT_PUBLIC_URL), starting with one "/". Anything else is a 422.' } },
};
