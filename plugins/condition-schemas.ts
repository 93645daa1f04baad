import type { JsonSchema } from '../core/schema-validator';

// Conditions and ordering shared by records reads, capability reads and the governed write action (SPEC 2.9, 4.4).
const fieldName: JsonSchema = { type: 'string', minLength: 1, maxLength: 200 };

export const conditionSchema: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['field', 'op'],
  properties: {
    field: fieldName,
    op: { type: 'string', enum: ['eq', 'ne', 'in', 'exists', 'gt', 'gte', 'lt', 'lte'] },
    value: {},
    values: { type: 'array', minItems: 1, maxItems: 500 },
  },
  // in takes values; the comparisons take value; exists takes neither. (Ajv's strict mode wants a
  // required property declared beside `required`; `true` adds no rule.)
  allOf: [
    { if: { properties: { op: { const: 'in' } }, required: ['op'] }, then: { properties: { values: true }, required: ['values'] } },
    { if: { properties: { op: { enum: ['eq', 'ne', 'gt', 'gte', 'lt', 'lte'] } }, required: ['op'] }, then: { properties: { value: true }, required: ['value'] } },
  ],
};

/** The where list shared by records reads and the governed write action (SPEC 2.9). */
export const whereSchema: JsonSchema = { type: 'array', minItems: 1, maxItems: 100, items: conditionSchema };

export const orderBySchema: JsonSchema = {
  type: 'array',
  minItems: 1,
  maxItems: 10,
  items: {
    type: 'object',
    additionalProperties: false,
    required: ['field'],
    properties: { field: fieldName, direction: { type: 'string', enum: ['asc', 'desc'], default: 'asc' } },
  },
};

