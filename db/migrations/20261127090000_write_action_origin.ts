import type { Knex } from 'knex';

// An approved write is applied as its proposing key, checked again against the access of the
// operation that proposed it: a governed write (submitSourceWrite) or a SPARQL update
// (sparqlQueryPost: sparql:update and the semantic consumer mode write). Actions proposed before
// this were recorded without their origin and are checked as governed writes.

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('write_actions', (t) => {
    t.text('proposed_by_operation').notNullable().defaultTo('submitSourceWrite').checkIn(['submitSourceWrite', 'sparqlQueryPost'], 'write_actions_proposed_by_operation_check');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('write_actions', (t) => {
    t.dropChecks('write_actions_proposed_by_operation_check');
    t.dropColumn('proposed_by_operation');
  });
}
