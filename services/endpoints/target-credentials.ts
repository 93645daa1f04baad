import type { FieldProblem } from '../../core/errors';
import type { JsonSchema } from '../../core/schema-validator';

// An endpoint's target is readable by any endpoints:read key, so it must never hold a credential:
// those belong in the plugin installation's settings, stored encrypted and never returned. Names
// are judged by the words they contain, values by their look; nothing here echoes a value.

/** Words that make a field, header or query parameter name a credential (or a connection setting). */
const CREDENTIAL_WORDS = new Set([
  'token', 'tokens', 'secret', 'secrets', 'password', 'passwd', 'passphrase', 'passcode', 'pass', 'pwd',
  'credential', 'credentials', 'bearer', 'cookie', 'sig', 'signature', 'auth', 'oauth', 'authorization',
  'authentication', 'apikey', 'accesskey', 'secretkey', 'privatekey', 'clientsecret', 'authtoken',
  'accesstoken', 'refreshtoken', 'dsn', 'connectionstring', 'host', 'hostname',
]);

/**
 * "key" is how many APIs name their credential: ?key=… (Google), user_key (3scale), X-API-Key,
 * access_key. It is a credential word, except where it names a record key: after one of these words
 * (primaryKey, sort_key, partitionKey), or before a word that makes the name about a key rather
 * than the key itself (keyField, key_fields).
 */
const RECORD_KEY_QUALIFIERS = new Set(['primary', 'foreign', 'sort', 'order', 'partition', 'range', 'row', 'record', 'unique', 'natural', 'surrogate', 'composite', 'dedup', 'dedupe', 'join', 'lookup', 'group']);
const ABOUT_KEY_WORDS = new Set(['field', 'fields', 'column', 'columns', 'name', 'names', 'path', 'paths']);

/** A name's words: camelCase, snake_case, kebab-case and digits split, lowercased. */
export function nameWords(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .split(/[^A-Za-z]+/)
    .filter(Boolean)
    .map((word) => word.toLowerCase());
}

/** Does this name (a field, a header, a query parameter) say that its value is a credential? */
export function isCredentialName(name: string, { structural = false }: { structural?: boolean } = {}): boolean {
  const words = nameWords(name);
  if (words.some((word) => CREDENTIAL_WORDS.has(word))) return true;
  if (CREDENTIAL_WORDS.has(words.join(''))) return true;
  // A field the target schema declares is structural: its "key" is the schema's, not a credential.
  if (structural) return false;
  return words.some((word, i) => (word === 'key' || word === 'keys') && !RECORD_KEY_QUALIFIERS.has(words[i - 1]) && !ABOUT_KEY_WORDS.has(words[i + 1]));
}

const CREDENTIAL_PREFIXES = /^(?:sk|rk|pk)_(?:live|test)_|^gh[pousr]_[A-Za-z0-9]{20,}|^github_pat_|^xox[abprs]-|^AKIA[0-9A-Z]{16}$|^weft_sk_|^glpat-|^AIza[0-9A-Za-z_-]{30,}/;
const AUTH_SCHEME = /^(?:bearer|basic|token|digest|apikey)\s+\S{8,}/i;
const JWT = /^eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function entropyBitsPerChar(text: string): number {
  const counts = new Map<string, number>();
  for (const char of text) counts.set(char, (counts.get(char) ?? 0) + 1);
  let bits = 0;
  for (const count of counts.values()) bits -= (count / text.length) * Math.log2(count / text.length);
  return bits;
}

/** Does this value look like a secret: an auth header value, a token of a known kind, or a long random string? */
export function looksLikeCredential(value: string): boolean {
  const text = value.trim();
  if (AUTH_SCHEME.test(text) || JWT.test(text) || CREDENTIAL_PREFIXES.test(text)) return true;
  if (text.length < 32 || UUID.test(text) || !/^[A-Za-z0-9+/_=.~-]+$/.test(text)) return false;
  // Identifiers, paths and dates are long too, but never this random and never without digits.
  return /[0-9]/.test(text) && /[A-Za-z]/.test(text) && entropyBitsPerChar(text) >= 4;
}

/** A string that is a URL (absolute, or a path with a query string), parsed; undefined otherwise. */
function asUrl(value: string): URL | undefined {
  try {
    if (/^[a-z][a-z0-9+.-]*:\/\//i.test(value)) return new URL(value);
    if (value.startsWith('/') && value.includes('?')) return new URL(value, 'http://relative.invalid');
  } catch {
    return undefined;
  }
  return undefined;
}

const MOVE_IT = 'put credentials in the plugin installation’s settings, which are stored encrypted and never returned, not in the endpoint target';

/** The schema of property `name` in an object schema, when it declares that property by name. */
function declaredProperty(schema: JsonSchema | undefined, name: string): JsonSchema | undefined {
  const properties = schema?.properties as Record<string, JsonSchema> | undefined;
  return properties && Object.prototype.hasOwnProperty.call(properties, name) ? properties[name] : undefined;
}

/**
 * Every place in a target that holds, or names, a credential. Paths are JSON Pointers into the
 * target. With the capability's target schema, the names it declares (primaryKey, primaryKeys…)
 * are its structure and are judged by the credential words only; names it leaves free (the query
 * parameters of request.query, headers, fields it does not know) and URL query parameter names are
 * judged by every word, "key" included.
 */
export function targetCredentialProblems(value: unknown, schema?: JsonSchema, path = ''): FieldProblem[] {
  if (Array.isArray(value)) return value.flatMap((item, index) => targetCredentialProblems(item, schema?.items as JsonSchema | undefined, `${path}/${index}`));
  if (value && typeof value === 'object') {
    return Object.entries(value).flatMap(([key, inner]) => {
      const at = `${path}/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`;
      const declared = declaredProperty(schema, key);
      return isCredentialName(key, { structural: declared !== undefined }) ? [{ path: at, message: `"${key}" names a credential: ${MOVE_IT}` }] : targetCredentialProblems(inner, declared, at);
    });
  }
  if (typeof value !== 'string') return [];
  const url = asUrl(value);
  if (url) {
    const problems: FieldProblem[] = [];
    if (url.username || url.password) problems.push({ path: path || '/', message: `must not embed credentials in a URL: ${MOVE_IT}` });
    for (const name of new Set(url.searchParams.keys())) {
      if (isCredentialName(name)) problems.push({ path: path || '/', message: `the URL's query parameter "${name}" carries a credential: ${MOVE_IT}` });
      else if (url.searchParams.getAll(name).some(looksLikeCredential)) problems.push({ path: path || '/', message: `the URL's query parameter "${name}" looks like a credential: ${MOVE_IT}` });
    }
    return problems;
  }
  return looksLikeCredential(value) ? [{ path: path || '/', message: `looks like a credential: ${MOVE_IT}` }] : [];
}
