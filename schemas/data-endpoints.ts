import type { JsonSchema } from '../core/schema-validator';
import { DEFAULT_RECORDS_LIMIT, MAX_RECORDS_LIMIT } from '../services/endpoints/records-read';
import { listQuery, nullableTimestamp, timestamp, uuid } from './common';

export const IDENTITY_LABEL: JsonSchema = {
  type: 'string',
  minLength: 1,
  maxLength: 200,
  pattern: '^[A-Za-z0-9._:-]+$',
  errorMessage: { pattern: 'may contain only letters, numbers, dots, underscores, hyphens and colons' },
};

export const ENDPOINT_ROLES = ['source', 'destination', 'ontology_store'] as const;
export const TRUST_RANKS = ['authoritative', 'trusted', 'unverified', 'experimental'] as const;

const formatList: JsonSchema = { type: 'array', uniqueItems: true, maxItems: 20, items: { type: 'string', minLength: 1, maxLength: 100 } };
const fieldName: JsonSchema = { type: 'string', minLength: 1, maxLength: 200 };

export const schemaHintsSchema: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  description: 'Optional hints about the records: primary key and columns.',
  properties: {
    primaryKey: { type: 'array', uniqueItems: true, maxItems: 50, items: fieldName },
    columns: {
      type: 'array',
      maxItems: 2000,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['name'],
        properties: { name: fieldName, type: { type: 'string', maxLength: 100 }, nullable: { type: 'boolean' }, description: { type: 'string', maxLength: 2000 } },
      },
    },
  },
};

/** Fields that describe an endpoint and may be changed by PATCH. */
const descriptiveFields: Record<string, JsonSchema> = {
  name: IDENTITY_LABEL,
  namespace: IDENTITY_LABEL,
  target: {
    type: 'object',
    minProperties: 1,
    description: "Selector validated against the capability's target schema (GET /api/v1/plugins lists them). No host, password or other credential: those live on the plugin installation, stored encrypted. A name that says credential is refused wherever the schema does not declare it (query parameters in request.url or request.query, headers, unknown fields), a bare key included (key, api_key, X-Api-Key, access_key; record keys such as primaryKey or sort_key are not), and so is a value that looks like a secret.",
  },
  schemaHints: schemaHintsSchema,
  freshness: { type: 'string', minLength: 1, maxLength: 200, description: 'Descriptive label, e.g. "hourly".' },
  ownerTeam: { type: 'string', minLength: 1, maxLength: 200 },
  trustRank: { type: 'string', enum: [...TRUST_RANKS], description: 'Trust classification.' },
  description: { type: 'string', maxLength: 4000, description: 'Explanation, e.g. of the trust rank.' },
  accepts: { ...formatList, description: 'Input formats; each must be one the capability accepts.' },
  emits: { ...formatList, description: 'Output formats; each must be one the capability emits.' },
};

export const createDataEndpointBody: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['name', 'namespace', 'role', 'pluginCapabilityInstallationId', 'contractKind', 'target'],
  properties: {
    ...descriptiveFields,
    role: { type: 'string', enum: [...ENDPOINT_ROLES], description: 'source is used for reads.' },
    pluginCapabilityInstallationId: { ...uuid, description: 'An installed workspace capability (GET /api/v1/plugins).' },
    contractKind: { type: 'string', minLength: 1, maxLength: 100, description: 'Must match the capability and role; source_stream for sources.' },
  },
};

/** Optional descriptive fields that a PATCH may clear with null. */
const CLEARABLE = ['schemaHints', 'freshness', 'ownerTeam', 'trustRank', 'description'];

export const updateDataEndpointBody: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  description: `Changed fields only. ${CLEARABLE.join(', ')} can be cleared with null.`,
  properties: Object.fromEntries(
    Object.entries(descriptiveFields).map(([name, schema]) => [name, CLEARABLE.includes(name) ? { anyOf: [schema, { type: 'null' }] } : schema]),
  ),
  errorMessage: {
    additionalProperties: 'role, contractKind and pluginCapabilityInstallationId are fixed at creation: create a new endpoint instead.',
  },
};

export const dataEndpointSchema: JsonSchema = {
  type: 'object',
  required: ['id', 'workspaceId', 'name', 'namespace', 'role', 'pluginCapabilityInstallationId', 'capability', 'contractKind', 'target', 'dataIdentity', 'createdAt', 'updatedAt'],
  properties: {
    id: uuid,
    workspaceId: uuid,
    name: { type: 'string' },
    namespace: { type: 'string' },
    role: { type: 'string', enum: [...ENDPOINT_ROLES] },
    pluginCapabilityInstallationId: uuid,
    capability: { type: 'object', properties: { name: { type: 'string' }, version: { type: 'string' } } },
    contractKind: { type: 'string' },
    target: { type: 'object' },
    dataIdentity: {
      type: 'string',
      description: 'The data the target reaches, the same for every endpoint over it whatever installation it was made with: managed_table:<table> (the workspace\'s table), postgres_table://<host>:<port>/<database>/<schema>.<table>, http_dataset:<URL without window or paging parameters, fixed parameters sorted>. Named read grants and the write policy guard the data, so every endpoint with this identity.',
    },
    schemaHints: { type: ['object', 'null'] },
    freshness: { type: ['string', 'null'] },
    ownerTeam: { type: ['string', 'null'] },
    trustRank: { type: ['string', 'null'] },
    description: { type: ['string', 'null'] },
    accepts: { type: 'array', items: { type: 'string' } },
    emits: { type: 'array', items: { type: 'string' } },
    createdByMemberId: uuid,
    createdAt: timestamp,
    updatedAt: timestamp,
  },
};

export const pluginSchema: JsonSchema = {
  type: 'object',
  required: ['installationId', 'capability', 'version', 'roles', 'targetSchema', 'supports'],
  properties: {
    installationId: uuid,
    capability: { type: 'string' },
    version: { type: 'string', description: 'The installed version: the contract below is this version\'s (SPEC 9).' },
    latestVersion: { type: ['string', 'null'], description: 'The newest version of the capability this Weft serves; new installations get it.' },
    available: { type: 'boolean', description: 'False when this Weft no longer serves the installed version: the contract is empty and its endpoints answer 409 capability_version_unavailable until the plugin is reinstalled.' },
    title: { type: 'string' },
    description: { type: 'string' },
    roles: { type: 'array', items: { type: 'object', properties: { role: { type: 'string' }, contractKind: { type: 'string' } } } },
    targetSchema: { type: 'object', description: 'JSON Schema of an endpoint target for this capability: build forms from it.' },
    accepts: { type: 'array', items: { type: 'string' } },
    emits: { type: 'array', items: { type: 'string' } },
    supports: { type: 'object', additionalProperties: { type: 'boolean' } },
    createdAt: timestamp,
  },
};

export const checkResultSchema: JsonSchema = {
  type: 'object',
  required: ['ok', 'message'],
  properties: { ok: { type: 'boolean' }, message: { type: 'string' }, details: { type: 'object' }, checkedAt: timestamp },
};

export const validationResultSchema: JsonSchema = {
  type: 'object',
  required: ['valid', 'problems'],
  properties: {
    valid: { type: 'boolean' },
    problems: { type: 'array', items: { type: 'object', properties: { path: { type: 'string' }, message: { type: 'string' } } } },
  },
};

/** Why reading a source stopped (StopReason, plugins/capability.ts), null where nothing was read from a remote source. */
export const stopReasonSchema: JsonSchema = { type: ['string', 'null'], enum: ['exhausted', 'empty_page', 'limit', 'page_budget', 'repeated_cursor', 'max_pages', null] };

export const recordsResponseSchema: JsonSchema = {
  type: 'object',
  required: ['data', 'metadata'],
  properties: {
    data: { type: 'array', items: { type: 'object' } },
    provenance: {
      type: 'array',
      description: 'With ?provenance=true, index for index with data: the pipeline run (kind run) or governed write action (kind write) that wrote the record, and when it was committed.',
      items: {
        type: 'object',
        required: ['kind', 'id', 'committedAt'],
        properties: { kind: { type: 'string', enum: ['run', 'write'] }, id: { type: 'string', format: 'uuid' }, committedAt: { type: 'string', format: 'date-time' } },
      },
    },
    metadata: {
      type: 'object',
      required: ['rowCount', 'nextCursor', 'hasMore'],
      properties: {
        rowCount: { type: 'integer' },
        limit: { type: 'integer' },
        hasMore: { type: 'boolean' },
        nextCursor: { type: ['string', 'null'], description: 'Pass as ?cursor= with the same key and the same read parameters.' },
        snapshot: { type: ['object', 'null'], properties: { id: { type: 'string' }, version: { type: 'string' }, committedAt: nullableTimestamp } },
        stopReason: {
          ...stopReasonSchema,
          description: 'Remote sources: why fetching stopped. page_budget: this call’s page budget is spent, nothing is lost, follow nextCursor. max_pages: the target’s bound was reached and results were truncated.',
        },
        pagesFetched: { type: ['integer', 'null'] },
      },
    },
  },
};

export const listDataEndpointsQuery = listQuery({ name: IDENTITY_LABEL, namespace: IDENTITY_LABEL, role: { type: 'string', enum: [...ENDPOINT_ROLES] } });

export const recordsQuery: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    limit: { type: 'integer', minimum: 1, maximum: MAX_RECORDS_LIMIT, default: DEFAULT_RECORDS_LIMIT, description: `Records per page (cap ${MAX_RECORDS_LIMIT}).` },
    select: { anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }], description: 'Fields to return: repeated or comma-separated.' },
    where: { type: 'string', description: 'URL-encoded JSON array of {field, op, value|values}; op is eq, ne, in, exists, gt, gte, lt or lte.' },
    orderBy: { type: 'string', description: 'URL-encoded JSON array of {field, direction: asc|desc}.' },
    snapshotId: { type: 'string', minLength: 1, maxLength: 500, description: 'Read one committed snapshot (capabilities with snapshot reads).' },
    asOf: { type: 'string', format: 'date-time', description: 'Read the snapshot current at this time (capabilities with snapshot reads).' },
    provenance: { type: 'boolean', default: false, description: 'Also answer `provenance`: what wrote each record (managed_table endpoints).' },
    cursor: { type: 'string', maxLength: 8192, description: 'nextCursor of the previous page.' },
  },
};
