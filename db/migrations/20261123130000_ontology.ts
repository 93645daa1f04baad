import type { Knex } from 'knex';

// Ontologies (one per project): versioned definitions on branches, compiled content-addressed
// packages, uploaded RDF documents for imports, and read bindings from terms to data endpoints.
export async function up(knex: Knex): Promise<void> {
  const timestamps = (t: Knex.CreateTableBuilder, ...names: string[]) => {
    for (const name of names) t.timestamp(name, { useTz: true }).notNullable().defaultTo(knex.fn.now());
  };
  await knex.schema.alterTable('workspaces', (t) => {
    // The SPARQL endpoint answers only when an administrator has turned this on: off, read (queries) or write (queries and updates).
    t.text('semantic_consumer_mode').notNullable().defaultTo('off');
  });

  await knex.schema.createTable('ontologies', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('workspace_id').notNullable().references('workspaces.id').onDelete('CASCADE');
    t.uuid('project_id').notNullable().unique();
    t.foreign(['workspace_id', 'project_id']).references(['workspace_id', 'id']).inTable('projects').onDelete('CASCADE');
    t.text('base_iri').notNullable();
    t.uuid('active_package_id');
    timestamps(t, 'created_at', 'updated_at');
  });

  await knex.schema.createTable('ontology_versions', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('ontology_id').notNullable().references('ontologies.id').onDelete('CASCADE');
    t.integer('number').notNullable();
    t.text('branch_name').notNullable();
    t.uuid('parent_version_id');
    t.jsonb('definition').notNullable();
    t.text('message').notNullable();
    t.uuid('created_by_member_id').notNullable();
    timestamps(t, 'created_at');
    t.unique(['ontology_id', 'number']);
  });

  await knex.schema.createTable('ontology_branches', (t) => {
    t.uuid('ontology_id').notNullable().references('ontologies.id').onDelete('CASCADE');
    t.text('name').notNullable();
    t.uuid('head_version_id').notNullable().references('ontology_versions.id');
    t.uuid('created_by_member_id').notNullable();
    timestamps(t, 'created_at', 'updated_at');
    t.primary(['ontology_id', 'name']);
  });

  await knex.schema.createTable('ontology_packages', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('ontology_id').notNullable().references('ontologies.id').onDelete('CASCADE');
    t.uuid('workspace_id').notNullable();
    t.uuid('version_id').notNullable().references('ontology_versions.id');
    t.text('content_hash').notNullable();
    t.text('base_iri').notNullable();
    t.text('nquads').notNullable();
    t.text('turtle').notNullable();
    t.integer('triple_count').notNullable();
    t.jsonb('counts').notNullable();
    // The term and property names it defines: bindings check compatibility against them.
    t.jsonb('terms').notNullable();
    t.uuid('compiled_by_member_id').notNullable();
    timestamps(t, 'compiled_at');
    t.unique(['ontology_id', 'content_hash']);
  });

  await knex.schema.createTable('ontology_documents', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('ontology_id').notNullable().references('ontologies.id').onDelete('CASCADE');
    t.text('media_type').notNullable();
    t.integer('byte_size').notNullable();
    t.text('content_hash').notNullable();
    t.text('nquads').notNullable();
    t.integer('triple_count').notNullable();
    t.uuid('created_by_member_id').notNullable();
    timestamps(t, 'created_at');
  });

  await knex.schema.createTable('read_bindings', (t) => {
    t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
    t.uuid('workspace_id').notNullable().references('workspaces.id').onDelete('CASCADE');
    t.uuid('project_id').notNullable();
    t.foreign(['workspace_id', 'project_id']).references(['workspace_id', 'id']).inTable('projects').onDelete('CASCADE');
    t.uuid('ontology_package_id').notNullable().references('ontology_packages.id');
    t.text('term_id').notNullable();
    // No foreign key: deleting the endpoint is refused by the reference finder with a clear error.
    t.uuid('data_endpoint_id').notNullable();
    t.jsonb('mapping').notNullable();
    t.specificType('required_read_permissions', 'text[]').notNullable().defaultTo('{}');
    // active: its package is the active one, or the active one still has its term and properties; else incompatible.
    t.text('status').notNullable().defaultTo('active');
    t.uuid('created_by_member_id').notNullable();
    timestamps(t, 'created_at', 'updated_at');
    t.index(['project_id', 'created_at']);
    t.index(['data_endpoint_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('read_bindings');
  await knex.schema.dropTable('ontology_documents');
  await knex.schema.dropTable('ontology_packages');
  await knex.schema.dropTable('ontology_branches');
  await knex.schema.dropTable('ontology_versions');
  await knex.schema.dropTable('ontologies');
  await knex.schema.alterTable('workspaces', (t) => t.dropColumn('semantic_consumer_mode'));
}
