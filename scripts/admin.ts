/**
 * Operator CLI for what the public API deliberately does not do.
 *   npm run --silent admin -- bootstrap --workspace NAME [--owner NAME] [--json]
 *   npm run --silent admin -- plugin install --workspace ID --capability NAME [--config JSON] [--json]
 *   npm run --silent admin -- member add --workspace ID --name NAME [--role owner|admin|member] [--json]
 *   npm run --silent admin -- member invite --workspace ID (--email ADDRESS [--role owner|admin|member] | --member ID [--email ADDRESS] [--role …]) [--json]
 *   npm run --silent admin -- member remove --workspace ID --member ID
 *   npm run --silent admin -- key create --workspace ID --member ID --name NAME --scopes a,b [--read-permissions a,b] [--write-permissions a,b] [--json]
 *   npm run --silent admin -- plan set --workspace ID (--plan free|team | --credit-limit plan|none|default | both) [--json]
 *   npm run --silent admin -- migrate [--json]   (also `npm run migrate`)
 * Every command is an operator operation (services/tenancy/operator-operations.ts), invoked through
 * the admin door, in one transaction: a failure leaves nothing half-created.
 */
import { parseArgs } from 'node:util';
import { DomainError } from '../core/errors';
import { loadEncryptionKey } from '../core/config';
import { assertSchemaCurrent, createDb, Db, migrateToLatest, SchemaNotCurrentError } from '../db/connection';
import { randomUUID } from 'node:crypto';
import { Caller, closeRuntimeState, ServiceDependencies, workerDependencies } from '../services/operations/context';
import { invoke } from '../services/operations/invoke';
import { addMemberOperation, bootstrapWorkspaceOperation, createMemberKeyOperation, installPluginOperation, inviteMemberOperation, removeMemberOperation, setWorkspacePlanOperation } from '../services/tenancy/operator-operations';
import { prepareInfrastructure } from './infra/environment';

const USAGE = `Usage:
  admin bootstrap --workspace NAME [--owner NAME] [--json]
  admin plugin install --workspace ID --capability NAME [--config JSON] [--json]
  admin member add --workspace ID --name NAME [--role owner|admin|member] [--json]
  admin member invite --workspace ID (--email ADDRESS [--role owner|admin|member] | --member ID [--email ADDRESS] [--role …]) [--json]
  admin member remove --workspace ID --member ID
  admin key create --workspace ID --member ID --name NAME --scopes a,b [--read-permissions a,b] [--write-permissions a,b] [--json]
  admin plan set --workspace ID (--plan free|team | --credit-limit plan|none|default | both) [--json]
  admin migrate [--json]`;

class UsageError extends Error {}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function required(values: Record<string, unknown>, name: string, uuid = false): string {
  const value = values[name];
  if (typeof value !== 'string' || value.trim() === '') throw new UsageError(`--${name} is required.`);
  if (uuid && !UUID.test(value)) throw new UsageError(`--${name} must be a UUID, got "${value}".`);
  return value;
}

async function run(deps: ServiceDependencies, argv: string[]): Promise<unknown> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      workspace: { type: 'string' },
      owner: { type: 'string' },
      capability: { type: 'string' },
      config: { type: 'string' },
      member: { type: 'string' },
      name: { type: 'string' },
      role: { type: 'string' },
      email: { type: 'string' },
      scopes: { type: 'string' },
      'read-permissions': { type: 'string' },
      'write-permissions': { type: 'string' },
      plan: { type: 'string' },
      'credit-limit': { type: 'string' },
      json: { type: 'boolean', default: false },
    },
  });
  const command = positionals.join(' ');
  const list = (value: unknown) => (typeof value === 'string' ? value.split(',').map((item) => item.trim()).filter(Boolean) : []);
  // Every command is an operator operation, invoked through the admin door: validated by its
  // declared schema and run in one transaction (services/tenancy/operator-operations.ts).
  const caller: Caller = { deps, door: 'admin', requestId: `admin-${randomUUID()}` };
  const request = <B>(body: B) => ({ params: {}, query: {}, body });
  switch (command) {
    case 'bootstrap':
      return invoke(caller, bootstrapWorkspaceOperation, request({ workspaceName: required(values, 'workspace'), ...(values.owner !== undefined ? { ownerName: values.owner } : {}) }));
    case 'plugin install': {
      const workspaceId = required(values, 'workspace', true);
      const capability = required(values, 'capability');
      let config: unknown = {};
      if (values.config !== undefined) {
        try {
          config = JSON.parse(values.config);
        } catch {
          throw new UsageError('--config must be a JSON object.');
        }
      }
      return invoke(caller, installPluginOperation, request({ workspaceId, capability, config: config as Record<string, unknown> }));
    }
    case 'member add': {
      const role = (values.role ?? 'member') as 'owner' | 'admin' | 'member';
      if (!['owner', 'admin', 'member'].includes(role)) throw new UsageError('--role must be owner, admin or member.');
      return invoke(caller, addMemberOperation, request({ workspaceId: required(values, 'workspace', true), name: required(values, 'name'), role }));
    }
    case 'member invite': {
      const role = values.role as 'owner' | 'admin' | 'member' | undefined;
      if (role !== undefined && !['owner', 'admin', 'member'].includes(role)) throw new UsageError('--role must be owner, admin or member.');
      if (values.email === undefined && values.member === undefined) throw new UsageError('member invite needs --email (a new member) or --member (an existing one).');
      return invoke(caller, inviteMemberOperation, request({
        workspaceId: required(values, 'workspace', true),
        ...(values.member !== undefined ? { memberId: required(values, 'member', true) } : { role: role ?? 'member' }),
        ...(values.email !== undefined ? { email: values.email } : {}),
        ...(values.member !== undefined && role !== undefined ? { role } : {}),
        ...(values.name !== undefined ? { name: values.name } : {}),
      }));
    }
    case 'member remove':
      return invoke(caller, removeMemberOperation, request({ workspaceId: required(values, 'workspace', true), memberId: required(values, 'member', true) }));
    case 'key create':
      return invoke(caller, createMemberKeyOperation, request({
        workspaceId: required(values, 'workspace', true),
        memberId: required(values, 'member', true),
        name: required(values, 'name'),
        scopes: list(required(values, 'scopes')),
        readPermissions: list(values['read-permissions']),
        writePermissions: list(values['write-permissions']),
      }));
    case 'plan set':
      // The operation's schema names the plans and credit limits.
      if (values.plan === undefined && values['credit-limit'] === undefined) throw new UsageError('plan set needs --plan or --credit-limit.');
      return invoke(caller, setWorkspacePlanOperation, request({
        workspaceId: required(values, 'workspace', true),
        ...(values.plan !== undefined ? { plan: values.plan } : {}),
        ...(values['credit-limit'] !== undefined ? { creditLimit: values['credit-limit'] as 'plan' | 'none' | 'default' } : {}),
      }));
    default:
      throw new UsageError(command ? `Unknown command "${command}".` : 'No command given.');
  }
}

async function main(): Promise<number> {
  const argv = process.argv.slice(2);
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const json = argv.includes('--json');
  let infra: Awaited<ReturnType<typeof prepareInfrastructure>> | undefined;
  let db: Db | undefined;
  let deps: ServiceDependencies | undefined;
  try {
    const sharedDatabase = Boolean(process.env.DATABASE_URL);
    infra = await prepareInfrastructure({ database: 'weft', temporal: false });
    db = createDb(infra.databaseUrl, { max: 2 });
    if (argv[0] === 'migrate') {
      const applied = await migrateToLatest(db);
      process.stdout.write(json ? `${JSON.stringify({ applied })}\n` : `${applied.length ? `applied: ${applied.join(', ')}` : 'the schema is current: nothing to apply'}\n`);
      return 0;
    }
    // Like npm start: the local database is migrated on the way; a shared DATABASE_URL must already be current.
    if (sharedDatabase) await assertSchemaCurrent(db);
    // Loaded on use: the runtime brings the worker and the Temporal client, seconds of start-up that a command against DATABASE_URL does without.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    else await (require('./runtime') as typeof import('./runtime')).migrate(db);
    deps = workerDependencies({ db, encryptionKey: loadEncryptionKey() });
    const result = await run(deps, argv);
    process.stdout.write(json ? `${JSON.stringify(result)}\n` : `${Object.entries(result as object).map(([k, v]) => `${k}: ${v}`).join('\n')}\n`);
    return 0;
  } catch (error) {
    const message = error instanceof UsageError || error instanceof DomainError || error instanceof SchemaNotCurrentError ? error.message : `unexpected error: ${(error as Error).message}`;
    if ((error as { code?: string }).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' || error instanceof UsageError) process.stderr.write(`admin: ${message}\n${USAGE}\n`);
    else if ((error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) process.stderr.write(`admin: ${(error as Error).message}\n${USAGE}\n`);
    else process.stderr.write(`admin: ${message}\n`);
    return 2;
  } finally {
    // What the command built, closed on every path (an error too), its runtime state before its
    // pool: nothing is left running, so the process ends on its own once this returns.
    try {
      if (deps) await closeRuntimeState(deps);
    } finally {
      await db?.destroy();
      await infra?.stop();
    }
  }
}

void main().then((code) => {
  process.exitCode = code;
});
