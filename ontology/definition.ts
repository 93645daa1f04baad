import type { JsonSchema } from '../core/schema-validator';

// The ontology definition of a project, as data: terms, links, shapes, constraints and imports.
// Each collection's items are validated by these schemas on every edit (shape only); compile checks
// the references between them and lists every problem with its element.

/** A local name: the part of a term's IRI after the ontology's base IRI. */
export const LOCAL_NAME_PATTERN = '^[A-Za-z_][A-Za-z0-9_-]{0,127}$';
const localName: JsonSchema = { type: 'string', pattern: LOCAL_NAME_PATTERN, description: 'Local name (letters, digits, _ and -; up to 128), unique in the ontology; the term IRI is the base IRI + this name.' };
const text = (max: number): JsonSchema => ({ type: 'string', maxLength: max });

/** The XSD datatypes a property may have; literals of bound records are typed with them. */
export const DATATYPES = ['xsd:string', 'xsd:integer', 'xsd:decimal', 'xsd:double', 'xsd:boolean', 'xsd:date', 'xsd:dateTime', 'xsd:anyURI'] as const;
export type Datatype = (typeof DATATYPES)[number];

export const VOCABULARIES = {
  rdf: { iri: 'http://www.w3.org/1999/02/22-rdf-syntax-ns#', module: '@vocabulary/rdf/rdf.nq' },
  rdfs: { iri: 'http://www.w3.org/2000/01/rdf-schema#', module: '@vocabulary/rdfs/rdfs.nq' },
  owl: { iri: 'http://www.w3.org/2002/07/owl#', module: '@vocabulary/owl/owl.nq' },
  xsd: { iri: 'http://www.w3.org/2001/XMLSchema#', module: '@vocabulary/xsd/xsd.nq' },
  skos: { iri: 'http://www.w3.org/2004/02/skos/core#', module: '@vocabulary/skos/skos.nq' },
} as const;
export type VocabularyName = keyof typeof VOCABULARIES;

export const termSchema: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'kind'],
  properties: {
    id: localName,
    kind: { type: 'string', enum: ['class', 'property'], description: 'A class of things, or a datatype property of a class.' },
    label: text(200),
    comment: text(2000),
    subClassOf: { type: 'array', uniqueItems: true, maxItems: 20, items: localName, description: 'Classes only: parent classes of this ontology.' },
    domain: { ...localName, description: 'Properties only: the class the property describes.' },
    datatype: { type: 'string', enum: [...DATATYPES], description: 'Properties only: the literal type of its values.' },
    minCount: { type: 'integer', minimum: 0, maximum: 1000, description: 'Properties only: fewest values per instance.' },
    maxCount: { type: 'integer', minimum: 1, maximum: 1000, description: 'Properties only: most values per instance (1: functional).' },
  },
  allOf: [
    { if: { properties: { kind: { const: 'property' } }, required: ['kind'] }, then: { properties: { domain: true, datatype: true }, required: ['domain', 'datatype'] } },
  ],
};

export const linkSchema: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'from', 'to'],
  properties: {
    id: localName,
    from: { ...localName, description: 'Class the link starts at (its domain).' },
    to: { ...localName, description: 'Class the link points to (its range).' },
    label: text(200),
    comment: text(2000),
    minCount: { type: 'integer', minimum: 0, maximum: 1000 },
    maxCount: { type: 'integer', minimum: 1, maximum: 1000 },
    inverseOf: { ...localName, description: 'Another link that is this one read backwards.' },
  },
};

const propertyConstraint: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['path'],
  properties: {
    path: { ...localName, description: 'A property or link of this ontology.' },
    minCount: { type: 'integer', minimum: 0 },
    maxCount: { type: 'integer', minimum: 0 },
    datatype: { type: 'string', enum: [...DATATYPES] },
    class: { ...localName, description: 'Values must be instances of this class.' },
    pattern: { type: 'string', minLength: 1, maxLength: 500 },
    minLength: { type: 'integer', minimum: 0 },
    maxLength: { type: 'integer', minimum: 0 },
    minInclusive: { type: 'number' },
    maxInclusive: { type: 'number' },
    in: { type: 'array', minItems: 1, maxItems: 500, items: { type: ['string', 'number', 'boolean'] } },
    message: text(500),
  },
};

export const shapeSchema: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'targetClass', 'properties'],
  properties: {
    id: localName,
    targetClass: localName,
    closed: { type: 'boolean', description: 'Instances may have no properties but those listed (and rdf:type).' },
    message: text(500),
    properties: { type: 'array', maxItems: 200, items: propertyConstraint },
  },
};

export const constraintSchema: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['id', 'kind', 'terms'],
  properties: {
    id: localName,
    kind: {
      type: 'string',
      enum: ['disjointClasses', 'hasKey', 'functional', 'inverseFunctional'],
      description: 'disjointClasses: no instance is in two of the classes; hasKey: the first term is a class identified by the following properties; functional / inverseFunctional: properties or links.',
    },
    terms: { type: 'array', minItems: 1, maxItems: 50, items: localName },
    comment: text(2000),
  },
};

export const importSchema: JsonSchema = {
  type: 'object',
  required: ['id', 'kind'],
  properties: { id: localName, kind: { type: 'string', enum: ['vocabulary', 'package', 'document'] } },
  discriminator: { propertyName: 'kind' },
  oneOf: [
    {
      type: 'object',
      additionalProperties: false,
      required: ['id', 'kind', 'vocabulary'],
      properties: { id: localName, kind: { const: 'vocabulary' }, vocabulary: { type: 'string', enum: Object.keys(VOCABULARIES) } },
    },
    {
      type: 'object',
      additionalProperties: false,
      required: ['id', 'kind', 'ontologyPackageId'],
      properties: {
        id: localName,
        kind: { const: 'package' },
        ontologyPackageId: { type: 'string', format: 'uuid', description: 'A compiled package of another project of this workspace.' },
      },
    },
    {
      type: 'object',
      additionalProperties: false,
      required: ['id', 'kind', 'documentId'],
      properties: { id: localName, kind: { const: 'document' }, documentId: { type: 'string', format: 'uuid', description: 'An RDF document uploaded to this ontology.' } },
    },
  ],
};

export interface Term {
  id: string;
  kind: 'class' | 'property';
  label?: string;
  comment?: string;
  subClassOf?: string[];
  domain?: string;
  datatype?: Datatype;
  minCount?: number;
  maxCount?: number;
}

export interface Link {
  id: string;
  from: string;
  to: string;
  label?: string;
  comment?: string;
  minCount?: number;
  maxCount?: number;
  inverseOf?: string;
}

export interface PropertyConstraint {
  path: string;
  minCount?: number;
  maxCount?: number;
  datatype?: Datatype;
  class?: string;
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minInclusive?: number;
  maxInclusive?: number;
  in?: Array<string | number | boolean>;
  message?: string;
}

export interface Shape {
  id: string;
  targetClass: string;
  closed?: boolean;
  message?: string;
  properties: PropertyConstraint[];
}

export interface Constraint {
  id: string;
  kind: 'disjointClasses' | 'hasKey' | 'functional' | 'inverseFunctional';
  terms: string[];
  comment?: string;
}

export type Import =
  | { id: string; kind: 'vocabulary'; vocabulary: VocabularyName }
  | { id: string; kind: 'package'; ontologyPackageId: string }
  | { id: string; kind: 'document'; documentId: string };

export interface OntologyDefinition {
  terms: Term[];
  links: Link[];
  shapes: Shape[];
  constraints: Constraint[];
  imports: Import[];
}

export const COLLECTIONS = ['terms', 'links', 'shapes', 'constraints', 'imports'] as const;
export type Collection = (typeof COLLECTIONS)[number];

export const collectionSchemas: Record<Collection, JsonSchema> = {
  terms: termSchema,
  links: linkSchema,
  shapes: shapeSchema,
  constraints: constraintSchema,
  imports: importSchema,
};

export const emptyDefinition = (): OntologyDefinition => ({ terms: [], links: [], shapes: [], constraints: [], imports: [] });

export const definitionSchema: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  required: [...COLLECTIONS],
  properties: Object.fromEntries(COLLECTIONS.map((name) => [name, { type: 'array', items: collectionSchemas[name] }])),
};
