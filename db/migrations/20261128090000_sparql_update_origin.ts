import type { Knex } from 'knex';

// A SPARQL update is its own operation now (sparqlUpdate), no longer a branch of the protocol's
// POST (sparqlQueryPost): the write actions it proposed name it, and are applied with its access.

export async function up(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE write_actions DROP CONSTRAINT write_actions_proposed_by_operation_check');
  await knex('write_actions').where({ proposed_by_operation: 'sparqlQueryPost' }).update({ proposed_by_operation: 'sparqlUpdate' });
  await knex.raw("ALTER TABLE write_actions ADD CONSTRAINT write_actions_proposed_by_operation_check CHECK (proposed_by_operation IN ('submitSourceWrite', 'sparqlUpdate'))");
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('ALTER TABLE write_actions DROP CONSTRAINT write_actions_proposed_by_operation_check');
  await knex('write_actions').where({ proposed_by_operation: 'sparqlUpdate' }).update({ proposed_by_operation: 'sparqlQueryPost' });
  await knex.raw("ALTER TABLE write_actions ADD CONSTRAINT write_actions_proposed_by_operation_check CHECK (proposed_by_operation IN ('submitSourceWrite', 'sparqlQueryPost'))");
}
