import type { Knex } from 'knex';

// The request-path functions take the request's time as an argument, p_now (core/clock.ts).
// Production passes NULL and keeps what they read before, clock_timestamp(): the database's time,
// which every API process shares, decides the request windows (and a key's expiry in the same
// statement). A test's clock passes its own time, so a test holds a window still instead of waiting
// for one to turn. The bodies are otherwise unchanged: each is read back from the database
// (pg_get_functiondef) and defined again with the argument, so no copy of them is kept here.

const THE_TIME = 'coalesce(p_now, clock_timestamp())';
const TIME_ARGUMENT = ', p_now timestamptz DEFAULT NULL';
/** The batch function passes its time on to the single one. */
const SINGLE_CALL = 'p_default_workspace_requests, p_default_key_requests) f;';
const SINGLE_CALL_WITH_TIME = 'p_default_workspace_requests, p_default_key_requests, p_now) f;';

const FUNCTIONS = [
  'weft_authenticate_request(text, text, integer, integer, integer)',
  'weft_authenticate_requests(text[], text[], integer, integer, integer)',
  'weft_lease_requests(uuid, uuid, integer, integer, integer, integer, integer, integer)',
];

const withTime = (signature: string) => signature.replace(/\)$/, ', timestamptz)');

/** `text` with `from` replaced by `to`; a definition that lacks `from` fails the migration rather than pass unchanged. */
function replaced(text: string, from: string | RegExp, to: string, signature: string): string {
  const found = typeof from === 'string' ? text.includes(from) : from.test(text);
  if (!found) throw new Error(`${signature}: its definition has no ${String(from)}`);
  return typeof from === 'string' ? text.split(from).join(to) : text.replace(from, to);
}

/** The argument list ends at the first `)` before RETURNS, as pg_get_functiondef writes it. */
const ARGUMENTS_END = /\)\n RETURNS /;

function addTime(definition: string, signature: string): string {
  let edited = replaced(definition, ARGUMENTS_END, `${TIME_ARGUMENT})\n RETURNS `, signature);
  if (signature.startsWith('weft_authenticate_requests(')) edited = replaced(edited, SINGLE_CALL, SINGLE_CALL_WITH_TIME, signature);
  else edited = replaced(edited, 'clock_timestamp()', THE_TIME, signature);
  return edited;
}

function removeTime(definition: string, signature: string): string {
  let edited = replaced(definition, /, p_now timestamp with time zone DEFAULT NULL::timestamp with time zone\)\n RETURNS /, ')\n RETURNS ', signature);
  if (signature.startsWith('weft_authenticate_requests(')) edited = replaced(edited, SINGLE_CALL_WITH_TIME, SINGLE_CALL, signature);
  else edited = replaced(edited, THE_TIME, 'clock_timestamp()', signature);
  return edited;
}

/** Reads every function's definition, drops them all (a new argument is a new function, not a replacement), and defines the edited ones. */
async function redefine(knex: Knex, signatures: string[], edit: (definition: string, signature: string) => string): Promise<void> {
  const definitions: string[] = [];
  for (const signature of signatures) {
    const { rows } = await knex.raw<{ rows: Array<{ definition: string }> }>('SELECT pg_get_functiondef(?::regprocedure) AS definition', [signature]);
    definitions.push(edit(rows[0].definition, signature));
  }
  for (const signature of signatures) await knex.raw(`DROP FUNCTION ${signature}`);
  for (const definition of definitions) await knex.raw(definition);
}

export async function up(knex: Knex): Promise<void> {
  await redefine(knex, FUNCTIONS, addTime);
}

export async function down(knex: Knex): Promise<void> {
  await redefine(knex, FUNCTIONS.map(withTime), removeTime);
}
