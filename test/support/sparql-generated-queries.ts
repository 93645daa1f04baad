import fc from 'fast-check';

// Generated SPARQL queries over two stars of bound tables, an Order (total, placedBy) and the
// Customer it is placed by (name, age), with subjects https://example.com/orders/{id} and
// https://example.com/customers/{id}: the shapes PostgreSQL answers (services/ontology/
// sparql-in-sql.ts), for tests comparing its answers with the evaluator's.

export const choices = fc.array(fc.nat({ max: 1_000_000 }), { minLength: 48, maxLength: 48 });

/** Choices read from fast-check's numbers, so a failing query shrinks with them. */
export class Picks {
  private at = 0;
  constructor(private readonly numbers: number[]) {}
  next(n: number): number {
    return this.numbers[this.at++ % this.numbers.length] % n;
  }
  pick<T>(items: readonly T[]): T {
    return items[this.next(items.length)];
  }
  chance(percent: number): boolean {
    return this.next(100) < percent;
  }
}

type ValueKind = 'number' | 'string' | 'iri';
const STARS = [
  { subject: 'o', type: 'Order', triples: [{ predicate: 'total', variable: 't', kind: 'number' }, { predicate: 'placedBy', variable: 'c', kind: 'iri' }] },
  { subject: 'c', type: 'Customer', triples: [{ predicate: 'name', variable: 'name', kind: 'string' }, { predicate: 'age', variable: 'age', kind: 'number' }] },
] as const;
const CONSTANTS: Record<ValueKind, string[]> = {
  number: ['0', '1', '2.5', '5', '5.0', '10', '12', '36', '-1', '0.1', '30'],
  string: ['"Ada"', '"ada"', '"Bob"', '"bob"', '"Cy"', '"É"', '"Émile"', '"Z"', '""', '"\u{1D49C}"', '"\uFB00"', '"Di"'],
  iri: ['<https://example.com/customers/1>', '<https://example.com/customers/2>', '<https://example.com/customers/x%20y%2F%C3%A9>', '<https://example.com/orders/1>', '<https://example.com/orders/a%20b>', '<https://example.com/elsewhere/1>'],
};

/** A FILTER over these variables: comparisons, IN, bound and string tests joined by &&, || and !. */
function condition(picks: Picks, variables: Array<{ name: string; kind: ValueKind }>, depth = 0): string {
  if (depth < 2 && picks.chance(45)) {
    const operator = picks.pick(['&&', '||', '!'] as const);
    if (operator === '!') return `!(${condition(picks, variables, depth + 1)})`;
    return `(${condition(picks, variables, depth + 1)} ${operator} ${condition(picks, variables, depth + 1)})`;
  }
  const { name, kind } = picks.pick(variables);
  const constant = () => picks.pick(CONSTANTS[kind]);
  const form = picks.next(kind === 'string' ? 5 : 4);
  if (form === 0) return `bound(?${name})`;
  if (form === 1) return `?${name} ${picks.chance(50) ? '' : 'NOT '}IN (${Array.from({ length: picks.next(3) }, constant).join(', ')})`;
  if (form === 4) return `${picks.pick(['contains', 'strstarts', 'strends'])}(?${name}, ${constant()})`;
  const operator = kind === 'iri' ? picks.pick(['=', '!=']) : picks.pick(['=', '!=', '<', '<=', '>', '>=']);
  return picks.chance(80) ? `?${name} ${operator} ${constant()}` : `${constant()} ${operator} ?${name}`;
}

type Variable = { name: string; kind: ValueKind };

/**
 * A group over the Order star, the Customer star, or both joined through placedBy: each triple
 * required, OPTIONAL (with a FILTER of its own) or absent, a FILTER, sometimes a VALUES on a
 * required variable.
 */
function generatedGroup(picks: Picks): { text: string; variables: Variable[] } {
  const shape = picks.pick([[STARS[0]], [STARS[1]], STARS] as const);
  const required = new Map<string, Variable>();
  const optional: Variable[] = [];
  const patterns: string[] = [];
  const optionals: string[] = [];
  for (const star of shape) {
    required.set(star.subject, { name: star.subject, kind: 'iri' });
    patterns.push(`?${star.subject} a :${star.type}`);
    for (const triple of star.triples) {
      // The link the two stars are joined through is required.
      const role = shape.length === 2 && triple.variable === 'c' ? 0 : picks.next(3);
      if (role === 0) {
        patterns.push(`?${star.subject} :${triple.predicate} ?${triple.variable}`);
        required.set(triple.variable, { name: triple.variable, kind: triple.kind });
      } else if (role === 1) optional.push({ name: triple.variable, kind: triple.kind });
    }
  }
  for (const variable of optional) {
    const star = shape.find((each) => each.triples.some((triple) => triple.variable === variable.name))!;
    const predicate = star.triples.find((triple) => triple.variable === variable.name)!.predicate;
    const filter = picks.chance(30) ? ` FILTER (${condition(picks, [...required.values(), variable])})` : '';
    optionals.push(`OPTIONAL { ?${star.subject} :${predicate} ?${variable.name}${filter} }`);
  }
  const variables = [...required.values(), ...optional];
  const bind = picks.chance(30) ? generatedBind(picks, variables) : undefined;
  if (bind) variables.push(bind.variable);
  const filter = picks.chance(60) ? ` FILTER (${condition(picks, variables)})` : '';
  const valued = picks.pick([...required.values()]);
  const values = picks.chance(20) ? ` VALUES ?${valued.name} { ${Array.from({ length: 1 + picks.next(3) }, () => picks.pick(CONSTANTS[valued.kind])).join(' ')} }` : '';
  const negation = picks.chance(25) ? generatedNegation(picks, variables) : '';
  return { text: `${patterns.join(' . ')} ${optionals.join(' ')}${bind?.text ?? ''}${filter}${values}${negation}`, variables };
}

/**
 * A BIND over one of the group's variables, after its triples: a copy, STRLEN, CONCAT or STR of
 * text, arithmetic on numbers. Named by its form and variable, so two UNION branches bind a name to one kind.
 */
function generatedBind(picks: Picks, variables: Variable[]): { text: string; expression: string; variable: Variable } {
  const { name, kind } = picks.pick(variables);
  const forms: Array<{ form: string; expression: string; kind: ValueKind }> =
    kind === 'number'
      ? [{ form: 'plus', expression: `?${name} + ${picks.pick(['1', '-2', '0.5'])}`, kind: 'number' }, { form: 'times', expression: `?${name} * 2.50 - ?${name}`, kind: 'number' }, { form: 'shown', expression: `STR(?${name})`, kind: 'string' }]
      : kind === 'string'
        ? [{ form: 'length', expression: `STRLEN(?${name})`, kind: 'number' }, { form: 'joined', expression: `CONCAT(?${name}, "-", ?${name})`, kind: 'string' }]
        : [];
  const { form, expression, kind: bound } = picks.pick([{ form: 'copy', expression: `?${name}`, kind }, ...forms]);
  const variable = { name: `${form}_${name}`, kind: bound };
  return { text: ` BIND (${expression} AS ?${variable.name})`, expression, variable };
}

/** A FILTER (NOT) EXISTS or MINUS over a group sharing one of the group's variables with it (their own variables named apart). */
function generatedNegation(picks: Picks, variables: Variable[]): string {
  const pieces = variables.flatMap(({ name, kind }) => {
    if (name === 'o') return [`?o :total ?x_n FILTER (?x_n > ${picks.pick(CONSTANTS.number)})`, '?o :placedBy ?x_c'];
    if (name === 'c') return ['?x_o :placedBy ?c', `?c :age ?x_a FILTER (?x_a >= ${picks.pick(CONSTANTS.number)})`, '?c :name ?x_name OPTIONAL { ?c :age ?x_a }'];
    if (name === 'name' && kind === 'string') return ['?x_c :name ?name'];
    if (name === 't') return ['?x_o :total ?t'];
    return [];
  });
  if (!pieces.length) return '';
  const group = picks.pick(pieces);
  return ` ${picks.pick(['FILTER NOT EXISTS', 'FILTER EXISTS', 'MINUS'])} { ${group} }`;
}

/** A query of one generated group, or a UNION of two (with a FILTER over both), and a projection. */
export function generatedQuery(picks: Picks): { text: string; ordered: boolean } {
  let where: string;
  let variables: Variable[];
  if (picks.chance(15)) {
    // A subquery of its own, DISTINCT or not, ordered by every variable it projects and limited where none is an IRI
    // (an order of IRIs whose keys need percent-encoding is the evaluator's), or one count per group of a variable.
    const group = generatedGroup(picks);
    const inner = group.variables.filter((_, at) => at === 0 || picks.chance(60));
    if (picks.chance(30)) {
      const counted = picks.pick(inner);
      variables = [counted, { name: 'k', kind: 'number' }];
      where = `WHERE { { SELECT ?${counted.name} (COUNT(*) AS ?k) WHERE { ${group.text} } GROUP BY ?${counted.name} } }`;
    } else {
      variables = inner;
      const names = inner.map(({ name }) => `?${name}`);
      const sliced = inner.some(({ kind }) => kind === 'iri') ? '' : ` ORDER BY ${names.map((name) => (picks.chance(30) ? `DESC(${name})` : name)).join(' ')} LIMIT ${1 + picks.next(4)}${picks.chance(30) ? ' OFFSET 1' : ''}`;
      where = `WHERE { { SELECT ${picks.chance(40) ? 'DISTINCT ' : ''}${names.join(' ')} WHERE { ${group.text} }${sliced} } }`;
    }
  } else if (picks.chance(25)) {
    const [left, right] = [generatedGroup(picks), generatedGroup(picks)];
    variables = [...new Map([...left.variables, ...right.variables].map((variable) => [variable.name, variable])).values()];
    const filter = picks.chance(40) ? ` FILTER (${condition(picks, variables)})` : '';
    where = `WHERE { { ${left.text} } UNION { ${right.text} }${filter} }`;
  } else {
    const group = generatedGroup(picks);
    variables = group.variables;
    where = `WHERE { ${group.text} }`;
  }
  const form = picks.next(4);
  if (form === 0) {
    const counted = picks.pick(variables).name;
    return { text: `SELECT (COUNT(*) AS ?n) (COUNT(?${counted}) AS ?m) (COUNT(DISTINCT ?${counted}) AS ?d) ${where}`, ordered: false };
  }
  if (form === 1) {
    const group = picks.pick(variables).name;
    return { text: `SELECT ?${group} (COUNT(*) AS ?n) ${where} GROUP BY ?${group}`, ordered: false };
  }
  const projected = variables.filter((_, at) => at === 0 || picks.chance(70)).map(({ name }) => `?${name}`);
  // A select expression, named apart from the WHERE clause's variables (as a BIND after it).
  if (picks.chance(25)) {
    const computed = generatedBind(picks, variables);
    projected.push(`(${computed.expression} AS ?selected_${computed.variable.name})`);
  }
  const ordered = projected.map((item) => item.replace(/^\(.* AS (\?\w+)\)$/, '$1'));
  // Ordered by every projected variable, so the order (and a LIMIT's rows) is the data's alone.
  if (form === 2) return { text: `SELECT ${projected.join(' ')} ${where} ORDER BY ${[...ordered].reverse().map((name) => (picks.chance(30) ? `DESC(${name})` : name)).join(' ')} LIMIT ${1 + picks.next(6)}`, ordered: true };
  return { text: `SELECT ${picks.chance(40) ? 'DISTINCT ' : ''}${projected.join(' ')} ${where}`, ordered: false };
}
