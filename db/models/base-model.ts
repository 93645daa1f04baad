import { Model } from 'objection';

/** Models use camelCase properties; the knex instance maps them to snake_case columns (db/connection.ts). */
export class BaseModel extends Model {}
