import type { Knex } from 'knex';
import { batchRequests, singleRequest } from './20261125090000_batched_request_authentication';

// API processes keep the keys they authenticate, with their expiry, which they check on every
// request (services/tenancy/request-authentication.ts). The request-path statement returns the
// expiry too, so keeping a key costs no second statement. A function's result columns cannot be
// changed in place: both are recreated, with the same bodies and one more column.

const dropBoth = async (knex: Knex) => {
  await knex.raw('DROP FUNCTION weft_authenticate_requests(text[], text[], integer, integer, integer)');
  await knex.raw('DROP FUNCTION weft_authenticate_request(text, text, integer, integer, integer)');
};

export async function up(knex: Knex): Promise<void> {
  await dropBoth(knex);
  await knex.raw(singleRequest(true, true));
  await knex.raw(batchRequests(true));
}

export async function down(knex: Knex): Promise<void> {
  await dropBoth(knex);
  await knex.raw(singleRequest(true));
  await knex.raw(batchRequests());
}
