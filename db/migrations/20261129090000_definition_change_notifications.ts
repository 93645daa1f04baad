import type { Knex } from 'knex';

// Processes keep the definitions every request reads (projects, the SPARQL catalog, plans, alert
// settings) in memory, per workspace (services/shared/definition-cache.ts). These triggers tell
// every process when a workspace's definitions change: NOTIFY weft_definitions with the workspace
// id, delivered at commit (PostgreSQL folds repeats within one transaction into one).

/** Definition tables and the column that names their workspace. */
const WATCHED: Array<[table: string, workspaceColumn: string]> = [
  ['workspaces', 'id'],
  ['projects', 'workspace_id'],
  ['ontologies', 'workspace_id'],
  ['read_bindings', 'workspace_id'],
  ['data_endpoints', 'workspace_id'],
  ['plugin_installations', 'workspace_id'],
  ['usage_alert_settings', 'workspace_id'],
];

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`
    CREATE FUNCTION weft_notify_definition_change() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      row_data jsonb := to_jsonb(COALESCE(NEW, OLD));
    BEGIN
      PERFORM pg_notify('weft_definitions', row_data ->> TG_ARGV[0]);
      IF TG_OP = 'UPDATE' AND (to_jsonb(OLD) ->> TG_ARGV[0]) IS DISTINCT FROM (row_data ->> TG_ARGV[0]) THEN
        PERFORM pg_notify('weft_definitions', to_jsonb(OLD) ->> TG_ARGV[0]);
      END IF;
      RETURN NULL;
    END $$`);
  for (const [table, column] of WATCHED) {
    await knex.raw(`CREATE TRIGGER ${table}_definition_change AFTER INSERT OR UPDATE OR DELETE ON ${table} FOR EACH ROW EXECUTE FUNCTION weft_notify_definition_change('${column}')`);
  }
}

export async function down(knex: Knex): Promise<void> {
  for (const [table] of WATCHED) await knex.raw(`DROP TRIGGER IF EXISTS ${table}_definition_change ON ${table}`);
  await knex.raw('DROP FUNCTION IF EXISTS weft_notify_definition_change()');
}
