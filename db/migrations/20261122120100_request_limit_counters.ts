import type { Knex } from 'knex';

// Fixed-window request counters shared by every API process. The layout is the one
// rate-limiter-flexible's RateLimiterPostgres expects (it upserts atomically with ON CONFLICT).
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE TABLE request_limit_counters (
      key varchar(255) PRIMARY KEY,
      points integer NOT NULL DEFAULT 0,
      expire bigint
    )`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('request_limit_counters');
}
