import type { Knex } from 'knex';

// weft_take_charge_lease takes the time it grants or renews a lease at as an argument, p_now, as
// the request-path functions do (20261205090000_request_time_argument): production passes NULL
// and keeps clock_timestamp(), the database's time every process shares; a test's clock passes its
// own (core/clock.ts), so a lease it holds still does not expire behind it. The body is otherwise
// unchanged: read back from the database and defined again with the argument.

const SIGNATURE = 'weft_take_charge_lease(uuid, uuid, text, text, numeric, numeric, timestamptz, integer)';
const WITH_TIME = SIGNATURE.replace(/\)$/, ', timestamptz)');
const THE_TIME = 'coalesce(p_now, clock_timestamp())';

/** `text` with `from` replaced by `to`; a definition that lacks `from` fails the migration rather than pass unchanged. */
function replaced(text: string, from: string | RegExp, to: string): string {
  const found = typeof from === 'string' ? text.includes(from) : from.test(text);
  if (!found) throw new Error(`weft_take_charge_lease: its definition has no ${String(from)}`);
  return typeof from === 'string' ? text.split(from).join(to) : text.replace(from, to);
}

async function redefine(knex: Knex, signature: string, edit: (definition: string) => string): Promise<void> {
  const { rows } = await knex.raw<{ rows: Array<{ definition: string }> }>('SELECT pg_get_functiondef(?::regprocedure) AS definition', [signature]);
  const definition = edit(rows[0].definition);
  await knex.raw(`DROP FUNCTION ${signature}`);
  await knex.raw(definition);
}

export async function up(knex: Knex): Promise<void> {
  await redefine(knex, SIGNATURE, (definition) => replaced(replaced(definition, /\)\n RETURNS /, ', p_now timestamptz DEFAULT NULL)\n RETURNS '), 'clock_timestamp()', THE_TIME));
}

export async function down(knex: Knex): Promise<void> {
  await redefine(knex, WITH_TIME, (definition) => replaced(replaced(definition, /, p_now timestamp with time zone DEFAULT NULL::timestamp with time zone\)\n RETURNS /, ')\n RETURNS '), THE_TIME, 'clock_timestamp()'));
}
