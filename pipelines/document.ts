import type { JsonSchema } from '../core/schema-validator';
import { whereSchema } from '../plugins/condition-schemas';
import type { CastType, TransformNode } from './transforms';

/**
 * The pipeline document: a graph of nodes and edges, always sent whole. Sources read endpoints,
 * transforms reshape records one by one, destinations write endpoints. This schema is the one
 * contract: the API validates bodies with it and the OpenAPI document publishes it.
 */
export type WriteMode = 'append' | 'upsert' | 'replace';

export interface SourceNode {
  id: string;
  type: 'source';
  endpointId: string;
  mode: 'full' | 'incremental';
  /** Table sources in incremental mode: the field whose last committed value the next run reads past. */
  cursorField?: string;
  description?: string;
}

export interface DestinationNode {
  id: string;
  type: 'destination';
  endpointId: string;
  writeMode: WriteMode;
  description?: string;
}

export type PipelineNode = SourceNode | DestinationNode | (TransformNode & { description?: string });
export type NodeType = PipelineNode['type'];

export interface PipelineEdge {
  from: string;
  to: string;
}

export interface PipelineDocument {
  nodes: PipelineNode[];
  edges: PipelineEdge[];
}

export const MAX_NODES = 200;
export const CAST_TYPES: CastType[] = ['string', 'number', 'integer', 'decimal', 'boolean', 'timestamp', 'date', 'json'];

const nodeId: JsonSchema = {
  type: 'string',
  pattern: '^[A-Za-z][A-Za-z0-9_-]{0,62}$',
  description: 'Unique within the document: a letter, then letters, digits, underscores or hyphens (at most 63).',
  errorMessage: { pattern: 'must start with a letter and hold only letters, digits, underscores and hyphens (at most 63)' },
};
const fieldName: JsonSchema = { type: 'string', minLength: 1, maxLength: 200 };
const endpointId: JsonSchema = {
  type: 'string',
  format: 'uuid',
  pattern: '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$',
  errorMessage: { pattern: 'must be a UUID in lowercase canonical form' },
  description: 'A data endpoint of this workspace.',
};
const description: JsonSchema = { type: 'string', maxLength: 2000 };

/** One node kind: its `type` constant and its own properties (closed, so typos are reported). */
function nodeSchema(type: NodeType, summary: string, properties: Record<string, JsonSchema>, required: string[]): JsonSchema {
  return {
    type: 'object',
    title: type,
    description: summary,
    additionalProperties: false,
    required: ['id', 'type', ...required],
    properties: { id: nodeId, type: { const: type }, description, ...properties },
  };
}

export const pipelineNodeSchema: JsonSchema = {
  type: 'object',
  required: ['type'],
  properties: { type: { type: 'string', enum: ['source', 'select', 'filter', 'compute', 'cast', 'dedupe', 'destination'] } },
  discriminator: { propertyName: 'type' },
  oneOf: [
    nodeSchema('source', 'Reads an endpoint with role source.', {
      endpointId,
      mode: {
        type: 'string',
        enum: ['full', 'incremental'],
        default: 'full',
        description: 'full reads everything each run. incremental reads past the position the last successful run committed: an HTTP source through its target window, a table source past cursorField.',
      },
      cursorField: { ...fieldName, description: 'Table sources in incremental mode: records whose value is greater than the last committed one are read.' },
    }, ['endpointId']),
    nodeSchema('select', 'Keeps the listed fields (all when fields is absent), then renames.', {
      fields: { type: 'array', minItems: 1, maxItems: 2000, uniqueItems: true, items: fieldName },
      rename: { type: 'object', maxProperties: 2000, propertyNames: { minLength: 1, maxLength: 200 }, additionalProperties: fieldName, description: 'Old name to new name.' },
    }, []),
    nodeSchema('filter', 'Keeps records that match every condition (the records-read condition language).', { where: whereSchema }, ['where']),
    nodeSchema('compute', 'Sets fields to JSONata expressions evaluated on each record, in order.', {
      fields: {
        type: 'array',
        minItems: 1,
        maxItems: 100,
        items: {
          type: 'object',
          additionalProperties: false,
          required: ['name', 'expression'],
          properties: { name: fieldName, expression: { type: 'string', minLength: 1, maxLength: 4000, description: 'JSONata, e.g. total * 1.2 or $uppercase(status).' } },
        },
      },
    }, ['fields']),
    nodeSchema('cast', 'Converts field values to types.', {
      fields: { type: 'object', minProperties: 1, maxProperties: 2000, propertyNames: { minLength: 1, maxLength: 200 }, additionalProperties: { type: 'string', enum: CAST_TYPES } },
      onError: { type: 'string', enum: ['fail', 'null'], default: 'fail', description: 'A value that cannot be converted fails the run (fail) or becomes null.' },
    }, ['fields']),
    nodeSchema('dedupe', 'Passes the first record of each key in a run and drops later ones.', {
      key: { type: 'array', minItems: 1, maxItems: 20, uniqueItems: true, items: fieldName },
    }, ['key']),
    nodeSchema('destination', 'Writes an endpoint with role destination when the run commits.', {
      endpointId,
      writeMode: {
        type: 'string',
        enum: ['append', 'upsert', 'replace'],
        default: 'append',
        description: 'append adds records; upsert replaces records with the same primary key; replace swaps the whole table for the run\'s records.',
      },
    }, ['endpointId']),
  ],
};

export const pipelineDocumentSchema: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['nodes', 'edges'],
  description: 'A pipeline graph. Always sent whole.',
  properties: {
    nodes: { type: 'array', minItems: 1, maxItems: MAX_NODES, items: pipelineNodeSchema },
    edges: {
      type: 'array',
      maxItems: MAX_NODES * 5,
      items: { type: 'object', additionalProperties: false, required: ['from', 'to'], properties: { from: nodeId, to: nodeId } },
    },
  },
};

export const isSource = (node: PipelineNode): node is SourceNode => node.type === 'source';
export const isDestination = (node: PipelineNode): node is DestinationNode => node.type === 'destination';
export const isTransform = (node: PipelineNode): node is TransformNode => !isSource(node) && !isDestination(node);

/** The endpoints a document names, for reference tracking (endpoint deletion). */
export function documentEndpointIds(document: PipelineDocument): string[] {
  return [...new Set(document.nodes.flatMap((node) => ('endpointId' in node ? [node.endpointId] : [])))];
}
