import type { JsonSchema } from '../../core/schema-validator';
import type { CapabilityDefinition } from '../capability';

export type WindowFormat = 'iso' | 'date' | 'epoch_ms' | 'epoch_s';
export type ParameterLocation = 'query' | 'body';
export type PaginationType = 'none' | 'page' | 'offset' | 'cursor' | 'link';

export interface WindowSpec {
  startParameter: string;
  endParameter?: string;
  location?: ParameterLocation;
  mode?: 'since_last' | 'rolling';
  lookback: string;
  overlap?: string;
  format?: WindowFormat;
}

export interface PaginationSpec {
  type: PaginationType;
  location?: ParameterLocation;
  parameter?: string;
  responsePath?: string;
  start?: number;
  pageSizeParameter?: string;
  pageSize?: number;
  limitParameter?: string;
  limit?: number;
  maxPages?: number;
}

/** The endpoint target of SPEC 2.2, as stored (schema defaults filled in). */
export interface HttpDatasetTarget {
  request: { url: string; query?: Record<string, string>; method?: 'GET' | 'POST' };
  response?: { format?: 'json'; recordsPath?: string };
  primaryKeys?: string[];
  window?: WindowSpec;
  pagination?: PaginationSpec;
}

export const DEFAULT_MAX_PAGES = 100;
export const DEFAULT_TIMEOUT_MS = 10_000;
/**
 * Upstream pages one readRecords call may fetch. A `where` that matches little would otherwise
 * walk up to maxPages in one call; past this budget the call returns what it has with a
 * continuation (stop reason page_budget). maxPages still bounds the whole read across continuations.
 */
export const PAGES_PER_READ = 20;
/**
 * Time one readRecords call may spend across all its pages (each request also has the
 * installation's timeoutMs). Never shorter than one request's timeoutMs: a configured slow API
 * still gets one full request.
 */
export const READ_DEADLINE_MS = 30_000;

/** PnYnMnWnDTnHnMnS; at least one component, and a T only when a time component follows. */
export const DURATION_PATTERN = '^P(?!$)(\\d+Y)?(\\d+M)?(\\d+W)?(\\d+D)?(T(?=\\d)(\\d+H)?(\\d+M)?(\\d+(\\.\\d+)?S)?)?$';

const duration = (description: string): JsonSchema => ({
  type: 'string',
  pattern: DURATION_PATTERN,
  description,
  examples: ['P30D', 'PT6H'],
  errorMessage: { pattern: 'must be an ISO 8601 duration such as P30D or PT6H' },
});

const parameterName = (description: string): JsonSchema => ({ type: 'string', minLength: 1, maxLength: 200, description });

const location: JsonSchema = {
  type: 'string',
  enum: ['query', 'body'],
  default: 'query',
  description: 'Where the parameters are sent: the query string, or the JSON body (POST requests only).',
};

/** Whether `pagination.type` is one of `types`: the condition of the per-type requirements below. */
const paginationTypeIn = (types: PaginationType[]): JsonSchema => ({ properties: { type: { enum: types } }, required: ['type'] });

// Ajv strict mode wants a required property declared beside `required`; `true` adds no rule.
const requires = (property: string): JsonSchema => ({ properties: { [property]: true }, required: [property] });

export const targetSchema: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['request'],
  description: 'Selects a JSON dataset behind the installation\'s base URL: the request, where the records are in the response, an optional time window and pagination.',
  properties: {
    request: {
      type: 'object',
      additionalProperties: false,
      required: ['url'],
      description: 'The request that returns the records.',
      properties: {
        url: { type: 'string', format: 'uri', maxLength: 2000, description: 'Address of the remote API; must be under the installation\'s baseUrl.' },
        query: {
          type: 'object',
          additionalProperties: { type: 'string' },
          description: 'Fixed query parameters. Do not repeat window parameters here.',
        },
        method: { type: 'string', enum: ['GET', 'POST'], default: 'GET', description: 'HTTP method; POST is needed when window or pagination parameters go in the body.' },
      },
    },
    response: {
      type: 'object',
      additionalProperties: false,
      description: 'How to read the response.',
      properties: {
        format: { type: 'string', enum: ['json'], default: 'json', description: 'Response format.' },
        recordsPath: {
          type: 'string',
          maxLength: 500,
          description: 'Dot path to the array of records in the response, e.g. "data.items". Empty or absent: the body itself is the array.',
        },
      },
    },
    primaryKeys: {
      type: 'array',
      items: { type: 'string', minLength: 1 },
      uniqueItems: true,
      description: 'Record identifier field names.',
    },
    window: {
      type: 'object',
      additionalProperties: false,
      required: ['startParameter', 'lookback'],
      description: 'A time window sent with every request; it ends at the sync time.',
      properties: {
        startParameter: parameterName('Parameter that receives the window start.'),
        endParameter: parameterName('Parameter that receives the window end (the sync time).'),
        location,
        mode: {
          type: 'string',
          enum: ['since_last', 'rolling'],
          default: 'since_last',
          description: 'since_last resumes where the last successful run ended (pipeline source in incremental mode); rolling reads the last lookback every run.',
        },
        lookback: duration('The first since_last window, the farthest any window reaches back, and the rolling length.'),
        overlap: duration('Re-read before the last window end, for late records; pair with an upsert keyed on the primary key.'),
        format: {
          type: 'string',
          enum: ['iso', 'date', 'epoch_ms', 'epoch_s'],
          default: 'iso',
          description: 'How window values are written: ISO 8601 timestamp, YYYY-MM-DD (UTC), epoch milliseconds or epoch seconds.',
        },
      },
    },
    pagination: {
      type: 'object',
      additionalProperties: false,
      required: ['type'],
      description: 'How to fetch further pages. maxPages bounds the pages of one read; reaching it is reported, never silent.',
      properties: {
        type: { type: 'string', enum: ['none', 'page', 'offset', 'cursor', 'link'], description: 'Pagination style.' },
        location,
        parameter: parameterName('Request parameter carrying the page number, offset or cursor (page, offset, cursor).'),
        responsePath: { type: 'string', minLength: 1, maxLength: 500, description: 'Dot path in the response to the next cursor or next link (cursor, link).' },
        start: { type: 'integer', minimum: 0, description: 'First page number (default 1) or offset (default 0).' },
        pageSizeParameter: parameterName('API parameter for the page size, sent on every request.'),
        pageSize: { type: 'integer', minimum: 1, maximum: 100_000, description: 'Page size value.' },
        limitParameter: parameterName('API parameter for a limit, sent on every request.'),
        limit: { type: 'integer', minimum: 1, maximum: 100_000, description: 'Limit value.' },
        maxPages: { type: 'integer', minimum: 1, maximum: 10_000, default: DEFAULT_MAX_PAGES, description: 'Bound on pages per read; reaching it truncates and is reported as max_pages.' },
      },
      dependentRequired: { pageSizeParameter: ['pageSize'], pageSize: ['pageSizeParameter'], limitParameter: ['limit'], limit: ['limitParameter'] },
      allOf: [
        { if: paginationTypeIn(['page', 'offset', 'cursor']), then: requires('parameter') },
        { if: paginationTypeIn(['cursor', 'link']), then: requires('responsePath') },
      ],
    },
  },
};

export interface HttpDatasetSettings {
  baseUrl: string;
  allowPrivateNetwork?: boolean;
  timeoutMs?: number;
}

/** The installation's secret properties (x-weft-secret), decrypted into InstallationContext.credentials. */
export interface HttpDatasetCredentials {
  headers?: Record<string, string>;
  queryParameters?: Record<string, string>;
}

export const installationSchema: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['baseUrl'],
  description: 'Connection to one HTTP JSON API. Endpoint targets must stay under baseUrl. Credentials go in headers, or in queryParameters for APIs that take a key in the query string; both are stored encrypted and never returned.',
  properties: {
    baseUrl: { type: 'string', format: 'uri', maxLength: 2000, description: 'Origin and path prefix every request (and redirect, and next link) must stay under, e.g. https://api.example.com/v2/.' },
    headers: {
      type: 'object',
      additionalProperties: { type: 'string' },
      'x-weft-secret': true,
      description: 'Headers sent with every request, such as Authorization. Stored encrypted and never returned.',
    },
    queryParameters: {
      type: 'object',
      propertyNames: { type: 'string', minLength: 1, maxLength: 200 },
      additionalProperties: { type: 'string', maxLength: 2000 },
      'x-weft-secret': true,
      description: 'Query parameters added to every request (each page, next link and redirect), for APIs that take a credential in the query string, e.g. {"api_key": "…"}. '
        + 'Stored encrypted and never returned; kept out of error messages, check results and records cursors (a next link that echoes them is stored without them). '
        + 'Endpoint targets must not send a query parameter of the same name.',
    },
    allowPrivateNetwork: {
      type: 'boolean',
      default: false,
      description: 'Allow loopback, private, link-local and other non-public addresses. Off by default to prevent requests into internal networks.',
    },
    timeoutMs: { type: 'integer', minimum: 100, maximum: 120_000, default: DEFAULT_TIMEOUT_MS, description: 'Timeout of one request including redirects, in milliseconds.' },
  },
};

export const definition: CapabilityDefinition = {
  name: 'http_dataset',
  version: '1.0.0',
  title: 'HTTP dataset',
  description: 'Reads JSON records from an HTTP API, with an optional time window and page, offset, cursor or link pagination.',
  roles: [{ role: 'source', contractKind: 'source_stream' }],
  targetSchema,
  installationSchema,
  accepts: [],
  emits: ['json'],
  supports: { recordsRead: true, orderedReads: false, fieldCatalog: false, snapshotReads: false, provenanceReads: false, transactionalWrites: false, schemaDiscovery: true, connectionCheck: true },
};
