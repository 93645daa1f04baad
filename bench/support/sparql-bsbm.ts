/**
 * A BSBM-like dataset (the Berlin SPARQL Benchmark's e-commerce shape) for the sparql bench, as a
 * Weft user would hold it: one managed table per kind of record, an ontology of classes, datatype
 * properties and links, and a read binding per table. Everything is generated from a fixed seed.
 *
 * Per product (as in BSBM): about 10 features, 20 offers and 10 reviews. Product types form a
 * hierarchy (a root, 5 middle types, 25 leaves) through the `subTypeOf` link; products point to a
 * leaf. Weft gives each property one domain, so BSBM's shared rdfs:label becomes productLabel,
 * vendorLabel and so on. About 265 triples per product, package included.
 */
import type { BindingMapping } from '../../db/models';

/** mulberry32: small, fast and the same on every machine. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Subjects of bound records (the bindings' IRI templates). */
export const DATA = 'https://bsbm.example/instances/';
export const TRIPLES_PER_PRODUCT = 265;

export interface OntologyTerm {
  id: string;
  kind: 'class' | 'property';
  label?: string;
  domain?: string;
  datatype?: string;
  maxCount?: number;
}

export interface OntologyLink {
  id: string;
  from: string;
  to: string;
  maxCount?: number;
}

const cls = (id: string): OntologyTerm => ({ id, kind: 'class', label: id.replace(/([a-z])([A-Z])/g, '$1 $2') });
const prop = (id: string, domain: string, datatype: string, functional = true): OntologyTerm => ({ id, kind: 'property', domain, datatype, ...(functional ? { maxCount: 1 } : {}) });

export const TERMS: OntologyTerm[] = [
  cls('ProductType'),
  cls('ProductFeature'),
  cls('Producer'),
  cls('Product'),
  cls('Vendor'),
  cls('Offer'),
  cls('Person'),
  cls('Review'),
  prop('typeLabel', 'ProductType', 'xsd:string'),
  prop('typeComment', 'ProductType', 'xsd:string'),
  prop('featureLabel', 'ProductFeature', 'xsd:string'),
  prop('featureComment', 'ProductFeature', 'xsd:string'),
  prop('producerLabel', 'Producer', 'xsd:string'),
  prop('producerComment', 'Producer', 'xsd:string'),
  prop('producerHomepage', 'Producer', 'xsd:anyURI'),
  prop('producerCountry', 'Producer', 'xsd:string'),
  prop('productLabel', 'Product', 'xsd:string'),
  prop('productComment', 'Product', 'xsd:string'),
  ...[1, 2, 3, 4, 5].map((n) => prop(`propertyNumeric${n}`, 'Product', 'xsd:integer')),
  ...[1, 2, 3, 4, 5].map((n) => prop(`propertyTextual${n}`, 'Product', 'xsd:string')),
  prop('productPublished', 'Product', 'xsd:date'),
  prop('vendorLabel', 'Vendor', 'xsd:string'),
  prop('vendorComment', 'Vendor', 'xsd:string'),
  prop('vendorHomepage', 'Vendor', 'xsd:anyURI'),
  prop('vendorCountry', 'Vendor', 'xsd:string'),
  prop('price', 'Offer', 'xsd:decimal'),
  prop('validFrom', 'Offer', 'xsd:date'),
  prop('validTo', 'Offer', 'xsd:date'),
  prop('deliveryDays', 'Offer', 'xsd:integer'),
  prop('offerWebpage', 'Offer', 'xsd:anyURI'),
  prop('personName', 'Person', 'xsd:string'),
  prop('mbox', 'Person', 'xsd:string'),
  prop('personCountry', 'Person', 'xsd:string'),
  prop('reviewTitle', 'Review', 'xsd:string'),
  prop('reviewText', 'Review', 'xsd:string'),
  prop('reviewDate', 'Review', 'xsd:date'),
  prop('rating1', 'Review', 'xsd:integer'),
  prop('rating2', 'Review', 'xsd:integer'),
];

export const LINKS: OntologyLink[] = [
  { id: 'subTypeOf', from: 'ProductType', to: 'ProductType', maxCount: 1 },
  { id: 'productType', from: 'Product', to: 'ProductType', maxCount: 1 },
  { id: 'producer', from: 'Product', to: 'Producer', maxCount: 1 },
  { id: 'productFeature', from: 'Product', to: 'ProductFeature' },
  { id: 'product', from: 'Offer', to: 'Product', maxCount: 1 },
  { id: 'vendor', from: 'Offer', to: 'Vendor', maxCount: 1 },
  { id: 'reviewFor', from: 'Review', to: 'Product', maxCount: 1 },
  { id: 'reviewer', from: 'Review', to: 'Person', maxCount: 1 },
];

export type Row = Record<string, unknown>;

/** One managed table, the term its records are, and the binding's mapping. In binding order. */
export interface TableSpec {
  table: string;
  term: string;
  rows: Row[];
  mapping: BindingMapping;
}

const iri = (kind: string) => `${DATA}${kind}/`;
const link = (field: string, kind: string) => ({ field, targetTemplate: `${iri(kind)}{${field}}` });

export const MAPPINGS: Record<string, { table: string; term: string; mapping: BindingMapping }> = {
  types: { table: 'product_types', term: 'ProductType', mapping: { subjectTemplate: `${iri('types')}{id}`, properties: { typeLabel: 'label', typeComment: 'comment' }, links: { subTypeOf: link('parent', 'types') } } },
  features: { table: 'product_features', term: 'ProductFeature', mapping: { subjectTemplate: `${iri('features')}{id}`, properties: { featureLabel: 'label', featureComment: 'comment' } } },
  producers: {
    table: 'producers',
    term: 'Producer',
    mapping: { subjectTemplate: `${iri('producers')}{id}`, properties: { producerLabel: 'label', producerComment: 'comment', producerHomepage: 'homepage', producerCountry: 'country' } },
  },
  vendors: { table: 'vendors', term: 'Vendor', mapping: { subjectTemplate: `${iri('vendors')}{id}`, properties: { vendorLabel: 'label', vendorComment: 'comment', vendorHomepage: 'homepage', vendorCountry: 'country' } } },
  persons: { table: 'persons', term: 'Person', mapping: { subjectTemplate: `${iri('persons')}{id}`, properties: { personName: 'name', mbox: 'mbox', personCountry: 'country' } } },
  products: {
    table: 'products',
    term: 'Product',
    mapping: {
      subjectTemplate: `${iri('products')}{id}`,
      properties: {
        productLabel: 'label',
        productComment: 'comment',
        ...Object.fromEntries([1, 2, 3, 4, 5].flatMap((n) => [[`propertyNumeric${n}`, `num${n}`], [`propertyTextual${n}`, `text${n}`]])),
        productPublished: 'published',
      },
      links: { productType: link('type', 'types'), producer: link('producer', 'producers'), productFeature: link('features', 'features') },
    },
  },
  offers: {
    table: 'offers',
    term: 'Offer',
    mapping: {
      subjectTemplate: `${iri('offers')}{id}`,
      properties: { price: 'price', validFrom: 'valid_from', validTo: 'valid_to', deliveryDays: 'delivery_days', offerWebpage: 'webpage' },
      links: { product: link('product', 'products'), vendor: link('vendor', 'vendors') },
    },
  },
  reviews: {
    table: 'reviews',
    term: 'Review',
    mapping: {
      subjectTemplate: `${iri('reviews')}{id}`,
      properties: { reviewTitle: 'title', reviewText: 'text', reviewDate: 'review_date', rating1: 'rating1', rating2: 'rating2' },
      links: { reviewFor: link('product', 'products'), reviewer: link('reviewer', 'persons') },
    },
  },
};

const SYLLABLES = ['ka', 'lo', 'mi', 'ne', 'ra', 'tu', 'vi', 'so', 'pe', 'da', 'gri', 'bel', 'mon', 'tar', 'qui', 'zen', 'fa', 'hu', 'jo', 'xe'];
const COUNTRIES = ['US', 'DE', 'GB', 'FR', 'JP', 'CN', 'RU', 'ES', 'AT', 'KR'];
const FIRST = ['Ada', 'Grace', 'Alan', 'Edsger', 'Barbara', 'Donald', 'Frances', 'Ken', 'Margaret', 'Tim', 'Radia', 'John', 'Lynn', 'Niklaus', 'Shafi'];
const LAST = ['Lovelace', 'Hopper', 'Turing', 'Dijkstra', 'Liskov', 'Knuth', 'Allen', 'Thompson', 'Hamilton', 'Berners-Lee', 'Perlman', 'McCarthy', 'Conway', 'Wirth', 'Goldwasser'];

export interface BsbmData {
  products: number;
  /** In binding order (bindings are read in creation order; the 50,000-record bound cuts the last ones). */
  tables: TableSpec[];
  records: number;
  /** Query parameters picked from the data, so every query has results. */
  params: QueryParams;
}

export interface QueryParams {
  product: string;
  leafType: string;
  midType: string;
  feature1: string;
  feature2: string;
  /** A feature of the leaf type's products that `product` lacks (Q3's negation). */
  otherFeature: string;
  numeric1Above: number;
  numeric3Below: number;
  offer: string;
  review: string;
  country: string;
  maxDeliveryDays: number;
  validAfter: string;
  askPriceBelow: string;
}

const DAY = 86_400_000;
const dateAt = (start: string, days: number) => new Date(Date.parse(`${start}T00:00:00Z`) + days * DAY).toISOString().slice(0, 10);

/** The dataset for about `triples` triples (at least 10 products). */
export function generate(triples: number): BsbmData {
  const random = prng(0xb5b3);
  const int = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));
  const pick = <T>(items: readonly T[]) => items[Math.floor(random() * items.length)];
  const word = () => Array.from({ length: int(2, 3) }, () => pick(SYLLABLES)).join('');
  const words = (n: number) => Array.from({ length: n }, word).join(' ');
  const sentence = (lo: number, hi: number) => {
    const text = words(int(lo, hi));
    return text.charAt(0).toUpperCase() + text.slice(1) + '.';
  };

  const products = Math.max(10, Math.round(triples / TRIPLES_PER_PRODUCT));
  const featureCount = Math.max(60, Math.round(products / 2));
  const producerCount = Math.max(3, Math.round(products / 70));
  const vendorCount = Math.max(3, Math.round(products / 25));
  const personCount = Math.max(10, Math.round(products / 2));

  // Product types: 0 is the root, 1..5 its children, 6..30 the leaves (five per middle type).
  const types: Row[] = [];
  for (let id = 0; id < 31; id++) {
    const parent = id === 0 ? undefined : id <= 5 ? 0 : 1 + Math.floor((id - 6) / 5);
    types.push({ id, label: `${word()} ${id}`, comment: sentence(8, 20), ...(parent === undefined ? {} : { parent }) });
  }
  const leaves = types.slice(6).map((t) => t.id as number);
  const features: Row[] = Array.from({ length: featureCount }, (_, id) => ({ id, label: `${word()} feature ${id}`, comment: sentence(6, 14) }));
  const producers: Row[] = Array.from({ length: producerCount }, (_, id) => ({ id, label: `${word()} ${id}`, comment: sentence(8, 20), homepage: `https://producer${id}.bsbm.example/`, country: pick(COUNTRIES) }));
  const vendors: Row[] = Array.from({ length: vendorCount }, (_, id) => ({ id, label: `${word()} shop ${id}`, comment: sentence(8, 20), homepage: `https://vendor${id}.bsbm.example/`, country: COUNTRIES[id % COUNTRIES.length] }));
  const persons: Row[] = Array.from({ length: personCount }, (_, id) => ({ id, name: `${pick(FIRST)} ${pick(LAST)} ${id}`, mbox: `mailto:person${id}@bsbm.example`, country: pick(COUNTRIES) }));

  const productRows: Row[] = [];
  const offers: Row[] = [];
  const reviews: Row[] = [];
  for (let id = 0; id < products; id++) {
    const type = leaves[id % leaves.length];
    const own = new Set<number>();
    const wanted = int(5, 15);
    while (own.size < wanted) own.add(Math.floor(random() * featureCount));
    const row: Row = { id, label: `${words(2)} ${id}`, comment: sentence(12, 30), type, producer: int(0, producerCount - 1), features: [...own].sort((a, b) => a - b), published: dateAt('2000-01-01', int(0, 2900)) };
    for (let n = 1; n <= 5; n++) {
      if (n <= 3 || random() < 0.7) row[`num${n}`] = int(1, 2000);
      if (n <= 3 || random() < 0.7) row[`text${n}`] = words(int(3, 8));
    }
    productRows.push(row);
    for (let k = 0; k < 20; k++) {
      const from = int(0, 170);
      offers.push({
        id: offers.length,
        product: id,
        vendor: int(0, vendorCount - 1),
        price: Number((5 + random() * 9995).toFixed(2)),
        valid_from: dateAt('2008-01-01', from),
        valid_to: dateAt('2008-01-01', from + int(30, 120)),
        delivery_days: int(1, 7),
        webpage: `https://vendor.bsbm.example/offers/${offers.length}`,
      });
    }
    for (let k = 0; k < 10; k++) {
      const review: Row = { id: reviews.length, product: id, reviewer: int(0, personCount - 1), review_date: dateAt('2007-01-01', int(0, 540)), title: sentence(3, 7), text: sentence(20, 60) };
      if (random() < 0.9) review.rating1 = int(1, 10);
      if (random() < 0.7) review.rating2 = int(1, 10);
      reviews.push(review);
    }
  }

  // Parameters from the product in the middle, so each query has an answer.
  const chosen = productRows[Math.floor(products / 2)];
  const chosenFeatures = chosen.features as number[];
  const sameLeaf = productRows.filter((p) => p.type === chosen.type && p.id !== chosen.id);
  const otherFeature = sameLeaf.flatMap((p) => p.features as number[]).find((f) => !chosenFeatures.includes(f)) ?? (chosenFeatures[0] + 1) % featureCount;
  const chosenOffers = offers.filter((o) => o.product === chosen.id);
  const offer = chosenOffers[0];
  const vendorOf = (o: Row) => vendors[o.vendor as number];
  const leafType = chosen.type as number;
  const params: QueryParams = {
    product: `${iri('products')}${chosen.id}`,
    leafType: `${iri('types')}${leafType}`,
    midType: `${iri('types')}${types[leafType].parent}`,
    feature1: `${iri('features')}${chosenFeatures[0]}`,
    feature2: `${iri('features')}${chosenFeatures[1]}`,
    otherFeature: `${iri('features')}${otherFeature}`,
    numeric1Above: Math.max(0, (chosen.num1 as number) - 800),
    numeric3Below: Math.min(2001, (chosen.num3 as number) + 800),
    offer: `${iri('offers')}${offer.id}`,
    review: `${iri('reviews')}${reviews.find((r) => r.product === chosen.id)!.id}`,
    country: vendorOf(offer).country as string,
    maxDeliveryDays: Math.max(3, offer.delivery_days as number),
    validAfter: dateAt(offer.valid_to as string, -1),
    askPriceBelow: (Math.min(...chosenOffers.map((o) => o.price as number)) + 1).toFixed(2),
  };

  const rowsOf: Record<string, Row[]> = { types, features, producers, vendors, persons, products: productRows, offers, reviews };
  const tables = Object.entries(MAPPINGS).map(([name, spec]) => ({ ...spec, rows: rowsOf[name] }));
  return { products, tables, records: tables.reduce((n, t) => n + t.rows.length, 0), params };
}

// ---------------------------------------------------------------------------------------------
// The query mix: BSBM's explore queries adapted to this vocabulary, plus an aggregate, a
// DISTINCT/ORDER BY/LIMIT over every offer and an ASK.

export interface MixQuery {
  id: string;
  what: string;
  kind: 'select' | 'ask' | 'construct';
  text: (base: string, p: QueryParams) => string;
}

const prefixes = (base: string) => `PREFIX : <${base}>\nPREFIX xsd: <http://www.w3.org/2001/XMLSchema#>\n`;

export const MIX: MixQuery[] = [
  {
    id: 'q1-type-features',
    what: 'BSBM Q1: products of a type (through the type hierarchy) with two features and a numeric FILTER',
    kind: 'select',
    text: (b, p) => `${prefixes(b)}SELECT DISTINCT ?product ?label WHERE {
  ?product :productLabel ?label ; :productType/:subTypeOf* <${p.midType}> ;
    :productFeature <${p.feature1}> , <${p.feature2}> ; :propertyNumeric1 ?value1 .
  FILTER (?value1 > ${p.numeric1Above})
} ORDER BY ?label ?product LIMIT 10`,
  },
  {
    id: 'q2-product-details',
    what: 'BSBM Q2: one product with its producer, features and textual/numeric properties (OPTIONALs)',
    kind: 'select',
    text: (b, p) => `${prefixes(b)}SELECT ?label ?comment ?producer ?producerLabel ?feature ?featureLabel ?t1 ?t2 ?t3 ?n1 ?n2 ?t4 ?t5 ?n4 WHERE {
  <${p.product}> :productLabel ?label ; :productComment ?comment ; :producer ?producer ; :productFeature ?feature ;
    :propertyTextual1 ?t1 ; :propertyTextual2 ?t2 ; :propertyTextual3 ?t3 ; :propertyNumeric1 ?n1 ; :propertyNumeric2 ?n2 .
  ?producer :producerLabel ?producerLabel .
  ?feature :featureLabel ?featureLabel .
  OPTIONAL { <${p.product}> :propertyTextual4 ?t4 }
  OPTIONAL { <${p.product}> :propertyTextual5 ?t5 }
  OPTIONAL { <${p.product}> :propertyNumeric4 ?n4 }
}`,
  },
  {
    id: 'q3-feature-not',
    what: 'BSBM Q3: products of a leaf type with one feature but not another (OPTIONAL + !bound), two FILTERs',
    kind: 'select',
    text: (b, p) => `${prefixes(b)}SELECT ?product ?label WHERE {
  ?product :productLabel ?label ; :productType <${p.leafType}> ; :productFeature <${p.feature1}> ;
    :propertyNumeric1 ?p1 ; :propertyNumeric3 ?p3 .
  FILTER (?p1 > ${p.numeric1Above})
  FILTER (?p3 < ${p.numeric3Below})
  OPTIONAL { ?product :productFeature <${p.otherFeature}> . ?product :productLabel ?testVar }
  FILTER (!bound(?testVar))
} ORDER BY ?label ?product LIMIT 10`,
  },
  {
    id: 'q5-similar',
    what: 'BSBM Q5: products sharing a feature with one product, with numeric properties in a window',
    kind: 'select',
    text: (b, p) => `${prefixes(b)}SELECT DISTINCT ?product ?productLabel WHERE {
  ?product :productLabel ?productLabel .
  FILTER (<${p.product}> != ?product)
  <${p.product}> :productFeature ?prodFeature .
  ?product :productFeature ?prodFeature .
  <${p.product}> :propertyNumeric1 ?origProperty1 .
  ?product :propertyNumeric1 ?simProperty1 .
  FILTER (?simProperty1 < (?origProperty1 + 120) && ?simProperty1 > (?origProperty1 - 120))
  <${p.product}> :propertyNumeric2 ?origProperty2 .
  ?product :propertyNumeric2 ?simProperty2 .
  FILTER (?simProperty2 < (?origProperty2 + 170) && ?simProperty2 > (?origProperty2 - 170))
} ORDER BY ?productLabel ?product LIMIT 5`,
  },
  {
    id: 'q7-product-page',
    what: 'BSBM Q7: a product with its valid offers from one country and its reviews (nested OPTIONALs)',
    kind: 'select',
    text: (b, p) => `${prefixes(b)}SELECT ?productLabel ?offer ?price ?vendor ?vendorTitle ?review ?revTitle ?reviewer ?revName ?rating1 ?rating2 WHERE {
  <${p.product}> :productLabel ?productLabel .
  OPTIONAL {
    ?offer :product <${p.product}> ; :price ?price ; :vendor ?vendor ; :validTo ?till .
    ?vendor :vendorLabel ?vendorTitle ; :vendorCountry "${p.country}" .
    FILTER (?till > "${p.validAfter}"^^xsd:date)
  }
  OPTIONAL {
    ?review :reviewFor <${p.product}> ; :reviewer ?reviewer ; :reviewTitle ?revTitle .
    ?reviewer :personName ?revName .
    OPTIONAL { ?review :rating1 ?rating1 }
    OPTIONAL { ?review :rating2 ?rating2 }
  }
}`,
  },
  {
    id: 'q8-reviews',
    what: 'BSBM Q8: a product’s reviews with reviewer names and OPTIONAL ratings, newest 20',
    kind: 'select',
    text: (b, p) => `${prefixes(b)}SELECT ?review ?title ?text ?reviewDate ?reviewer ?reviewerName ?rating1 ?rating2 WHERE {
  ?review :reviewFor <${p.product}> ; :reviewTitle ?title ; :reviewText ?text ; :reviewDate ?reviewDate ; :reviewer ?reviewer .
  ?reviewer :personName ?reviewerName .
  OPTIONAL { ?review :rating1 ?rating1 }
  OPTIONAL { ?review :rating2 ?rating2 }
} ORDER BY DESC(?reviewDate) ?review LIMIT 20`,
  },
  {
    id: 'q9-construct-reviewer',
    what: 'BSBM Q9 as CONSTRUCT: everything about a review’s reviewer',
    kind: 'construct',
    text: (b, p) => `${prefixes(b)}CONSTRUCT { ?reviewer ?p ?o } WHERE { <${p.review}> :reviewer ?reviewer . ?reviewer ?p ?o }`,
  },
  {
    id: 'q10-offers',
    what: 'BSBM Q10: a product’s offers from one country, delivery and validity FILTERs, ORDER BY price LIMIT 10',
    kind: 'select',
    text: (b, p) => `${prefixes(b)}SELECT DISTINCT ?offer ?price WHERE {
  ?offer :product <${p.product}> ; :vendor ?vendor ; :deliveryDays ?deliveryDays ; :price ?price ; :validTo ?date .
  ?vendor :vendorCountry "${p.country}" .
  FILTER (?deliveryDays <= ${p.maxDeliveryDays})
  FILTER (?date > "${p.validAfter}"^^xsd:date)
} ORDER BY xsd:double(str(?price)) ?offer LIMIT 10`,
  },
  {
    id: 'q11-offer-union',
    what: 'BSBM Q11: every triple into or out of one offer (UNION)',
    kind: 'select',
    text: (b, p) => `${prefixes(b)}SELECT ?property ?hasValue ?isValueOf WHERE {
  { <${p.offer}> ?property ?hasValue } UNION { ?isValueOf ?property <${p.offer}> }
}`,
  },
  {
    id: 'agg-rating-by-type',
    what: 'average rating and review count per product type (GROUP BY over every rated review)',
    kind: 'select',
    text: (b) => `${prefixes(b)}SELECT ?type (AVG(?rating) AS ?avgRating) (COUNT(?review) AS ?reviews) WHERE {
  ?review :reviewFor ?product ; :rating1 ?rating .
  ?product :productType ?type .
} GROUP BY ?type ORDER BY ?type`,
  },
  {
    id: 'distinct-vendors',
    what: 'DISTINCT vendors with a fast-delivery offer, ORDER BY label LIMIT 10 (scans every offer)',
    kind: 'select',
    text: (b) => `${prefixes(b)}SELECT DISTINCT ?vendor ?label WHERE {
  ?offer :vendor ?vendor ; :deliveryDays ?days .
  FILTER (?days <= 2)
  ?vendor :vendorLabel ?label .
} ORDER BY ?label ?vendor LIMIT 10`,
  },
  {
    id: 'ask-cheap-offer',
    what: 'ASK: does the product have an offer below a price',
    kind: 'ask',
    text: (b, p) => `${prefixes(b)}ASK { ?offer :product <${p.product}> ; :price ?price . FILTER (?price < ${p.askPriceBelow}) }`,
  },
];

// ---------------------------------------------------------------------------------------------
// The same shape by number of records, generated record by record (bench/sparql.ts at 100k, 1M
// and 10M records): every record comes from a generator seeded by its kind and id, so a scale is
// written in batches and mapped again for Oxigraph without ever holding the dataset in memory.
// The data is not generate()'s (which draws every record from one sequence), only its shape.

/** Records per product: itself, 20 offers, 10 reviews, half a feature, half a person, 1/70 producer, 1/25 vendor. */
const RECORDS_PER_PRODUCT = 1 + 20 + 10 + 0.5 + 0.5 + 1 / 70 + 1 / 25;
/** Mapped triples per record on average (rdf:type included), measured: about 263 per product. */
export const TRIPLES_PER_RECORD = 8.2;

export interface RecordScale {
  records: number;
  products: number;
  types: number;
  features: number;
  producers: number;
  vendors: number;
  persons: number;
}

/** Table sizes for about `records` records in all (at least 10 products). */
export function recordScale(records: number): RecordScale {
  const products = Math.max(10, Math.round((records - 31) / RECORDS_PER_PRODUCT));
  const scale = { products, types: 31, features: Math.max(60, Math.round(products / 2)), producers: Math.max(3, Math.round(products / 70)), vendors: Math.max(3, Math.round(products / 25)), persons: Math.max(10, Math.round(products / 2)) };
  return { ...scale, records: scale.types + scale.features + scale.producers + scale.vendors + scale.persons + products * 31 };
}

type Kind = 'types' | 'features' | 'producers' | 'vendors' | 'persons' | 'products';
const KIND_SEEDS: Record<Kind, number> = { types: 1, features: 2, producers: 3, vendors: 4, persons: 5, products: 6 };

function drawing(kind: Kind, id: number) {
  const random = prng((0xb5b3 ^ Math.imul(KIND_SEEDS[kind], 0x9e3779b1) ^ Math.imul(id + 1, 0x85ebca6b)) >>> 0);
  const int = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));
  const pick = <T>(items: readonly T[]) => items[Math.floor(random() * items.length)];
  const word = () => Array.from({ length: int(2, 3) }, () => pick(SYLLABLES)).join('');
  const words = (n: number) => Array.from({ length: n }, word).join(' ');
  const sentence = (lo: number, hi: number) => {
    const text = words(int(lo, hi));
    return text.charAt(0).toUpperCase() + text.slice(1) + '.';
  };
  return { random, int, pick, word, words, sentence };
}

/** The leaf type of a product: 6..30, by id. */
const leafOf = (product: number) => 6 + (product % 25);

/** One record of a small table, by id. */
export function entityRecord(kind: Exclude<Kind, 'products'>, id: number): Row {
  const d = drawing(kind, id);
  switch (kind) {
    case 'types': {
      const parent = id === 0 ? undefined : id <= 5 ? 0 : 1 + Math.floor((id - 6) / 5);
      return { id, label: `${d.word()} ${id}`, comment: d.sentence(8, 20), ...(parent === undefined ? {} : { parent }) };
    }
    case 'features':
      return { id, label: `${d.word()} feature ${id}`, comment: d.sentence(6, 14) };
    case 'producers':
      return { id, label: `${d.word()} ${id}`, comment: d.sentence(8, 20), homepage: `https://producer${id}.bsbm.example/`, country: d.pick(COUNTRIES) };
    case 'vendors':
      return { id, label: `${d.word()} shop ${id}`, comment: d.sentence(8, 20), homepage: `https://vendor${id}.bsbm.example/`, country: COUNTRIES[id % COUNTRIES.length] };
    case 'persons':
      return { id, name: `${d.pick(FIRST)} ${d.pick(LAST)} ${id}`, mbox: `mailto:person${id}@bsbm.example`, country: d.pick(COUNTRIES) };
  }
}

/** A product with its 20 offers (ids product*20+k) and 10 reviews (ids product*10+k). */
export function productRecords(id: number, scale: RecordScale): { product: Row; offers: Row[]; reviews: Row[] } {
  const d = drawing('products', id);
  const own = new Set<number>();
  const wanted = d.int(5, 15);
  while (own.size < wanted) own.add(Math.floor(d.random() * scale.features));
  const product: Row = { id, label: `${d.words(2)} ${id}`, comment: d.sentence(12, 30), type: leafOf(id), producer: d.int(0, scale.producers - 1), features: [...own].sort((a, b) => a - b), published: dateAt('2000-01-01', d.int(0, 2900)) };
  for (let n = 1; n <= 5; n++) {
    if (n <= 3 || d.random() < 0.7) product[`num${n}`] = d.int(1, 2000);
    if (n <= 3 || d.random() < 0.7) product[`text${n}`] = d.words(d.int(3, 8));
  }
  const offers: Row[] = [];
  for (let k = 0; k < 20; k++) {
    const offer = id * 20 + k;
    const from = d.int(0, 170);
    offers.push({
      id: offer,
      product: id,
      vendor: d.int(0, scale.vendors - 1),
      price: Number((5 + d.random() * 9995).toFixed(2)),
      valid_from: dateAt('2008-01-01', from),
      valid_to: dateAt('2008-01-01', from + d.int(30, 120)),
      delivery_days: d.int(1, 7),
      webpage: `https://vendor.bsbm.example/offers/${offer}`,
    });
  }
  const reviews: Row[] = [];
  for (let k = 0; k < 10; k++) {
    const review: Row = { id: id * 10 + k, product: id, reviewer: d.int(0, scale.persons - 1), review_date: dateAt('2007-01-01', d.int(0, 540)), title: d.sentence(3, 7), text: d.sentence(20, 60) };
    if (d.random() < 0.9) review.rating1 = d.int(1, 10);
    if (d.random() < 0.7) review.rating2 = d.int(1, 10);
    reviews.push(review);
  }
  return { product, offers, reviews };
}

/** The small tables first (types, features, producers, vendors, persons), then products with their offers and reviews, `batch` products at a time. */
export function* recordBatches(scale: RecordScale, batch = 1000): Generator<{ table: keyof typeof MAPPINGS; rows: Row[] }> {
  const small: Array<[keyof typeof MAPPINGS, Exclude<Kind, 'products'>, number]> = [
    ['types', 'types', scale.types],
    ['features', 'features', scale.features],
    ['producers', 'producers', scale.producers],
    ['vendors', 'vendors', scale.vendors],
    ['persons', 'persons', scale.persons],
  ];
  for (const [table, kind, count] of small) {
    for (let from = 0; from < count; from += batch * 20) {
      yield { table, rows: Array.from({ length: Math.min(batch * 20, count - from) }, (_, i) => entityRecord(kind, from + i)) };
    }
  }
  for (let from = 0; from < scale.products; from += batch) {
    const products: Row[] = [];
    const offers: Row[] = [];
    const reviews: Row[] = [];
    for (let id = from; id < Math.min(scale.products, from + batch); id++) {
      const records = productRecords(id, scale);
      products.push(records.product);
      offers.push(...records.offers);
      reviews.push(...records.reviews);
    }
    yield { table: 'products', rows: products };
    yield { table: 'offers', rows: offers };
    yield { table: 'reviews', rows: reviews };
  }
}

/** The mix's parameters for a record scale, from the product in the middle (as generate() picks them). */
export function recordParams(scale: RecordScale): QueryParams {
  const chosenId = Math.floor(scale.products / 2);
  const { product: chosen, offers, reviews } = productRecords(chosenId, scale);
  const chosenFeatures = chosen.features as number[];
  // A feature of another product of the same leaf type (ids 25 apart) that the chosen one lacks.
  let otherFeature: number | undefined;
  for (let other = chosenId % 25; other < scale.products && otherFeature === undefined; other += 25) {
    if (other !== chosenId) otherFeature = (productRecords(other, scale).product.features as number[]).find((f) => !chosenFeatures.includes(f));
  }
  otherFeature ??= (chosenFeatures[0] + 1) % scale.features;
  const offer = offers[0];
  const leafType = chosen.type as number;
  const midType = 1 + Math.floor((leafType - 6) / 5);
  return {
    product: `${iri('products')}${chosenId}`,
    leafType: `${iri('types')}${leafType}`,
    midType: `${iri('types')}${midType}`,
    feature1: `${iri('features')}${chosenFeatures[0]}`,
    feature2: `${iri('features')}${chosenFeatures[1]}`,
    otherFeature: `${iri('features')}${otherFeature}`,
    numeric1Above: Math.max(0, (chosen.num1 as number) - 800),
    numeric3Below: Math.min(2001, (chosen.num3 as number) + 800),
    offer: `${iri('offers')}${offer.id}`,
    review: `${iri('reviews')}${reviews[0].id}`,
    country: COUNTRIES[(offer.vendor as number) % COUNTRIES.length],
    maxDeliveryDays: Math.max(3, offer.delivery_days as number),
    validAfter: dateAt(offer.valid_to as string, -1),
    askPriceBelow: (Math.min(...offers.map((o) => o.price as number)) + 1).toFixed(2),
  };
}

export const COUNTRY_CODES = COUNTRIES;
