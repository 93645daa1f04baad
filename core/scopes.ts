/** Every scope a key can be created with (SPEC 5.3). */
export const SCOPES = [
  'org:read', 'org:manage',
  'projects:read', 'projects:write',
  'plugins:read', 'plugins:write',
  'endpoints:read', 'endpoints:write',
  'data:read', 'data:write', 'data:delete', 'data:maintain',
  'policy:read', 'policy:propose', 'policy:approve', 'policy:manage',
  'sparql:query', 'sparql:update',
  'ontologies:read', 'ontologies:write',
  'bindings:read', 'bindings:write',
  'queries:read', 'queries:write', 'queries:execute', 'queries:publish',
  'pipelines:read', 'pipelines:write', 'pipelines:execute',
  'runs:read',
] as const;

export type Scope = (typeof SCOPES)[number];

export const isScope = (value: string): value is Scope => (SCOPES as readonly string[]).includes(value);
