import type { JsonSchema } from '../core/schema-validator';
import { LOCAL_NAME_PATTERN } from '../ontology/definition';
import { DEFAULT_RECORDS_LIMIT, MAX_RECORDS_LIMIT } from '../services/endpoints/records-read';
import { idParams, listQuery, uuid } from './common';

// The ontology of a project (SPEC 2.6, 4.5), its read bindings and the SPARQL endpoint: what their
// operations read.

export const BRANCH_NAME: JsonSchema = { type: 'string', pattern: '^[A-Za-z0-9._-]{1,100}$' };
export const branchQuery: JsonSchema = { type: 'object', additionalProperties: false, properties: { branch: { ...BRANCH_NAME, default: 'main', description: 'The branch to read or edit (default main).' } } };
/** Element ids are local names, not UUIDs: the parameter is named after the element (:term). */
export const elementParams = (name: string): JsonSchema => ({
  type: 'object',
  required: ['project_id', name],
  properties: { project_id: uuid, [name]: { type: 'string', pattern: LOCAL_NAME_PATTERN } },
});
export const collectionListQuery = listQuery({ branch: { ...BRANCH_NAME, default: 'main' } });

export const importDocumentQuery: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['id'],
  properties: { id: { type: 'string', pattern: LOCAL_NAME_PATTERN, description: 'The import’s id.' }, branch: { ...BRANCH_NAME, default: 'main' } },
};
export const ontologyVersionsQuery = listQuery({ branch: BRANCH_NAME });
export const createOntologyBranchBody: JsonSchema = { type: 'object', additionalProperties: false, required: ['name'], properties: { name: BRANCH_NAME, fromVersionId: uuid } };
export const compareBranchesQuery: JsonSchema = { type: 'object', additionalProperties: false, required: ['head'], properties: { base: { ...BRANCH_NAME, default: 'main' }, head: BRANCH_NAME } };
export const compileOntologyBody: JsonSchema = { type: 'object', additionalProperties: false, properties: { branch: { ...BRANCH_NAME, default: 'main' } } };
export const activatePackageBody: JsonSchema = { type: 'object', additionalProperties: false, required: ['packageId'], properties: { packageId: uuid } };

// Read bindings and the term reads that go through them.

const localName: JsonSchema = { type: 'string', pattern: LOCAL_NAME_PATTERN };
const grant: JsonSchema = { type: 'string', minLength: 1, maxLength: 200, pattern: '^[A-Za-z0-9._:-]+$' };

export const bindingInputSchema: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['ontologyPackageId', 'termId', 'dataEndpointId', 'mapping'],
  properties: {
    ontologyPackageId: { ...uuid, description: 'A compiled package of this project’s ontology that defines the term.' },
    termId: { ...localName, description: 'A class of that package.' },
    dataEndpointId: { ...uuid, description: 'A source endpoint of this workspace.' },
    mapping: {
      type: 'object',
      additionalProperties: false,
      required: ['subjectTemplate', 'properties'],
      properties: {
        subjectTemplate: { type: 'string', minLength: 1, maxLength: 500, description: 'IRI template for each record’s subject, with {field} placeholders, e.g. https://example.com/customers/{id}.' },
        properties: { type: 'object', maxProperties: 200, propertyNames: { pattern: LOCAL_NAME_PATTERN }, additionalProperties: { type: 'string', minLength: 1, maxLength: 200 }, description: 'Term property -> endpoint field.' },
        links: {
          type: 'object',
          maxProperties: 50,
          propertyNames: { pattern: LOCAL_NAME_PATTERN },
          additionalProperties: {
            type: 'object',
            additionalProperties: false,
            required: ['field', 'targetTemplate'],
            properties: { field: { type: 'string', minLength: 1, maxLength: 200 }, targetTemplate: { type: 'string', minLength: 1, maxLength: 500 } },
          },
          description: 'Link -> the field holding the target’s key and the target’s IRI template.',
        },
      },
    },
    requiredReadPermissions: { type: 'array', uniqueItems: true, maxItems: 50, items: grant, default: [], description: 'Named read grants a key must hold to see this binding’s records (in term reads and SPARQL).' },
  },
};

export const bindingParams = idParams('project_id', 'binding_id');
export const listBindingsQuery = listQuery({ ontologyPackageId: uuid, dataEndpointId: uuid, status: { type: 'string', enum: ['active', 'incompatible'] } });
export const termParams: JsonSchema = { type: 'object', required: ['project_id', 'term'], properties: { project_id: uuid, term: localName } };
export const termRecordsQuery: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: { limit: { type: 'integer', minimum: 1, maximum: MAX_RECORDS_LIMIT, default: DEFAULT_RECORDS_LIMIT }, cursor: { type: 'string', maxLength: 12_000 } },
};

// The SPARQL 1.1 Protocol: the protocol's own parameters, read as sent (graph parameters are refused).

export const sparqlGetQuery: JsonSchema = {
  type: 'object',
  properties: {
    query: { type: 'string', description: 'The SPARQL query.' },
    'default-graph-uri': { description: 'Refused (400).' },
    'named-graph-uri': { description: 'Refused (400).' },
  },
};
export const sparqlPostQuery: JsonSchema = { type: 'object', properties: { 'default-graph-uri': { description: 'Refused (400).' }, 'named-graph-uri': { description: 'Refused (400).' } } };
