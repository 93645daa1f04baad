import Ajv2020, { ErrorObject, ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import addErrors from 'ajv-errors';
import { FieldProblem, InputError } from './errors';

/** A JSON Schema (2020-12, the dialect of OpenAPI 3.1). */
export type JsonSchema = Record<string, unknown>;

/**
 * The one validator: request bodies, query strings, capability target contracts, the pipeline
 * document and the governed write action are all JSON Schemas checked here, and the OpenAPI
 * document embeds the same schema objects.
 */
// discriminator: oneOf branches chosen by a `type` property (the pipeline document's nodes) report
// only the chosen branch's problems, and OpenAPI 3.1 reads the same keyword.
const ajv = new Ajv2020({ allErrors: true, strict: true, coerceTypes: false, useDefaults: true, allowUnionTypes: true, discriminator: true });
addFormats(ajv);
// `errorMessage` in a schema replaces Ajv's generic text where a rule deserves a clearer one.
addErrors(ajv);
// OpenAPI annotations that Ajv would otherwise reject under strict mode.
ajv.addKeyword({ keyword: 'example' });
ajv.addKeyword({ keyword: 'x-weft-secret' });

/** Query strings arrive as text; their schemas coerce ("10" → 10, "a,b" stays a string). */
const queryAjv = new Ajv2020({ allErrors: true, strict: true, coerceTypes: 'array', useDefaults: true, allowUnionTypes: true });
addFormats(queryAjv);
addErrors(queryAjv);
queryAjv.addKeyword({ keyword: 'example' });

const compiled = new WeakMap<JsonSchema, ValidateFunction>();
const compiledQuery = new WeakMap<JsonSchema, ValidateFunction>();

function compile(schema: JsonSchema, forQuery: boolean): ValidateFunction {
  const cache = forQuery ? compiledQuery : compiled;
  let validate = cache.get(schema);
  if (!validate) {
    validate = (forQuery ? queryAjv : ajv).compile(schema);
    cache.set(schema, validate);
  }
  return validate;
}

export function describeProblems(errors: ErrorObject[] | null | undefined, prefix = ''): FieldProblem[] {
  const all = errors ?? [];
  // A discriminator whose tag is itself invalid is also reported at the tag: keep that precise one.
  const tagReported = (error: ErrorObject) => all.some((other) => other !== error && other.instancePath === `${error.instancePath}/${String(error.params.tag)}`);
  // An if/then failure is also reported by the precise `then` rule that failed; keep only that one.
  // A propertyNames failure is also reported at the key by the rule it broke; keep that one.
  const keyReported = (error: ErrorObject) => all.some((other) => other !== error && other.propertyName !== undefined && other.instancePath === error.instancePath);
  return all.filter((error) => error.keyword !== 'if' && !(error.keyword === 'discriminator' && tagReported(error)) && !(error.keyword === 'propertyNames' && keyReported(error))).map((error) => {
    let path = `${prefix}${error.instancePath}`;
    let message = error.message ?? 'is invalid';
    // A bad key under propertyNames: point at the key itself.
    if (error.propertyName !== undefined && error.keyword !== 'propertyNames') {
      path = `${path}/${error.propertyName}`;
      message = `field name ${message}`;
    }
    if (error.keyword === 'additionalProperties') {
      path = `${path}/${String(error.params.additionalProperty)}`;
      message = 'is not an accepted field';
    } else if (error.keyword === 'required') {
      path = `${path}/${String(error.params.missingProperty)}`;
      message = 'is required';
    } else if (error.keyword === 'enum') {
      message = `must be one of: ${(error.params.allowedValues as unknown[]).map(String).join(', ')}`;
    }
    return { path: path || prefix || '/', message };
  });
}

/** The problems of a value against a schema (filling defaults where the schema says so); [] when valid. Paths get `prefix`. */
export function schemaProblems(schema: JsonSchema, value: unknown, options: { query?: boolean; prefix?: string } = {}): FieldProblem[] {
  const validate = compile(schema, options.query ?? false);
  return validate(value) ? [] : describeProblems(validate.errors, options.prefix);
}

/** "path message; path message; …": the first few problems, for an error message. */
export function summarizeProblems(problems: FieldProblem[]): string {
  return problems.slice(0, 3).map((p) => `${p.path} ${p.message}`).join('; ') + (problems.length > 3 ? '; …' : '');
}

/**
 * Validates (and, where the schema says so, fills defaults into) a value. Throws an InputError
 * listing every problem; `part` names the request part for the message ("body", "query", "target").
 */
export function validateWithSchema<T>(schema: JsonSchema, value: unknown, part: string, options: { query?: boolean; code?: string } = {}): T {
  const problems = schemaProblems(schema, value, options);
  if (problems.length) {
    throw new InputError(options.code ?? 'validation_failed', `The ${part} is invalid: ${summarizeProblems(problems)}`, problems, { part });
  }
  return value as T;
}
