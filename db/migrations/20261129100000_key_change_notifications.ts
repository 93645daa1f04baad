import type { Knex } from 'knex';

// API processes keep authenticated keys in memory (services/tenancy/request-authentication.ts), in
// the definition cache of their workspace. A revoked, expired or changed key, a removed member and
// new request limits must reach every process within a second: these tables notify
// weft_definitions too (the function of migration 20261129090000). A key's last use is written
// every few seconds by every process and changes nothing a request checks, so it notifies nobody.

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`CREATE TRIGGER api_keys_definition_change AFTER INSERT OR DELETE ON api_keys FOR EACH ROW EXECUTE FUNCTION weft_notify_definition_change('workspace_id')`);
  await knex.raw(`CREATE TRIGGER api_keys_definition_update AFTER UPDATE ON api_keys FOR EACH ROW
                  WHEN ((to_jsonb(OLD) - 'last_used_at') IS DISTINCT FROM (to_jsonb(NEW) - 'last_used_at'))
                  EXECUTE FUNCTION weft_notify_definition_change('workspace_id')`);
  for (const table of ['members', 'api_limit_settings']) {
    await knex.raw(`CREATE TRIGGER ${table}_definition_change AFTER INSERT OR UPDATE OR DELETE ON ${table} FOR EACH ROW EXECUTE FUNCTION weft_notify_definition_change('workspace_id')`);
  }
}

export async function down(knex: Knex): Promise<void> {
  for (const [table, name] of [['api_keys', 'api_keys_definition_change'], ['api_keys', 'api_keys_definition_update'], ['members', 'members_definition_change'], ['api_limit_settings', 'api_limit_settings_definition_change']]) {
    await knex.raw(`DROP TRIGGER IF EXISTS ${name} ON ${table}`);
  }
}
