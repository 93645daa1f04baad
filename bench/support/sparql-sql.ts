/**
 * The hand-written SQL of each query of the sparql bench's mix (bench/support/sparql-bsbm.ts), over
 * the managed tables the bench loads, as someone who knows the storage would write it
 * (plugins/managed-table/storage.ts): one PostgreSQL table per managed table in the workspace's
 * schema, one row per record version (row_key, data jsonb, valid_from, valid_to), the current
 * version where valid_to IS NULL, and row_key the primary key's values as a JSON array (`[42]`), so
 * a lookup by id, or a link to a record by its id, uses the partial unique index on row_key. Links
 * to records by anything else (an offer's product, a review's product) have no index unless one is
 * made (the bench's --sql-indexes); the SQL does not assume one.
 *
 * Each query says how its columns become SPARQL terms, so the peer (sparql-sql-peer.ts) answers
 * SPARQL JSON results (N-Triples for the CONSTRUCT) with exactly the terms Weft's mapping makes
 * (ontology/term-records.ts): a record id in an IRI template, a field's JSON text as the literal.
 * Orders follow SPARQL's: strings and IRIs by code point (COLLATE "C"), dates and numbers by value.
 */
import { DATA, MixQuery, QueryParams } from './sparql-bsbm';

const XSD = 'http://www.w3.org/2001/XMLSchema#';
const RDF_TYPE = 'http://www.w3.org/1999/02/22-rdf-syntax-ns#type';

/** How a column becomes a term: an IRI (prefix + the column's text), a literal of a datatype, or either, named per row by the column `<name>_t` ('uri' or a datatype IRI). */
export type ColumnTerm = { iri: string } | { literal: string } | 'dynamic';

export interface SqlQuery {
  id: string;
  kind: MixQuery['kind'];
  sql: string;
  values: string[];
  /** SELECT: the projected variables in order; CONSTRUCT: subject, predicate and object of the template's one triple. */
  vars: string[];
  terms: Record<string, ColumnTerm>;
}

const idOf = (iri: string) => iri.slice(iri.lastIndexOf('/') + 1);
const key = (iri: string) => `[${idOf(iri)}]`;
const iri = (kind: string) => ({ iri: `${DATA}${kind}/` });
const lit = (datatype: string) => ({ literal: datatype === 'string' ? '' : `${XSD}${datatype}` });

/** `'[' || <json number as text> || ']'`: the row_key of the record a numeric link points to. */
const keyOf = (expr: string) => `'[' || (${expr}) || ']'`;

/** The hand-written SQL of every mix query, for the workspace schema and the ontology's base IRI. */
export function handWrittenSql(schema: string, base: string, p: QueryParams): SqlQuery[] {
  const t = (table: string) => `"${schema}"."${table}"`;
  const product = idOf(p.product);
  return [
    {
      id: 'q1-type-features',
      kind: 'select',
      sql: `WITH RECURSIVE sub(id) AS (
  SELECT $1::jsonb
  UNION
  SELECT t.data -> 'id' FROM ${t('product_types')} t JOIN sub ON t.data -> 'parent' = sub.id WHERE t.valid_to IS NULL
)
SELECT DISTINCT (p.data ->> 'id') COLLATE "C" AS product, (p.data ->> 'label') COLLATE "C" AS label
FROM ${t('products')} p
WHERE p.valid_to IS NULL AND p.data -> 'type' IN (SELECT id FROM sub)
  AND p.data -> 'features' @> $2::jsonb AND p.data -> 'features' @> $3::jsonb
  AND p.data ->> 'label' IS NOT NULL AND (p.data ->> 'num1')::numeric > $4::numeric
ORDER BY label, product LIMIT 10`,
      values: [idOf(p.midType), `[${idOf(p.feature1)}]`, `[${idOf(p.feature2)}]`, String(p.numeric1Above)],
      vars: ['product', 'label'],
      terms: { product: iri('products'), label: lit('string') },
    },
    {
      id: 'q2-product-details',
      kind: 'select',
      sql: `SELECT p.data ->> 'label' AS label, p.data ->> 'comment' AS comment, p.data ->> 'producer' AS producer, pr.data ->> 'label' AS "producerLabel",
  f.feature, fe.data ->> 'label' AS "featureLabel", p.data ->> 'text1' AS t1, p.data ->> 'text2' AS t2, p.data ->> 'text3' AS t3,
  p.data ->> 'num1' AS n1, p.data ->> 'num2' AS n2, p.data ->> 'text4' AS t4, p.data ->> 'text5' AS t5, p.data ->> 'num4' AS n4
FROM ${t('products')} p
JOIN ${t('producers')} pr ON pr.row_key = ${keyOf(`p.data ->> 'producer'`)} AND pr.valid_to IS NULL
CROSS JOIN LATERAL jsonb_array_elements_text(p.data -> 'features') AS f(feature)
JOIN ${t('product_features')} fe ON fe.row_key = ${keyOf('f.feature')} AND fe.valid_to IS NULL
WHERE p.row_key = $1 AND p.valid_to IS NULL
  AND p.data ->> 'label' IS NOT NULL AND p.data ->> 'comment' IS NOT NULL
  AND p.data ->> 'text1' IS NOT NULL AND p.data ->> 'text2' IS NOT NULL AND p.data ->> 'text3' IS NOT NULL
  AND p.data ->> 'num1' IS NOT NULL AND p.data ->> 'num2' IS NOT NULL
  AND pr.data ->> 'label' IS NOT NULL AND fe.data ->> 'label' IS NOT NULL`,
      values: [key(p.product)],
      vars: ['label', 'comment', 'producer', 'producerLabel', 'feature', 'featureLabel', 't1', 't2', 't3', 'n1', 'n2', 't4', 't5', 'n4'],
      terms: {
        label: lit('string'),
        comment: lit('string'),
        producer: iri('producers'),
        producerLabel: lit('string'),
        feature: iri('features'),
        featureLabel: lit('string'),
        t1: lit('string'),
        t2: lit('string'),
        t3: lit('string'),
        n1: lit('integer'),
        n2: lit('integer'),
        t4: lit('string'),
        t5: lit('string'),
        n4: lit('integer'),
      },
    },
    {
      id: 'q3-feature-not',
      kind: 'select',
      sql: `SELECT (p.data ->> 'id') COLLATE "C" AS product, (p.data ->> 'label') COLLATE "C" AS label
FROM ${t('products')} p
WHERE p.valid_to IS NULL AND p.data -> 'type' = $1::jsonb
  AND p.data -> 'features' @> $2::jsonb AND NOT (p.data -> 'features' @> $3::jsonb)
  AND p.data ->> 'label' IS NOT NULL
  AND (p.data ->> 'num1')::numeric > $4::numeric AND (p.data ->> 'num3')::numeric < $5::numeric
ORDER BY label, product LIMIT 10`,
      values: [idOf(p.leafType), `[${idOf(p.feature1)}]`, `[${idOf(p.otherFeature)}]`, String(p.numeric1Above), String(p.numeric3Below)],
      vars: ['product', 'label'],
      terms: { product: iri('products'), label: lit('string') },
    },
    {
      id: 'q5-similar',
      kind: 'select',
      sql: `SELECT DISTINCT (q.data ->> 'id') COLLATE "C" AS product, (q.data ->> 'label') COLLATE "C" AS "productLabel"
FROM ${t('products')} o
JOIN ${t('products')} q ON q.valid_to IS NULL AND q.row_key <> o.row_key
WHERE o.row_key = $1 AND o.valid_to IS NULL AND q.data ->> 'label' IS NOT NULL
  AND (q.data ->> 'num1')::numeric < (o.data ->> 'num1')::numeric + 120 AND (q.data ->> 'num1')::numeric > (o.data ->> 'num1')::numeric - 120
  AND (q.data ->> 'num2')::numeric < (o.data ->> 'num2')::numeric + 170 AND (q.data ->> 'num2')::numeric > (o.data ->> 'num2')::numeric - 170
  AND EXISTS (SELECT 1 FROM jsonb_array_elements(o.data -> 'features') f(feature) WHERE q.data -> 'features' @> jsonb_build_array(f.feature))
ORDER BY "productLabel", product LIMIT 5`,
      values: [key(p.product)],
      vars: ['product', 'productLabel'],
      terms: { product: iri('products'), productLabel: lit('string') },
    },
    {
      id: 'q7-product-page',
      kind: 'select',
      // The product's offers and reviews are found by its id first (MATERIALIZED: PostgreSQL, left
      // to flatten the OPTIONALs, joined every offer to its vendor before filtering on the product).
      sql: `WITH p AS (
  SELECT data FROM ${t('products')} WHERE row_key = $1 AND valid_to IS NULL AND data ->> 'label' IS NOT NULL
), o AS MATERIALIZED (
  SELECT data FROM ${t('offers')} WHERE valid_to IS NULL AND data -> 'product' = $4::jsonb AND data ->> 'price' IS NOT NULL AND (data ->> 'valid_to')::date > $2::date
), ov AS (
  SELECT o.data ->> 'id' AS offer, o.data ->> 'price' AS price, o.data ->> 'vendor' AS vendor, v.data ->> 'label' AS "vendorTitle"
  FROM o JOIN ${t('vendors')} v ON v.row_key = ${keyOf(`o.data ->> 'vendor'`)} AND v.valid_to IS NULL
  WHERE v.data ->> 'label' IS NOT NULL AND v.data ->> 'country' = $3
), r AS MATERIALIZED (
  SELECT data FROM ${t('reviews')} WHERE valid_to IS NULL AND data -> 'product' = $4::jsonb AND data ->> 'title' IS NOT NULL
), rp AS (
  SELECT r.data ->> 'id' AS review, r.data ->> 'title' AS "revTitle", r.data ->> 'reviewer' AS reviewer, pe.data ->> 'name' AS "revName",
    r.data ->> 'rating1' AS rating1, r.data ->> 'rating2' AS rating2
  FROM r JOIN ${t('persons')} pe ON pe.row_key = ${keyOf(`r.data ->> 'reviewer'`)} AND pe.valid_to IS NULL
  WHERE pe.data ->> 'name' IS NOT NULL
)
SELECT p.data ->> 'label' AS "productLabel", ov.offer, ov.price, ov.vendor, ov."vendorTitle", rp.review, rp."revTitle", rp.reviewer, rp."revName", rp.rating1, rp.rating2
FROM p LEFT JOIN ov ON true LEFT JOIN rp ON true`,
      values: [key(p.product), p.validAfter, p.country, product],
      vars: ['productLabel', 'offer', 'price', 'vendor', 'vendorTitle', 'review', 'revTitle', 'reviewer', 'revName', 'rating1', 'rating2'],
      terms: {
        productLabel: lit('string'),
        offer: iri('offers'),
        price: lit('decimal'),
        vendor: iri('vendors'),
        vendorTitle: lit('string'),
        review: iri('reviews'),
        revTitle: lit('string'),
        reviewer: iri('persons'),
        revName: lit('string'),
        rating1: lit('integer'),
        rating2: lit('integer'),
      },
    },
    {
      id: 'q8-reviews',
      kind: 'select',
      // The product's reviews first, then each reviewer by its key (see q7).
      sql: `WITH r AS MATERIALIZED (
  SELECT data FROM ${t('reviews')} WHERE valid_to IS NULL AND data -> 'product' = $1::jsonb
    AND data ->> 'title' IS NOT NULL AND data ->> 'text' IS NOT NULL AND data ->> 'review_date' IS NOT NULL
)
SELECT r.data ->> 'id' AS review, r.data ->> 'title' AS title, r.data ->> 'text' AS text, r.data ->> 'review_date' AS "reviewDate",
  r.data ->> 'reviewer' AS reviewer, pe.data ->> 'name' AS "reviewerName", r.data ->> 'rating1' AS rating1, r.data ->> 'rating2' AS rating2
FROM r JOIN ${t('persons')} pe ON pe.row_key = ${keyOf(`r.data ->> 'reviewer'`)} AND pe.valid_to IS NULL
WHERE pe.data ->> 'name' IS NOT NULL
ORDER BY (r.data ->> 'review_date')::date DESC, (r.data ->> 'id') COLLATE "C" LIMIT 20`,
      values: [product],
      vars: ['review', 'title', 'text', 'reviewDate', 'reviewer', 'reviewerName', 'rating1', 'rating2'],
      terms: { review: iri('reviews'), title: lit('string'), text: lit('string'), reviewDate: lit('date'), reviewer: iri('persons'), reviewerName: lit('string'), rating1: lit('integer'), rating2: lit('integer') },
    },
    {
      id: 'q9-construct-reviewer',
      kind: 'construct',
      // A person's triples: its type and its mapped properties (nothing else has a person as subject).
      sql: `SELECT r.data ->> 'reviewer' AS reviewer, x.p, x.o, x.o_t
FROM ${t('reviews')} r
JOIN ${t('persons')} pe ON pe.row_key = ${keyOf(`r.data ->> 'reviewer'`)} AND pe.valid_to IS NULL
CROSS JOIN LATERAL (VALUES ($2::text, $3::text, 'uri'), ($4::text, pe.data ->> 'name', ''), ($5::text, pe.data ->> 'mbox', ''), ($6::text, pe.data ->> 'country', '')) AS x(p, o, o_t)
WHERE r.row_key = $1 AND r.valid_to IS NULL AND x.o IS NOT NULL`,
      values: [key(p.review), RDF_TYPE, `${base}Person`, `${base}personName`, `${base}mbox`, `${base}personCountry`],
      vars: ['reviewer', 'p', 'o'],
      terms: { reviewer: iri('persons'), p: { iri: '' }, o: 'dynamic' },
    },
    {
      id: 'q10-offers',
      kind: 'select',
      // The product's offers first (MATERIALIZED: misjudging the vendors' country filter, PostgreSQL scanned every offer once per vendor).
      sql: `WITH o AS MATERIALIZED (
  SELECT data FROM ${t('offers')} WHERE valid_to IS NULL AND data -> 'product' = $1::jsonb AND data ->> 'price' IS NOT NULL
    AND (data ->> 'delivery_days')::numeric <= $2::numeric AND (data ->> 'valid_to')::date > $3::date
)
SELECT o.data ->> 'id' AS offer, o.data ->> 'price' AS price
FROM o JOIN ${t('vendors')} v ON v.row_key = ${keyOf(`o.data ->> 'vendor'`)} AND v.valid_to IS NULL
WHERE v.data ->> 'country' = $4
ORDER BY (o.data ->> 'price')::float8, (o.data ->> 'id') COLLATE "C" LIMIT 10`,
      values: [product, String(p.maxDeliveryDays), p.validAfter, p.country],
      vars: ['offer', 'price'],
      terms: { offer: iri('offers'), price: lit('decimal') },
    },
    {
      id: 'q11-offer-union',
      kind: 'select',
      // The second branch (triples into the offer) is empty by the mapping: no binding links to offers.
      sql: `SELECT x.property, x."hasValue", x."hasValue_t"
FROM ${t('offers')} o
CROSS JOIN LATERAL (VALUES
  ($2::text, $3::text, 'uri'),
  ($4::text, o.data ->> 'price', '${XSD}decimal'),
  ($5::text, o.data ->> 'valid_from', '${XSD}date'),
  ($6::text, o.data ->> 'valid_to', '${XSD}date'),
  ($7::text, o.data ->> 'delivery_days', '${XSD}integer'),
  ($8::text, o.data ->> 'webpage', '${XSD}anyURI'),
  ($9::text, $10::text || (o.data ->> 'product'), 'uri'),
  ($11::text, $12::text || (o.data ->> 'vendor'), 'uri')
) AS x(property, "hasValue", "hasValue_t")
WHERE o.row_key = $1 AND o.valid_to IS NULL AND x."hasValue" IS NOT NULL`,
      values: [key(p.offer), RDF_TYPE, `${base}Offer`, `${base}price`, `${base}validFrom`, `${base}validTo`, `${base}deliveryDays`, `${base}offerWebpage`, `${base}product`, `${DATA}products/`, `${base}vendor`, `${DATA}vendors/`],
      vars: ['property', 'hasValue', 'isValueOf'],
      terms: { property: { iri: '' }, hasValue: 'dynamic', isValueOf: { iri: '' } },
    },
    {
      id: 'agg-rating-by-type',
      kind: 'select',
      sql: `SELECT p.data ->> 'type' AS type, avg((r.data ->> 'rating1')::numeric) AS "avgRating", count(*) AS reviews
FROM ${t('reviews')} r
JOIN ${t('products')} p ON p.row_key = ${keyOf(`r.data ->> 'product'`)} AND p.valid_to IS NULL
WHERE r.valid_to IS NULL AND r.data ->> 'rating1' IS NOT NULL AND p.data ->> 'type' IS NOT NULL
GROUP BY p.data ->> 'type'
ORDER BY (p.data ->> 'type') COLLATE "C"`,
      values: [],
      vars: ['type', 'avgRating', 'reviews'],
      terms: { type: iri('types'), avgRating: lit('decimal'), reviews: lit('integer') },
    },
    {
      id: 'distinct-vendors',
      kind: 'select',
      sql: `SELECT (v.data ->> 'id') COLLATE "C" AS vendor, (v.data ->> 'label') COLLATE "C" AS label
FROM ${t('vendors')} v
WHERE v.valid_to IS NULL AND v.data ->> 'label' IS NOT NULL
  AND v.row_key IN (SELECT ${keyOf(`o.data ->> 'vendor'`)} FROM ${t('offers')} o WHERE o.valid_to IS NULL AND (o.data ->> 'delivery_days')::numeric <= 2)
ORDER BY label, vendor LIMIT 10`,
      values: [],
      vars: ['vendor', 'label'],
      terms: { vendor: iri('vendors'), label: lit('string') },
    },
    {
      id: 'ask-cheap-offer',
      kind: 'ask',
      sql: `SELECT EXISTS (
  SELECT 1 FROM ${t('offers')} o WHERE o.valid_to IS NULL AND o.data -> 'product' = $1::jsonb AND (o.data ->> 'price')::numeric < $2::numeric
) AS ask`,
      values: [product, p.askPriceBelow],
      vars: [],
      terms: {},
    },
  ];
}

/**
 * Expression indexes a developer might add for the mix's links that are not primary keys (the
 * bench's --sql-indexes): an offer's and a review's product. They serve Weft's SQL path over the
 * same tables as much as the hand-written SQL.
 */
export function linkIndexes(schema: string): string[] {
  const t = (table: string) => `"${schema}"."${table}"`;
  return [
    `CREATE INDEX IF NOT EXISTS bench_offers_product ON ${t('offers')} ((data -> 'product')) WHERE valid_to IS NULL`,
    `CREATE INDEX IF NOT EXISTS bench_reviews_product ON ${t('reviews')} ((data -> 'product')) WHERE valid_to IS NULL`,
  ];
}
