import { comparisonOperators, ConditionDialect, SqlParams } from '../sql/builder';

// Conditions on records stored as jsonb: writes compile them exactly (jsonbConditions), reads with
// text comparisons where those mean the same (readConditions).

/** A record field as jsonb; a missing field reads as JSON null, so comparisons and ordering never meet SQL NULL. */
export const fieldSql = (field: string, params: SqlParams) => `coalesce(data -> ${params.add(field)}::text, 'null'::jsonb)`;
export const jsonParam = (value: unknown, params: SqlParams) => `${params.add(JSON.stringify(value))}::jsonb`;

export const jsonbConditions: ConditionDialect = {
  compare(field, op, value, params) {
    const expr = fieldSql(field, params);
    const literal = jsonParam(value, params);
    if (op === 'eq' || op === 'ne') return `${expr} ${comparisonOperators[op]} ${literal}`;
    // jsonb orders across types (strings below numbers): range comparisons only match values of the same JSON type.
    return `jsonb_typeof(${expr}) = jsonb_typeof(${literal}) AND ${expr} ${comparisonOperators[op]} ${literal}`;
  },
  isIn: (field, values, params) => `${fieldSql(field, params)} IN (SELECT jsonb_array_elements(${jsonParam(values, params)}))`,
  // Present with a non-null value, the same meaning as IS NOT NULL on a postgres_table column.
  exists: (field, params) => `${fieldSql(field, params)} <> 'null'::jsonb`,
};

/**
 * `data ->> field` renders a field as text without building a jsonb value per record: a string as
 * itself, a number as numeric text (a digit or "-" first), true/false, an object or array as JSON
 * text ("{" or "[" first), JSON null and a missing field as SQL NULL. So for a string that cannot be
 * the rendering of anything else, `data ->> field = string` holds exactly when the field is that
 * string: the same records as the jsonb comparison.
 */
const unambiguousText = (value: unknown): value is string => typeof value === 'string' && !/^[-0-9{[]/.test(value) && value !== 'true' && value !== 'false';

/**
 * Reads compile conditions as writes do, but compare strings as text where that means the same
 * (see unambiguousText), and put a text comparison in front of the exact jsonb one where it may not:
 * a full scan of a large table evaluates its conditions on every record version, and building a jsonb
 * value per record and per condition is most of their cost.
 */
export const readConditions: ConditionDialect = {
  ...jsonbConditions,
  compare(field, op, value, params) {
    if (op !== 'eq' || typeof value !== 'string') return jsonbConditions.compare(field, op, value, params);
    const text = `(data ->> ${params.add(field)}::text) = ${params.add(value)}::text`;
    return unambiguousText(value) ? text : `${text} AND ${jsonbConditions.compare(field, op, value, params)}`;
  },
  isIn(field, values, params) {
    if (!values.every((value) => typeof value === 'string')) return jsonbConditions.isIn(field, values, params);
    const text = `(data ->> ${params.add(field)}::text) = ANY (ARRAY(SELECT jsonb_array_elements_text(${jsonParam(values, params)})))`;
    return values.every(unambiguousText) ? text : `${text} AND ${jsonbConditions.isIn(field, values, params)}`;
  },
};
