// RDF terms as the evaluator's expressions see them: plain objects decoded from n3 entity keys
// (the strings n3 interns terms by), and encoded back to keys for computed values. Literals carry
// a slot for their parsed value, filled on first use (see literal-values.ts).

export const XSD = 'http://www.w3.org/2001/XMLSchema#';
export const XSD_STRING = `${XSD}string`;
export const XSD_BOOLEAN = `${XSD}boolean`;
export const XSD_INTEGER = `${XSD}integer`;
export const XSD_DECIMAL = `${XSD}decimal`;
export const XSD_FLOAT = `${XSD}float`;
export const XSD_DOUBLE = `${XSD}double`;
export const XSD_DATE_TIME = `${XSD}dateTime`;
export const XSD_DATE = `${XSD}date`;
export const RDF_LANG_STRING = 'http://www.w3.org/1999/02/22-rdf-syntax-ns#langString';

export interface NamedNodeTerm {
  readonly termType: 'NamedNode';
  readonly value: string;
}

export interface BlankNodeTerm {
  readonly termType: 'BlankNode';
  readonly value: string;
}

/** A term expressions cannot look into (a quoted triple, a literal with a base direction): only identity applies. */
export interface OpaqueTerm {
  readonly termType: 'Opaque';
  readonly value: string;
}

export class LiteralTerm {
  readonly termType = 'Literal';
  /** The parsed value (literal-values.ts), computed on first use; undefined until then. */
  parsed: unknown = undefined;

  constructor(
    readonly value: string,
    /** The datatype IRI; rdf:langString when `language` is set. */
    readonly datatype: string,
    /** Lowercase language tag, or '' when none. */
    readonly language: string,
  ) {}
}

export type Term = NamedNodeTerm | BlankNodeTerm | LiteralTerm | OpaqueTerm;

export const namedNode = (value: string): NamedNodeTerm => ({ termType: 'NamedNode', value });
export const simpleLiteral = (value: string): LiteralTerm => new LiteralTerm(value, XSD_STRING, '');
export const typedLiteral = (value: string, datatype: string): LiteralTerm => new LiteralTerm(value, datatype, '');
export const langLiteral = (value: string, language: string): LiteralTerm => new LiteralTerm(value, RDF_LANG_STRING, language.toLowerCase());

export const TRUE = typedLiteral('true', XSD_BOOLEAN);
export const FALSE = typedLiteral('false', XSD_BOOLEAN);
export const booleanTerm = (value: boolean): LiteralTerm => (value ? TRUE : FALSE);

/** IRIs that n3 writes in angle brackets in its keys: those starting with a character that marks a term type. */
const MARKED_IRI = /^[?_"[.<]/;

/** The key n3's entity index uses for a term (see entityKey in n3's N3Store.js). */
export function entityKeyOf(term: Term): string {
  switch (term.termType) {
    case 'NamedNode':
      return term.value === '' ? '<>' : MARKED_IRI.test(term.value) ? `<${term.value}>` : term.value;
    case 'BlankNode':
      return `_:${term.value}`;
    case 'Literal':
      if (term.language) return `"${term.value}"@${term.language}`;
      return term.datatype === XSD_STRING ? `"${term.value}"` : `"${term.value}"^^${term.datatype}`;
    case 'Opaque':
      return term.value;
  }
}

/** Decodes an entity key into a term. */
export function termFromEntityKey(key: string): Term {
  const first = key.charCodeAt(0);
  if (first === 0x22 /* " */) {
    const end = key.lastIndexOf('"');
    const value = key.slice(1, end);
    if (end === key.length - 1) return new LiteralTerm(value, XSD_STRING, '');
    if (key.charCodeAt(end + 1) === 0x40 /* @ */) {
      const language = key.slice(end + 2);
      // RDF 1.2 base directions (@en--ltr) are beyond SPARQL 1.1's functions.
      return language.includes('--') ? { termType: 'Opaque', value: key } : new LiteralTerm(value, RDF_LANG_STRING, language);
    }
    return new LiteralTerm(value, key.slice(end + 3), '');
  }
  if (first === 0x5f /* _ */ && key.charCodeAt(1) === 0x3a /* : */) return { termType: 'BlankNode', value: key.slice(2) };
  if (first === 0x3c /* < */) return namedNode(key.slice(1, -1));
  // Quoted triples ([ or .) and variables (?) never take part in SPARQL 1.1 expressions.
  if (first === 0x5b || first === 0x2e || first === 0x3f) return { termType: 'Opaque', value: key };
  return namedNode(key);
}

/** A simple literal or xsd:string (the same in RDF 1.1). */
export const isSimpleString = (term: Term): term is LiteralTerm => term.termType === 'Literal' && term.datatype === XSD_STRING;
/** A string literal of SPARQL's string functions: simple, xsd:string or language-tagged. */
export const isStringLiteral = (term: Term): term is LiteralTerm => term.termType === 'Literal' && (term.datatype === XSD_STRING || term.language !== '');

export function sameTerm(a: Term, b: Term): boolean {
  if (a === b) return true;
  if (a.termType !== b.termType || a.value !== b.value) return false;
  if (a.termType !== 'Literal') return true;
  const other = b as LiteralTerm;
  return a.datatype === other.datatype && a.language === other.language;
}
