import { apiRoutes } from '../../api/routes';
import type { RouteSpec } from '../../api/route-spec';
import { tools, ToolSpec } from '../../mcp/tools';
import { isKeyless, isOperator, Operation } from '../../services/operations/operation';
import { operations } from '../../services/operations/registry';

// Which door reaches each operation of the registry, for the access matrices: they iterate the
// registry, not the routes or tools, so an operation that no door reaches, or that no matrix
// covers, fails them.

/**
 * Operations that no HTTP route or MCP tool reaches, each with the door that does. Work that runs
 * later acts as its key through actAs (services/operations/act-as.ts); the access matrix of
 * that door is in test/integration/api/auth-matrix.test.ts.
 */
export type InternalDoor = 'activity' | 'sparql' | 'mcp-connection' | 'console';

export const INTERNAL_OPERATIONS: Readonly<Record<string, { door: InternalDoor; why: string }>> = {
  commitRun: { door: 'activity', why: 'a run commits as the key that launched it' },
  extractRunSource: { door: 'activity', why: 'a run reads its sources as the key that launched it' },
  runQueryJob: { door: 'activity', why: 'an async query job runs as the key that asked for it' },
  launchScheduledRun: { door: 'activity', why: 'a scheduled launch acts as the key that made the schedule' },
  applyApprovedWrite: { door: 'activity', why: 'an approved governed write is applied as the key that proposed it' },
  applyApprovedSparqlUpdate: { door: 'activity', why: 'an approved SPARQL update is applied as the key that proposed it' },
  sparqlQuery: { door: 'sparql', why: 'the SPARQL protocol’s GET and POST hand a query to it' },
  sparqlUpdate: { door: 'sparql', why: 'the SPARQL protocol’s POST hands an update to it' },
  openProjectConnection: { door: 'mcp-connection', why: 'opening /mcp/projects/{project_id}: the MCP middleware binds the connection' },
  listMembers: { door: 'console', why: 'the console’s Members page (SPEC 4 has no members resource); access matrix in test/integration/console/members.test.ts' },
  createMemberInvite: { door: 'console', why: 'the console’s Members page invites' },
  updateMember: { door: 'console', why: 'the console’s Members page changes roles and grants' },
  deleteMember: { door: 'console', why: 'the console’s Members page removes members' },
};

/** The registry's keyed operations: what every matrix starts from. */
export const keyedOperations: readonly Operation[] = operations.filter((operation) => !isKeyless(operation.access));

/** The operator's operations: the admin CLI's door only (test/integration/cli/admin.test.ts). */
export const operatorOperationsOf: readonly Operation[] = operations.filter((operation) => isOperator(operation.access));

export const routesOf = (operation: Operation): RouteSpec[] => apiRoutes.filter((route) => route.operation === operation);
export const toolsOf = (operation: Operation): ToolSpec[] => tools.filter((tool) => tool.operation === operation);
export const internalOperations = (door: InternalDoor): Operation[] => keyedOperations.filter((operation) => INTERNAL_OPERATIONS[operation.name]?.door === door);

/** The real counts when this was written: the matrices refuse to pass on fewer (an emptied registry, routes or tools). */
export const FLOORS = { operations: 135, keyedRoutes: 120, tools: 14 } as const;

/**
 * What is wrong with the doors' coverage of the registry: keyed operations no route, tool or
 * internal entry reaches, internal entries that are not in the registry or that a route or tool
 * reaches after all.
 */
export function coverageProblems(): string[] {
  const problems: string[] = [];
  for (const operation of keyedOperations) {
    const reached = routesOf(operation).length + toolsOf(operation).length;
    const internal = INTERNAL_OPERATIONS[operation.name];
    if (!reached && !internal) problems.push(`${operation.name}: no route, tool or internal door reaches it (add a door, or an INTERNAL_OPERATIONS entry with its door)`);
    if (reached && internal) problems.push(`${operation.name}: listed as internal, but a route or tool reaches it`);
  }
  for (const operation of operatorOperationsOf) {
    if (routesOf(operation).length + toolsOf(operation).length) problems.push(`${operation.name}: an operator operation, but a route or tool reaches it`);
  }
  for (const name of Object.keys(INTERNAL_OPERATIONS)) {
    if (!keyedOperations.some((operation) => operation.name === name)) problems.push(`${name}: listed as internal, but the registry has no keyed operation of that name`);
  }
  return problems;
}
