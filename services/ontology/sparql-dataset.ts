import { createHash, randomBytes } from 'node:crypto';
import { Parser } from 'n3';
import { InputError, NotFoundError, PermissionError } from '../../core/errors';
import type { Db, Executor } from '../../db/connection';
import { BindingMapping, DataEndpoint, OntologyPackage } from '../../db/models';
import { findCapability } from '../../plugins';
import { EMPTY_SNAPSHOT, SnapshotInfo } from '../../plugins/capability';
import { snapshotScope } from '../../plugins/snapshot-notices';
import type { KeptGraph, PackageFacts, SparqlMemory } from './sparql-memory';
import { mapRecord, templateFields } from '../../ontology/term-records';
import { workspaceSchema } from '../../plugins/managed-table/storage';
import { encodedBytes, GraphEncoder } from '../../ontology/sparql-threads/encoded-graph';
import type { GraphHandle } from '../../ontology/sparql-threads/messages';
import type { SparqlSettings } from '../../ontology/sparql-threads/settings';
import { capabilityContext, type CapabilityDependencies } from '../endpoints/data-endpoints';
import { readableThroughBindings } from '../endpoints/data-guard';
import { checkingGrants } from '../operations/current-operation';
import type { Principal } from '../tenancy/access';
import type { OperationContext } from '../operations/context';
import { bindingFields } from './read-bindings';
import { firstSolutionsOf, reachOf, ReachPattern } from '../../ontology/sparql-reach';
import { OtherGraphs, reachesBinding, ReachLimits, ReachTable, readFirstRecords, readingWithin, readReachedRecords, refusePastBound, tableCountKey, tooBroad } from './sparql-reach-reads';
import { sparqlRecordsRead } from '../../observability/metrics';
import { sqlQueryOf, runSqlQuery, SQL_WORK_MEM } from './sparql-in-sql';
import { answerOnInstallation, externalRecords } from './sparql-external-sql';
import { readingRemote } from '../../plugins/postgres-table';
import { callerGoneError, timeoutError } from '../../ontology/sparql-evaluator/deadline';
import { sqlFormOf } from './sparql-forms-in-sql';
import type { SparqlResult } from '../../ontology/sparql-engine';
import { NS } from '../../ontology/compile';

// The SPARQL dataset of a project, built once per data version and shared by every key: the active
// package is one graph, and each read binding is one graph built from its endpoint's records at
// the endpoint's current snapshot. A query sees the union of the graphs its key may read (the data
// guard decides which), so keys select graphs and never build a store of their own. A binding's
// graph is rebuilt when its snapshot, the binding, the endpoint or the package changes; endpoints
// without snapshots (http_dataset, postgres_table) keep theirs for WEFT_SPARQL_UNPINNED_TTL_SECONDS.
// Queries PostgreSQL answers (answeredInSql) read no graph: bound managed tables at their
// snapshots, or the tables of one postgres_table installation, live, in their own database. A
// query over bound tables of several databases (managed tables beside postgres_table ones, or two
// installations) reads from each the records its patterns reach (sparql-reach-reads.ts), each
// database's reads narrowed by the values the others' gave, and is answered over those.

const PAGE = 1000;

/** A package as queries need it: everything but its serializations. */
export type PackageHead = Pick<OntologyPackage, 'id' | 'baseIri' | 'terms' | 'tripleCount'>;

/** One active read binding of the project with what its graph's version and the guard need. */
interface CatalogBinding {
  id: string;
  termId: string;
  mapping: BindingMapping;
  updatedAt: string;
  endpointId: string;
  endpointUpdatedAt: string;
  capability: string;
  /** The named read grants of the endpoint's data: the union over every binding, in the workspace, of any endpoint over the same data. */
  grants: string[];
}

export interface DatasetCatalog {
  semanticConsumerMode: 'off' | 'read' | 'write';
  pkg?: PackageHead;
  bindings: CatalogBinding[];
  /** The bound endpoints with their installations, by id. */
  endpoints: Map<string, DataEndpoint>;
}

/**
 * The workspace's SPARQL mode, the project's active package, its active bindings with the
 * endpoints' grants, and the bound endpoints with their installations. Definitions only (data
 * versions are read per query), so the process's definition cache keeps it until they change.
 */
export async function loadDatasetCatalog(deps: Pick<CapabilityDependencies, 'definitions'>, db: Executor, workspaceId: string, projectId: string): Promise<DatasetCatalog> {
  const read = async () => {
    const catalog = await readCatalog(db, workspaceId, projectId);
    return { ...catalog, endpoints: await boundEndpoints(db, workspaceId, catalog.bindings) };
  };
  return db.isTransaction ? read() : deps.definitions.get(workspaceId, `sparql-catalog:${projectId}`, read);
}

/** The bindings' endpoints with their installations: one query. */
async function boundEndpoints(db: Executor, workspaceId: string, bindings: CatalogBinding[]): Promise<Map<string, DataEndpoint>> {
  if (!bindings.length) return new Map();
  const endpoints = await DataEndpoint.query(db)
    .withGraphJoined('installation', { joinOperation: 'innerJoin' })
    .whereIn('data_endpoints.id', [...new Set(bindings.map((binding) => binding.endpointId))])
    .where('data_endpoints.workspaceId', workspaceId);
  return new Map(endpoints.map((endpoint) => [endpoint.id, endpoint]));
}

/** The catalog's definitions in one statement. */
async function readCatalog(db: Executor, workspaceId: string, projectId: string): Promise<Omit<DatasetCatalog, 'endpoints'>> {
  const { rows } = await db.raw<{ rows: Array<{ mode: DatasetCatalog['semanticConsumerMode']; pkg: (PackageHead & { id: string }) | null; bindings: CatalogBinding[] | null }> }>(
    `SELECT w.semantic_consumer_mode AS mode,
            (SELECT json_build_object('id', p.id, 'baseIri', p.base_iri, 'terms', p.terms, 'tripleCount', p.triple_count)
               FROM ontologies o JOIN ontology_packages p ON p.id = o.active_package_id
              WHERE o.project_id = :projectId AND o.workspace_id = :workspaceId LIMIT 1) AS pkg,
            (SELECT json_agg(json_build_object(
                      'id', b.id, 'termId', b.term_id, 'mapping', b.mapping, 'updatedAt', b.updated_at,
                      'endpointId', e.id, 'endpointUpdatedAt', e.updated_at, 'capability', i.capability,
                      'grants', COALESCE((SELECT array_agg(DISTINCT g ORDER BY g)
                                            FROM data_endpoints over_data
                                            JOIN read_bindings rb ON rb.workspace_id = over_data.workspace_id AND rb.data_endpoint_id = over_data.id,
                                                 unnest(rb.required_read_permissions) g
                                           WHERE over_data.workspace_id = e.workspace_id AND over_data.data_identity = e.data_identity), '{}'))
                      ORDER BY b.created_at, b.id)
               FROM read_bindings b
               JOIN data_endpoints e ON e.id = b.data_endpoint_id AND e.workspace_id = b.workspace_id
               JOIN plugin_installations i ON i.id = e.plugin_installation_id AND i.workspace_id = e.workspace_id
              WHERE b.project_id = :projectId AND b.workspace_id = :workspaceId AND b.status = 'active') AS bindings
       FROM workspaces w WHERE w.id = :workspaceId`,
    { workspaceId, projectId },
  );
  const row = rows[0];
  return { semanticConsumerMode: row?.mode ?? 'off', pkg: row?.pkg ?? undefined, bindings: row?.bindings ?? [] };
}

/** The workspace setting that opens the endpoint (SPEC 4.5: the semantic consumer mode). */
export function requireSemanticMode(catalog: Pick<DatasetCatalog, 'semanticConsumerMode'>, wanted: 'read' | 'write'): void {
  const mode = catalog.semanticConsumerMode;
  if (mode === 'off') throw new PermissionError('semantic_mode_off', 'The SPARQL endpoint is off for this workspace: an administrator turns it on with PATCH /api/v1/organization/settings {"semanticConsumerMode":"read"}.');
  if (wanted === 'write' && mode !== 'write') throw new PermissionError('semantic_mode_read_only', 'This workspace’s SPARQL endpoint takes queries only (semanticConsumerMode read): updates need semanticConsumerMode write.');
}

/** Builds a graph once however many queries ask for it at the same time. */
function keptOrBuilt({ graphs, building }: SparqlMemory, slot: string, version: string, fresh: (kept: KeptGraph) => boolean, build: () => Promise<GraphHandle>): Promise<KeptGraph> {
  const kept = graphs.get(slot);
  if (kept && kept.handle.version === version && fresh(kept)) return Promise.resolve(kept);
  // Builds are shared per version: a query that sees a newer snapshot never waits on an older build.
  const pending = building.get(version);
  if (pending) return pending;
  const started = build()
    .then((handle) => graphs.set(slot, { handle, builtAt: Date.now() }, encodedBytes(handle.graph)))
    .finally(() => building.delete(version));
  building.set(version, started);
  return started;
}

function tooLarge(bound: number, triples: number, atLeast: boolean): InputError {
  return new InputError(
    'dataset_too_large',
    `This query’s dataset holds ${atLeast ? 'more than ' : ''}${triples.toLocaleString('en')} triples, past the bound of ${bound.toLocaleString('en')} this installation answers over (WEFT_SPARQL_MAX_DATASET_TRIPLES). Weft does not answer over part of the data: narrow the bindings your key reads, or ask the operator to raise the bound.`,
    [],
    { maxDatasetTriples: bound, datasetTriples: triples, datasetTriplesIsLowerBound: atLeast },
  );
}

/** The package graph's version, and its slot in the kept graphs (one version per package). */
const packageVersion = (pkg: PackageHead) => `package:${pkg.id}`;

async function packageFacts(memory: SparqlMemory, db: Executor, pkg: PackageHead): Promise<PackageFacts> {
  const kept = memory.packageFacts.get(pkg.id);
  if (kept) return kept;
  const { nquads } = (await OntologyPackage.query(db).findById(pkg.id).select('nquads'))!;
  const facts: PackageFacts = { predicates: new Set(), types: new Set() };
  for (const quad of new Parser({ format: 'application/n-quads' }).parse(nquads)) {
    facts.predicates.add(quad.predicate.value);
    if (quad.predicate.value === `${NS.rdf}type`) facts.types.add(quad.object.value);
  }
  return memory.packageFacts.set(pkg.id, facts, nquads.length);
}

async function packageGraph(memory: SparqlMemory, db: Executor, pkg: PackageHead): Promise<GraphHandle> {
  const version = packageVersion(pkg);
  return (await keptOrBuilt(memory, version, version, () => true, async () => {
    const { nquads } = (await OntologyPackage.query(db).findById(pkg.id).select('nquads'))!;
    const encoder = new GraphEncoder();
    for (const quad of new Parser({ format: 'application/n-quads' }).parse(nquads)) encoder.add(quad);
    return { version, graph: encoder.finish() };
  })).handle;
}

/** Maps a binding's records at `snapshotId` (or as they are now) into a graph, within the bound. */
async function buildBindingGraph(db: Executor, deps: CapabilityDependencies, pkg: PackageHead, binding: CatalogBinding, endpoint: DataEndpoint, version: string, snapshotId: string | undefined, budget: number, bound: number): Promise<GraphHandle> {
  const runtime = findCapability(endpoint.installation!.capability, endpoint.installation!.capabilityVersion);
  const ctx = capabilityContext(db, endpoint.installation!, deps);
  const select = bindingFields(binding.mapping);
  const encoder = new GraphEncoder();
  let after: unknown;
  do {
    const page = await runtime.readRecords(ctx, endpoint.target, { select, where: [], orderBy: [], limit: PAGE, snapshotId, after });
    sparqlRecordsRead.inc({ read: 'whole' }, page.records.length);
    for (const record of page.records) {
      const mapped = mapRecord(record, binding.termId, binding.mapping, pkg.terms, pkg.baseIri);
      if (mapped) for (const quad of mapped.quads) encoder.add(quad);
    }
    // The dataset so far (the bound less this graph's budget) and this graph's triples.
    if (encoder.tripleCount > budget) throw tooLarge(bound, bound - budget + encoder.tripleCount, true);
    after = page.continuation ?? undefined;
  } while (after !== undefined);
  return { version, graph: encoder.finish() };
}

interface BoundSource {
  binding: CatalogBinding;
  endpoint: DataEndpoint;
  names: BindingNames;
  /** The group whose snapshots say this source's data version; none for capabilities without snapshots. */
  group?: SnapshotGroup;
  /** Its place in the group's snapshots. */
  at: number;
  /** A managed table, read per query (only the records the query reaches) rather than copied whole. */
  table?: { workspaceId: string; table: string };
  /** A postgres_table endpoint's table, read live per query (the records the query reaches) through its installation. */
  external?: boolean;
}

/** The bound endpoints of one installation whose current snapshots are read together. */
interface SnapshotGroup {
  installation: NonNullable<DataEndpoint['installation']>;
  targets: Array<DataEndpoint['target']>;
  /** The snapshots are kept in the definition cache under this key until the next announcement. */
  key: string;
  scope: string;
  kept: boolean;
}

/**
 * What one key's queries over one kept catalog have in common, worked out once: the bindings it
 * may read, their endpoints and graph names, and how their snapshots are found. The catalog and
 * a kept key's principal are the same objects until either changes, so the plan lives as long as
 * both. The plan's last dataset is remembered: a repeated query finds the same graphs and version.
 */
interface DatasetPlan {
  sources: BoundSource[];
  /** What the graphs other than per-query table reads hold (the package's facts are added per package). */
  memoryPredicates: Set<string>;
  memoryTypes: Set<string>;
  /** The plan's bindings (their graph slots), which the records a query reads depend on. */
  bindingSlots: string;
  groups: SnapshotGroup[];
  withheld: number;
  last?: { versions: string[]; version: string };
}

const plans = new WeakMap<DatasetCatalog, WeakMap<Principal, DatasetPlan>>();

function planOf(catalog: DatasetCatalog, pkg: PackageHead, principal: Principal, snapshotsKept: boolean): DatasetPlan {
  let byPrincipal = plans.get(catalog);
  const kept = byPrincipal?.get(principal);
  if (kept) return kept;
  const readable = readableThroughBindings(principal, catalog.bindings.map((binding) => ({ endpointId: binding.endpointId, grants: binding.grants })));
  const bindings = catalog.bindings.filter((binding) => readable.has(binding.endpointId));
  const groups = new Map<string, SnapshotGroup>();
  const sources = bindings.map((binding): BoundSource => {
    const endpoint = catalog.endpoints.get(binding.endpointId);
    if (!endpoint) throw new NotFoundError('data_endpoint', 'A bound endpoint was removed while the query started; retry.');
    const installation = endpoint.installation!;
    const runtime = findCapability(installation.capability, installation.capabilityVersion);
    const source: BoundSource = { binding, endpoint, names: namesOf(binding, pkg), at: 0 };
    if (installation.capability === 'managed_table') source.table = { workspaceId: installation.workspaceId, table: String((endpoint.target as { table?: unknown }).table) };
    if (installation.capability === 'postgres_table') source.external = true;
    if (!runtime.definition.supports.snapshotReads || !runtime.currentSnapshot) return source;
    let group = groups.get(installation.id);
    if (!group) groups.set(installation.id, (group = { installation, targets: [], key: '', scope: snapshotScope(installation.workspaceId), kept: runtime.announcesSnapshots === true }));
    source.group = group;
    source.at = group.targets.length;
    group.targets.push(endpoint.target);
    group.key = `${group.key ? `${group.key},` : `sparql-snapshots:${installation.id}:`}${endpoint.id}`;
    return source;
  });
  const memoryPredicates = new Set<string>();
  const memoryTypes = new Set<string>();
  for (const { binding, table, external } of sources) {
    if (table || external) continue;
    memoryPredicates.add(`${NS.rdf}type`);
    memoryTypes.add(`${pkg.baseIri}${binding.termId}`);
    for (const property of Object.keys(binding.mapping.properties)) memoryPredicates.add(`${pkg.baseIri}${property}`);
    for (const link of Object.keys(binding.mapping.links ?? {})) memoryPredicates.add(`${pkg.baseIri}${link}`);
  }
  const plan: DatasetPlan = { sources, memoryPredicates, memoryTypes, bindingSlots: sources.map((source) => source.names.slot).join('\n'), groups: [...groups.values()], withheld: catalog.bindings.length - bindings.length };
  // Only plans of kept catalogs are kept: a catalog read inside a transaction is read once.
  if (snapshotsKept) {
    if (!byPrincipal) plans.set(catalog, (byPrincipal = new WeakMap()));
    byPrincipal.set(principal, plan);
  }
  return plan;
}

/** A group's current snapshots, read now: one call to its capability. */
function currentSnapshotsOf(db: Executor, deps: CapabilityDependencies, group: SnapshotGroup): Promise<SnapshotInfo[]> {
  const { installation } = group;
  const runtime = findCapability(installation.capability, installation.capabilityVersion);
  // The installation is opened (its credentials decrypted) only when the snapshots are read.
  const ctx = capabilityContext(db, installation, deps);
  return runtime.currentSnapshots ? runtime.currentSnapshots(ctx, group.targets) : Promise.all(group.targets.map((target) => runtime.currentSnapshot!(ctx, target)));
}

/**
 * Each group's current snapshots (one call per installation), always read: a commit of another
 * process is announced by a NOTIFY this process may not have heard yet, and a query reads the
 * snapshots committed before it started. Those of capabilities that announce them are kept for the
 * next query's keptDataset, which checks them beside its evaluation (keptSnapshotsCurrent).
 */
async function snapshotsOf(db: Executor, deps: CapabilityDependencies, groups: SnapshotGroup[]): Promise<Map<SnapshotGroup, SnapshotInfo[]>> {
  const found = new Map<SnapshotGroup, SnapshotInfo[]>();
  await Promise.all(groups.map(async (group) => found.set(group, !db.isTransaction && group.kept ? await readAndKeep(db, deps, group) : await currentSnapshotsOf(db, deps, group))));
  return found;
}

/** A group's current snapshots, read now and kept for the next query's keptDataset. */
async function readAndKeep(db: Executor, deps: CapabilityDependencies, group: SnapshotGroup): Promise<SnapshotInfo[]> {
  const ticket = deps.definitions.ticket(group.scope);
  const snapshots = await currentSnapshotsOf(db, deps, group);
  deps.definitions.keep(group.scope, group.key, snapshots, ticket);
  return snapshots;
}

/**
 * Whether the kept snapshots a dataset was found with are still the current ones: one statement
 * per installation, run beside the query's evaluation. When a commit came first (another process's,
 * whose NOTIFY is still on its way), the current ones are kept instead and the answer is not used.
 */
export async function keptSnapshotsCurrent(ctx: OperationContext, dataset: QueryDatasetHandles): Promise<boolean> {
  if (!dataset.keptSnapshots?.length) return true;
  const checks = await Promise.all(dataset.keptSnapshots.map(async ({ group, snapshots }) => {
    const current = await readAndKeep(ctx.db, ctx.deps, group);
    return current.every((snapshot, at) => snapshot.id === snapshots[at]?.id);
  }));
  return checks.every(Boolean);
}

/**
 * A binding's slot in the kept graphs, and its last snapshot version, per binding of a kept
 * catalog: the same strings every query, whose hashes V8 keeps, instead of new ones to build and
 * hash for each lookup (they showed in the request path's profile).
 */
interface BindingNames {
  pkgId: string;
  slot: string;
  snapshotId?: string;
  snapshotVersion?: string;
}
const bindingNames = new WeakMap<CatalogBinding, BindingNames>();

function namesOf(binding: CatalogBinding, pkg: PackageHead): BindingNames {
  let names = bindingNames.get(binding);
  if (!names || names.pkgId !== pkg.id) {
    names = { pkgId: pkg.id, slot: `binding:${binding.id}@${binding.updatedAt}:${binding.endpointId}@${binding.endpointUpdatedAt}:${pkg.id}` };
    bindingNames.set(binding, names);
  }
  return names;
}

/** The version of a binding's graph at a snapshot. */
function snapshotVersionOf(names: BindingNames, snapshot: SnapshotInfo): string {
  if (names.snapshotId !== snapshot.id) {
    names.snapshotId = snapshot.id;
    names.snapshotVersion = `${names.slot}:snapshot:${snapshot.id}`;
  }
  return names.snapshotVersion!;
}

const unpinnedFresh = (settings: SparqlSettings, entry: KeptGraph) => Date.now() - entry.builtAt < settings.unpinnedTtlSeconds * 1000;

/** The graph of one binding at its endpoint's current data. */
async function bindingGraph(memory: SparqlMemory, db: Executor, deps: CapabilityDependencies, pkg: PackageHead, source: BoundSource, snapshot: SnapshotInfo | undefined, budget: number): Promise<GraphHandle> {
  const { binding, endpoint, names } = source;
  const slot = names.slot;
  if (snapshot) {
    // An endpoint never written has no snapshot to pin (and no records).
    const pinned = snapshot.id !== EMPTY_SNAPSHOT.id ? snapshot.id : undefined;
    const version = snapshotVersionOf(names, snapshot);
    return (await keptOrBuilt(memory, slot, version, () => true, () => buildBindingGraph(db, deps, pkg, binding, endpoint, version, pinned, budget, memory.settings.maxDatasetTriples))).handle;
  }
  const kept = memory.graphs.get(slot);
  const fresh = (entry: KeptGraph) => unpinnedFresh(memory.settings, entry);
  const version = kept && fresh(kept) ? kept.handle.version : `${slot}:read:${Date.now()}`;
  return (await keptOrBuilt(memory, slot, version, fresh, () => buildBindingGraph(db, deps, pkg, binding, endpoint, version, undefined, budget, memory.settings.maxDatasetTriples))).handle;
}

/**
 * The snapshots a query read its bound managed tables at, by binding id: an execution that goes on
 * as a job reads them again at the same snapshots (filled in by the first reading, given to the next).
 */
export type SnapshotPin = Record<string, SnapshotInfo>;

/** Each source's snapshot: the pinned one when the pin holds it, else the one read now (recorded in the pin for managed tables). */
function pinnedSnapshot(source: BoundSource, read: SnapshotInfo | undefined, pin: SnapshotPin | undefined): SnapshotInfo | undefined {
  if (!read || !pin || !source.table) return read;
  return (pin[source.binding.id] ??= read);
}

export interface QueryDatasetHandles {
  pkg: PackageHead;
  graphs: GraphHandle[];
  /** Names the data the answer used: the package and every binding's data version (a table's snapshot). */
  version: string;
  /** Triples the query is evaluated over: the package, whole graphs, and what it read of bound tables. */
  triples: number;
  /** Bindings of the project whose data this key may not read. */
  withheldBindings: number;
  /** The kept snapshots of each installation a kept dataset was found with (keptSnapshotsCurrent checks them). */
  keptSnapshots?: Array<{ group: SnapshotGroup; snapshots: SnapshotInfo[] }>;
}

/** The catalog's package, or a 404 when the project has none active. */
function packageOf(catalog: DatasetCatalog): PackageHead {
  if (!catalog.pkg) throw new NotFoundError('ontology', 'This project has no compiled ontology package yet: compile and activate one before querying.');
  return catalog.pkg;
}

/** How a query reads bound tables: the patterns it can reach them by, and how many solutions of them fix its answer, if any do. */
interface QueryReach {
  patterns: ReachPattern[];
  firstSolutions?: number;
  /** An ASK: any of its solutions gives its answer, so its first ones are read however few records it reaches. */
  anySolution?: boolean;
}

/**
 * How a query reads the plan's bound tables, or undefined when the plan has none or the query
 * cannot be analysed (its tables are then read whole, as other bindings).
 */
function queryReach(memory: SparqlMemory, plan: DatasetPlan, text: string | undefined): QueryReach | undefined {
  if (text === undefined || memory.settings.tableReads !== 'per-query' || !plan.sources.some((source) => source.table || source.external)) return undefined;
  let parsed;
  try {
    parsed = memory.parses.parse(text);
  } catch {
    return undefined; // the query thread gives the parse error its answer
  }
  if (parsed.kind !== 'query') return undefined;
  const patterns = reachOf(parsed.parsed);
  return patterns && { patterns, firstSolutions: firstSolutionsOf(parsed.parsed), anySolution: (parsed.parsed as { queryType?: string }).queryType === 'ASK' };
}

/** The version of a table's per-query graph: its data version and a digest of the query and every table's data version. */
function reachedVersion(dataVersion: string, reachKey: string): string {
  return `${dataVersion}:reach:${reachKey}`;
}

function reachKeyOf(plan: DatasetPlan, text: string, tableVersions: string[]): string {
  // What is read depends on the graphs read whole too (a pattern they may match narrows nothing),
  // so the key names every binding of the plan, not only the tables.
  return createHash('sha256').update(text).update('\n').update(tableVersions.join('\n')).update('\n').update(plan.bindingSlots).digest('base64url').slice(0, 22);
}

/**
 * The caller's dataset when every graph of it is kept at its current version and the snapshots
 * that say so are kept too (almost every query): found without a promise, so the query starts at
 * once. Undefined when anything must be read or built (queryDataset does that).
 */
export function keptDataset(ctx: OperationContext, catalog: DatasetCatalog, text?: string): QueryDatasetHandles | undefined {
  const { db, principal, deps: { sparqlMemory } } = ctx;
  const { graphs } = sparqlMemory;
  if (db.isTransaction) return undefined;
  const pkg = packageOf(catalog);
  checkingGrants(principal, 'read');
  const plan = planOf(catalog, pkg, principal, true);
  const pkgVersion = packageVersion(pkg);
  const pkgGraph = graphs.get(pkgVersion);
  if (!pkgGraph || pkgGraph.handle.version !== pkgVersion) return undefined;
  const reach = queryReach(sparqlMemory, plan, text);
  const handles = [pkgGraph.handle];
  const dataVersions = [pkgVersion];
  const tables: Array<{ dataVersion: string }> = [];
  let snapshots: SnapshotInfo[] | undefined;
  let snapshotGroup: SnapshotGroup | undefined;
  const keptSnapshots: NonNullable<QueryDatasetHandles['keptSnapshots']> = [];
  for (const source of plan.sources) {
    const group = source.group;
    let kept: KeptGraph | undefined;
    if (group) {
      if (!group.kept) return undefined;
      if (group !== snapshotGroup) {
        snapshots = ctx.deps.definitions.peek<SnapshotInfo[]>(group.scope, group.key);
        snapshotGroup = group;
        if (snapshots && !keptSnapshots.some((each) => each.group === group)) keptSnapshots.push({ group, snapshots });
      }
      if (!snapshots) return undefined;
      const dataVersion = snapshotVersionOf(source.names, snapshots[source.at]);
      dataVersions.push(dataVersion);
      if (reach && source.table) {
        tables.push({ dataVersion });
        continue;
      }
      kept = graphs.get(source.names.slot);
      if (!kept || kept.handle.version !== dataVersion) return undefined;
    } else {
      // Live tables are read for each query that reaches them.
      if (reach && source.external) {
        if (reachesBinding(reach.patterns, source.binding, pkg.terms, pkg.baseIri)) return undefined;
        dataVersions.push(source.names.slot);
        continue;
      }
      kept = graphs.get(source.names.slot);
      if (!kept || !unpinnedFresh(sparqlMemory.settings, kept)) return undefined;
      dataVersions.push(kept.handle.version);
    }
    handles.push(kept.handle);
  }
  const tableHandles = new Set<GraphHandle>();
  if (tables.length) {
    const reachKey = reachKeyOf(plan, text!, tables.map((table) => table.dataVersion));
    for (const { dataVersion } of tables) {
      const version = reachedVersion(dataVersion, reachKey);
      const kept = graphs.get(version);
      // A whole table's graph is kept under the reached version too; it must still be the table's current one.
      if (!kept || (kept.handle.version !== version && kept.handle.version !== dataVersion)) return undefined;
      handles.push(kept.handle);
      tableHandles.add(kept.handle);
    }
  }
  return { ...datasetOf(sparqlMemory, plan, pkg, handles, dataVersions, tableHandles), keptSnapshots };
}

/**
 * The graphs one caller's query runs over: the active package, the graphs of the bindings whose
 * endpoints the data guard lets this key read through bindings, read and built where they are not
 * kept, and, for bound managed tables, graphs of only the records this query reaches (`text`).
 * Refuses (never truncates) whole graphs past the dataset bound, and table reads past the reach bound.
 */
export async function queryDataset(ctx: OperationContext, catalog: DatasetCatalog, text?: string, pin?: SnapshotPin, timeoutMs?: number): Promise<QueryDatasetHandles> {
  // A pinned read checks its snapshots against the pin, which kept graphs do not know.
  const kept = pin ? undefined : keptDataset(ctx, catalog, text);
  return kept && (await keptSnapshotsCurrent(ctx, kept)) ? kept : readDataset(ctx, catalog, text, pin, timeoutMs);
}

/** queryDataset after keptDataset found something to read or build. */
/** `timeoutMs`: the time limit of the table reads (the query's, WEFT_SPARQL_TIMEOUT_MS unless its caller has another). */
export async function readDataset(ctx: OperationContext, catalog: DatasetCatalog, text?: string, pin?: SnapshotPin, timeoutMs?: number): Promise<QueryDatasetHandles> {
  const { db, deps, principal } = ctx;
  const { sparqlMemory } = deps;
  const pkg = packageOf(catalog);
  checkingGrants(principal, 'read');
  const plan = planOf(catalog, pkg, principal, !db.isTransaction);
  const bound = sparqlMemory.settings.maxDatasetTriples;
  const packageHandle = await packageGraph(sparqlMemory, db, pkg);
  const handles = [packageHandle];
  const dataVersions = [packageHandle.version];
  let triples = packageHandle.graph.tripleCount;
  const snapshots = plan.groups.length ? await snapshotsOf(db, deps, plan.groups) : undefined;
  const reach = queryReach(sparqlMemory, plan, text);
  const tables: ReadTable[] = [];
  // One binding at a time: the bound is checked as each graph is built, before the next is read.
  for (const source of plan.sources) {
    const snapshot = pinnedSnapshot(source, source.group && snapshots!.get(source.group)![source.at], pin);
    if (reach && source.table && snapshot) {
      const dataVersion = snapshotVersionOf(source.names, snapshot);
      dataVersions.push(dataVersion);
      tables.push({ source, snapshot, dataVersion });
      continue;
    }
    if (reach && source.external) {
      // A live table no pattern can reach is not read (nor does it name the data).
      if (!reachesBinding(reach.patterns, source.binding, pkg.terms, pkg.baseIri)) {
        dataVersions.push(source.names.slot);
        continue;
      }
      // Live data has no version to name twice: each read's is its own.
      const dataVersion = `${source.names.slot}:live:${randomBytes(12).toString('base64url')}`;
      dataVersions.push(dataVersion);
      tables.push({ source, dataVersion });
      continue;
    }
    const handle = await bindingGraph(sparqlMemory, db, deps, pkg, source, snapshot, bound - triples);
    handles.push(handle);
    dataVersions.push(handle.version);
    triples += handle.graph.tripleCount;
    if (triples > bound) throw tooLarge(bound, triples, false);
  }
  const tableHandles = tables.length ? await reachedGraphs(sparqlMemory, db, deps, pkg, plan, reach!, text!, tables, timeoutMs, ctx.signal) : [];
  handles.push(...tableHandles);
  return datasetOf(sparqlMemory, plan, pkg, handles, dataVersions, new Set(tableHandles));
}

/** A bound table a query reads the records of: a managed table at its snapshot, or an external one (no snapshot) as it is. */
interface ReadTable {
  source: BoundSource;
  snapshot?: SnapshotInfo;
  dataVersion: string;
}

/**
 * Graphs of the records of bound tables `patterns` reach, one per table, kept per query text and
 * data version (not when an external table is read: live data is read again by the next query).
 */
async function reachedGraphs(memory: SparqlMemory, db: Executor, deps: CapabilityDependencies, pkg: PackageHead, plan: DatasetPlan, reach: QueryReach, text: string, tables: ReadTable[], timeoutMs?: number, signal?: AbortSignal): Promise<GraphHandle[]> {
  const { graphs, tableCounts: counts } = memory;
  const live = tables.some((table) => table.source.external);
  const reachKey = reachKeyOf(plan, text, tables.map((table) => table.dataVersion));
  const versions = tables.map((table) => reachedVersion(table.dataVersion, reachKey));
  const kept = versions.map((version) => graphs.get(version));
  if (!live && kept.every(Boolean)) return kept.map((graph) => graph!.handle);
  const facts = await packageFacts(memory, db, pkg);
  const others: OtherGraphs = { predicates: new Set([...facts.predicates, ...plan.memoryPredicates]), types: new Set([...facts.types, ...plan.memoryTypes]) };
  const reachTables: ReachTable[] = tables.map(({ source, snapshot }) => ({
    ...(source.table ?? { workspaceId: source.endpoint.workspaceId, table: String((source.endpoint.target as { table?: unknown }).table) }),
    termId: source.binding.termId,
    mapping: source.binding.mapping,
    // A table never written has no records to read.
    version: !snapshot || snapshot.id === EMPTY_SNAPSHOT.id ? undefined : snapshot.version,
  }));
  for (const [at, table] of reachTables.entries()) if (table.version !== undefined) indexKeyFields(db, deps, tables[at].source, table);
  const settings = memory.settings;
  const limits: ReachLimits = { maxTriples: settings.maxReachedTriples, timeoutMs: timeoutMs ?? settings.timeoutMs, connections: settings.sqlConnections, slots: memory.tableReads, primaryKeys: memory.primaryKeys, signal, counts };
  // A query its first solutions answer reads pages until it has them; read as any other when they are not found so.
  // Under the reach bound a large unordered slice reads the whole graph, which every page then
  // shares (a first-records read per page re-reads OFFSET records for each: the bench's read-back
  // of 130 pages of 10,000 took 2.4 GB so); a small slice and an ASK read their first records.
  const first = !live && reach.firstSolutions !== undefined ? await readFirstRecords(db as never, reach.patterns, reachTables, pkg.terms, pkg.baseIri, reach.firstSolutions, limits, reach.anySolution) : undefined;
  const read = first ?? (await readingExternalTables(db, deps, tables, reachTables, limits, () => readReachedRecords(db as never, reach.patterns, reachTables, pkg.terms, pkg.baseIri, others, limits)));
  const handles: GraphHandle[] = [];
  for (const [at, { source, snapshot, dataVersion }] of tables.entries()) {
    if (read.whole[at]) handles.push(await wholeTableGraph(memory, db, deps, pkg, source, reachTables[at], snapshot, dataVersion, versions[at], limits, live));
    else handles.push(readGraph(at, source));
  }
  return handles;

  function readGraph(at: number, source: BoundSource): GraphHandle {
    const encoder = new GraphEncoder();
    for (const record of read.records[at]) {
      const mapped = mapRecord(record, source.binding.termId, source.binding.mapping, pkg.terms, pkg.baseIri);
      if (mapped) for (const quad of mapped.quads) encoder.add(quad);
    }
    const handle = { version: versions[at], graph: encoder.finish() };
    if (!live) graphs.set(versions[at], { handle, builtAt: Date.now() }, encodedBytes(handle.graph));
    return handle;
  }
}

/**
 * Runs `read` with a session open on each external table's installation (one per installation,
 * REPEATABLE READ, so every round of the query's reads sees one snapshot of that database) and
 * the tables' `external` reads set to read there.
 */
async function readingExternalTables<T>(db: Executor, deps: CapabilityDependencies, tables: ReadTable[], reachTables: ReachTable[], limits: ReachLimits, read: () => Promise<T>): Promise<T> {
  // Opened in one order (by id) by every query, so two never wait on each other's pools.
  const installations = [...new Map(tables.filter((table) => table.source.external).map(({ source }) => [source.endpoint.installation!.id, source.endpoint.installation!])).values()].sort((a, b) => (a.id < b.id ? -1 : 1));
  const { timeoutMs, signal } = limits;
  const opened = async (at: number): Promise<T> => {
    if (at === installations.length) return read();
    const installation = installations[at];
    const stopped = (callerGone: boolean) => (callerGone ? callerGoneError() : timeoutError(timeoutMs));
    return readingRemote(capabilityContext(db, installation, deps), { timeoutMs, signal, stopped, repeatable: true }, async (reads) => {
      for (const [index, { source }] of tables.entries()) {
        if (source.external && source.endpoint.installation!.id === installation.id) reachTables[index].external = await externalRecords(reads, source.endpoint.target, source.binding.mapping);
      }
      return opened(at + 1);
    });
  };
  return opened(0);
}

/** Subject and link fields are what queries find a table's records by: indexed in the background (field-indexes.ts). */
function indexKeyFields(db: Executor, deps: CapabilityDependencies, source: BoundSource, table: Pick<ReachTable, 'workspaceId' | 'table' | 'mapping'>): void {
  if (db.isTransaction) return;
  const declaredKey = (source.endpoint.target as { primaryKey?: unknown }).primaryKey;
  const byRowKey = Array.isArray(declaredKey) && declaredKey.length === 1 ? declaredKey[0] : undefined;
  const keyFields = [...templateFields(table.mapping.subjectTemplate), ...Object.values(table.mapping.links ?? {}).flatMap((link) => [link.field, ...templateFields(link.targetTemplate)])];
  deps.managedTables.fieldIndexes.ensure(db as Db, workspaceSchema(table.workspaceId), table.table, [...new Set(keyFields)].filter((field) => field !== byRowKey));
}

/**
 * The whole graph of a table a query reaches every record of, at its snapshot: built once per
 * snapshot and shared by every query (as when tables were read whole), and kept under the
 * query's reached version too so the same text finds it without reading again. Past the reach
 * bound it is refused as query_too_broad from PostgreSQL's count of its triples, before a record
 * is read, and at once for later queries at the same snapshot (the count is kept).
 */
async function wholeTableGraph(memory: SparqlMemory, db: Executor, deps: CapabilityDependencies, pkg: PackageHead, source: BoundSource, table: ReachTable, snapshot: SnapshotInfo | undefined, dataVersion: string, reachedAs: string, limits: ReachLimits, live: boolean): Promise<GraphHandle> {
  const bound = limits.maxTriples;
  const kept = memory.graphs.get(source.names.slot);
  if (table.version !== undefined && kept?.handle.version !== dataVersion) await countedWithin(db, { ...table, version: table.version }, limits);
  let handle: GraphHandle;
  try {
    // Only managed tables are taken whole: an external one is read in the query's session (readReachedRecords).
    handle = await bindingGraph(memory, db, deps, pkg, source, snapshot, bound);
  } catch (error) {
    if (!(error instanceof InputError) || error.code !== 'dataset_too_large') throw error;
    if (table.version !== undefined) {
      // A whole read found it past the bound: later queries at this snapshot are refused from this.
      const key = tableCountKey({ ...table, version: table.version });
      limits.counts?.set(key, { triples: bound + 1, atLeast: true }, key.length);
    }
    throw tooBroad(bound, table.table);
  }
  // Not kept under a version no later query names (one with live reads beside it).
  if (!live) memory.graphs.set(reachedAs, { handle, builtAt: Date.now() }, 1);
  return handle;
}

/** refusePastBound for a whole table, under the query's time limit and the workspace's table-read slots (inside a caller's transaction, in it). */
async function countedWithin(db: Executor, table: ReachTable & { version: string }, limits: ReachLimits): Promise<void> {
  const refuse = (trx: Executor) => refusePastBound(trx as never, table, limits.maxTriples, limits.maxTriples, limits.counts);
  if (db.isTransaction) return refuse(db);
  const release = limits.slots.take(table.workspaceId, limits.connections, limits.timeoutMs);
  try {
    await readingWithin(db as Db, limits, refuse);
  } finally {
    release();
  }
}

/**
 * A SELECT over stars of bound tables (or an ASK or CONSTRUCT made of one: sparql-forms-in-sql.ts), answered by PostgreSQL (sparql-in-sql.ts), when the
 * caller's dataset is the package and bound managed tables only, or when every star of it is over
 * postgres_table endpoints of one installation (answered by that database: sparql-external-sql.ts);
 * undefined otherwise, or when the SQL cannot be trusted for these values (the query is then
 * evaluated as any other).
 */
export async function answeredInSql(ctx: OperationContext, catalog: DatasetCatalog, text: string, maxResults: number, pin?: SnapshotPin, timeoutMs?: number): Promise<{ result: SparqlResult; dataset: QueryDatasetHandles } | undefined> {
  const { db, deps, principal } = ctx;
  const settings = deps.sparqlMemory.settings;
  if (settings.tableReads !== 'per-query' || db.isTransaction) return undefined;
  const pkg = packageOf(catalog);
  checkingGrants(principal, 'read');
  const plan = planOf(catalog, pkg, principal, true);
  if (!plan.sources.length) return undefined;
  let parsed;
  try {
    parsed = ctx.deps.sparqlMemory.parses.parse(text);
  } catch {
    return undefined;
  }
  if (parsed.kind !== 'query') return undefined;
  // An ASK its first solutions answer reads managed tables a page at a time and stops at a solution;
  // the statement's checks of the values read scan the whole star.
  if (parsed.queryType === 'ASK' && firstSolutionsOf(parsed.parsed) !== undefined && plan.sources.every((source) => source.table)) return undefined;
  const facts = await packageFacts(ctx.deps.sparqlMemory, db, pkg);
  const othersOf = (at: number): OtherGraphs => {
    const others: OtherGraphs = { predicates: new Set(facts.predicates), types: new Set(facts.types) };
    for (const [other, { binding }] of plan.sources.entries()) {
      if (other === at) continue;
      others.types!.add(`${pkg.baseIri}${binding.termId}`);
      for (const property of Object.keys(binding.mapping.properties)) others.predicates!.add(`${pkg.baseIri}${property}`);
      for (const link of Object.keys(binding.mapping.links ?? {})) others.predicates!.add(`${pkg.baseIri}${link}`);
    }
    return others;
  };
  const form = sqlFormOf(parsed.parsed, (select) => sqlQueryOf(select, plan.sources.map(({ binding }) => binding), othersOf, pkg.terms, pkg.baseIri));
  if (!form) return undefined;
  const { inSql } = form;
  /** The answer within the evaluator's bound on rows or triples, over the dataset of these data versions. */
  const answered = (result: SparqlResult, version: string) => ({ result: form.finish(result, maxResults), dataset: { pkg, graphs: [], version, triples: 0, withheldBindings: plan.withheld } });
  // Bound tables of one database answer it there: managed tables, or external tables of one
  // installation. Stars of several databases are answered over the records each one's reads find (readDataset).
  const starSources = inSql.stars.map((star) => plan.sources[star.source]);
  const installation = soleExternalInstallation(starSources);
  if (installation) {
    // The tables as they are when the statement runs.
    const release = deps.sparqlMemory.tableReads.take(principal.workspaceId, settings.sqlConnections, settings.timeoutMs);
    try {
      const limits = { timeoutMs: timeoutMs ?? settings.timeoutMs, signal: ctx.signal, minRecords: settings.sqlMinRecords };
      const read = new Set(inSql.stars.map((star) => star.source));
      const tables = plan.sources.map(({ endpoint, binding }, at) => (read.has(at) ? { target: endpoint.target, mapping: binding.mapping } : undefined));
      const result = await answerOnInstallation(capabilityContext(db, installation, deps), inSql, tables, limits);
      // Live data has no version to name twice: each answer's is its own (the digest's length, not kept).
      return result && answered(result, randomBytes(16).toString('base64url'));
    } finally {
      release();
    }
  }
  if (!starSources.every((source) => source.table)) return undefined;
  // The stars' predicates and types are their tables' alone (sqlQueryOf), so the answer depends on
  // the managed tables' snapshots, which name the dataset, and on the other bindings only as bound.
  const managed = plan.sources.map((source) => (source.table ? { ...source.table, termId: source.binding.termId, mapping: source.binding.mapping } : undefined));
  const snapshots = await snapshotsOf(db, deps, plan.groups.filter((group) => group.installation.capability === 'managed_table'));
  const snapshotOf = (source: BoundSource) => pinnedSnapshot(source, snapshots.get(source.group!)![source.at], pin)!;
  // A table never written has no snapshot to read at (its records are none): evaluated as any other.
  if (inSql.stars.some((star) => snapshotOf(plan.sources[star.source]).id === EMPTY_SNAPSHOT.id)) return undefined;
  if (settings.sqlMinRecords > 0) {
    const read = [...new Set(inSql.stars.map((star) => star.source))].map((at) => ({ ...managed[at]!, version: snapshotOf(plan.sources[at]).version }));
    if ((await estimatedRecords(db, deps.sparqlMemory.tableEstimates, read)) < settings.sqlMinRecords) return undefined;
  }
  for (const star of inSql.stars) indexKeyFields(db, deps, plan.sources[star.source], managed[star.source]!);
  const dataVersions = [packageVersion(pkg), ...plan.sources.map((each) => (each.table ? snapshotVersionOf(each.names, snapshotOf(each)) : each.names.slot))];
  const release = deps.sparqlMemory.tableReads.take(principal.workspaceId, settings.sqlConnections, settings.timeoutMs);
  try {
    const reading = { timeoutMs: timeoutMs ?? settings.timeoutMs, signal: ctx.signal, workMem: SQL_WORK_MEM };
    const result = await readingWithin(db as Db, reading, (trx) => runSqlQuery(trx, inSql, plan.sources.map((source, at) => managed[at] && { ...managed[at], version: snapshotOf(source).version }), deps.sparqlMemory));
    return result && answered(result, datasetVersionOf(ctx.deps.sparqlMemory, plan, dataVersions));
  } finally {
    release();
  }
}

/** The installation every one of these sources is a postgres_table endpoint of, if there is one such. */
function soleExternalInstallation(sources: BoundSource[]): NonNullable<DataEndpoint['installation']> | undefined {
  const installation = sources[0]?.endpoint.installation;
  return installation?.capability === 'postgres_table' && sources.every(({ endpoint }) => endpoint.installation!.id === installation.id) ? installation : undefined;
}

/**
 * The rows PostgreSQL estimates the tables hold (every record version), or Infinity when a table
 * was never analysed: small tables are answered faster by the evaluator over their kept graphs.
 * An estimate is kept per table and snapshot (`kept`): it decides only which way a query is
 * answered, and a commit (a new snapshot) is what moves it.
 */
async function estimatedRecords(db: Executor, kept: SparqlMemory['tableEstimates'], tables: Array<ReachTable & { version: string }>): Promise<number> {
  const keyOf = (table: ReachTable & { version: string }) => `${workspaceSchema(table.workspaceId)}.${table.table}@${table.version}`;
  // Two bindings over one table count it once.
  tables = [...new Map(tables.map((table) => [keyOf(table), table])).values()];
  const unknown = tables.filter((table) => kept.get(keyOf(table)) === undefined);
  if (unknown.length) {
    const { rows } = await db.raw<{ rows: Array<{ schema: string; name: string; estimate: number }> }>(
      `SELECT n.nspname AS schema, c.relname AS name, c.reltuples::float8 AS estimate FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE (n.nspname, c.relname) IN (SELECT * FROM unnest(?::text[], ?::text[]))`,
      [unknown.map((table) => workspaceSchema(table.workspaceId)), unknown.map((table) => table.table)],
    );
    const found = new Map(rows.map((row) => [`${row.schema}.${row.name}`, row.estimate < 0 ? Infinity : row.estimate]));
    // A table not found (or never analysed) is Infinity, and not kept: its statistics may come soon.
    for (const table of unknown) {
      const estimate = found.get(`${workspaceSchema(table.workspaceId)}.${table.table}`);
      if (estimate === undefined || estimate === Infinity) return Infinity;
      kept.set(keyOf(table), estimate, keyOf(table).length);
    }
  }
  return tables.reduce((sum, table) => sum + kept.get(keyOf(table))!, 0);
}

/** The dataset of these graphs, within the bound, named by the versions of its data. */
function datasetOf(memory: SparqlMemory, plan: DatasetPlan, pkg: PackageHead, handles: GraphHandle[], dataVersions: string[], tableHandles = new Set<GraphHandle>()): QueryDatasetHandles {
  let triples = 0;
  let wholeTriples = 0;
  for (const handle of handles) {
    triples += handle.graph.tripleCount;
    // Bound tables' graphs are within the reach bound; the dataset bound is for the other graphs.
    if (!tableHandles.has(handle)) wholeTriples += handle.graph.tripleCount;
  }
  if (wholeTriples > memory.settings.maxDatasetTriples) throw tooLarge(memory.settings.maxDatasetTriples, wholeTriples, false);
  return { pkg, graphs: handles, version: datasetVersionOf(memory, plan, dataVersions), triples, withheldBindings: plan.withheld };
}

function datasetVersionOf(memory: SparqlMemory, plan: DatasetPlan, dataVersions: string[]): string {
  const last = plan.last;
  if (last && last.versions.length === dataVersions.length && last.versions.every((version, index) => version === dataVersions[index])) return last.version;
  const version = datasetVersion(memory, dataVersions.join('\n'));
  plan.last = { versions: dataVersions, version };
  return version;
}

/** The dataset's version: a digest of its graphs' versions, kept per combination (every query names one). */
function datasetVersion({ datasetVersions }: SparqlMemory, graphVersions: string): string {
  return datasetVersions.get(graphVersions) ?? datasetVersions.set(graphVersions, createHash('sha256').update(graphVersions).digest('base64url').slice(0, 22), graphVersions.length);
}
