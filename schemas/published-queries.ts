import type { JsonSchema } from '../core/schema-validator';
import { EXECUTION_DEFAULTS } from '../services/ontology/query-execution';
import { idParams, listQuery, uuid } from './common';

// Published queries (SPEC 2.5, 3.1, 3.4, 4.5): definitions, releases, execution and jobs.

export const queryParams = idParams('project_id', 'query_id');

export const queryInputSchema: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'sparql', 'inputSchema', 'outputSchema'],
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 200 },
    description: { type: 'string', maxLength: 2000 },
    sparql: {
      type: 'string',
      minLength: 1,
      maxLength: 100_000,
      description: 'A SPARQL SELECT over the project’s ontology; ":" is its base IRI. Variables named in inputSchema ($minAge) are input parameters, bound as typed RDF terms in the parsed query, never spliced into text. Every selected variable is described by outputSchema.',
    },
    inputSchema: { type: 'object', description: 'JSON Schema of the input object: type object, properties of type string (format uri binds an IRI), integer, number or boolean, and required.' },
    outputSchema: { type: 'object', description: 'JSON Schema of one result row: type object with a property per selected variable. Rows are checked against it.' },
  },
};

export const releaseDiffQuery: JsonSchema = { type: 'object', additionalProperties: false, required: ['queryVersionId'], properties: { queryVersionId: uuid } };
export const publishReleaseBody: JsonSchema = { type: 'object', additionalProperties: false, required: ['expectedQueryVersionId'], properties: { expectedQueryVersionId: uuid, acknowledgeBreakingChanges: { type: 'boolean', default: false } } };
export const releaseParams: JsonSchema = { type: 'object', required: ['project_id', 'query_id', 'version'], properties: { project_id: uuid, query_id: uuid, version: { type: 'string', pattern: '^[1-9][0-9]{0,8}$', description: 'The numeric release version.' } } };
export const retireReleaseBody: JsonSchema = { type: 'object', additionalProperties: false, required: ['status'], properties: { status: { const: 'retired' } } };

export const executeOptionsQuery: JsonSchema = { type: 'object', additionalProperties: false, properties: { version: { type: 'integer', minimum: 1 }, cursor: { type: 'string', maxLength: 2000, description: 'A continuation from an earlier answer.' } } };
export const executeBodySchema: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    input: { type: 'object', default: {}, description: 'Checked against the release’s input contract.' },
    options: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        limit: { type: 'integer', minimum: 1, maximum: EXECUTION_DEFAULTS.maxLimit, description: `Rows per answer (default ${EXECUTION_DEFAULTS.limit}, cap ${EXECUTION_DEFAULTS.maxLimit}).` },
        offset: { type: 'integer', minimum: 0, maximum: 1_000_000, description: 'Rows to skip (default 0).' },
      },
    },
  },
};

export const jobParams = idParams('project_id', 'query_id', 'job_id');
export const queryExecutionsQuery = listQuery({ queryId: uuid, projectId: uuid, executionId: uuid });
