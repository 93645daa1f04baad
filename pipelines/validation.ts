import type { FieldProblem } from '../core/errors';
import type { CapabilityDefinition } from '../plugins/capability';
import { DestinationNode, isDestination, isSource, PipelineDocument, PipelineNode, SourceNode } from './document';
import { buildGraph, PipelineGraph, reachable, topologicalOrder } from './graph';
import { transformProblems } from './transforms';

/** A problem of a pipeline document: where (JSON Pointer), what, and the node it concerns. */
export interface PipelineProblem extends FieldProblem {
  nodeId?: string;
}

/** What validation needs to know of an endpoint a node names (loaded by the service, in the caller's workspace). */
export interface EndpointFacts {
  id: string;
  role: string;
  capability: CapabilityDefinition;
  target: Record<string, unknown>;
  /** Field names declared in schemaHints.columns; null when unknown. */
  fields: string[] | null;
  /** The record key: schemaHints.primaryKey, or the one the target declares; null when unknown. */
  primaryKey: string[] | null;
  /** The capability can take a run's records in one commit. */
  stagedWrites: boolean;
}

interface HttpWindow {
  mode?: 'since_last' | 'rolling';
}

/**
 * Every problem of a shape-valid document at once: the graph (unique ids, known edge ends,
 * acyclic, every node reachable from a source and leading to a destination, each destination fed),
 * the endpoints (present, role, capability support, incremental settings) and field compatibility
 * where schemas are declared.
 */
export function documentProblems(document: PipelineDocument, endpoints: Map<string, EndpointFacts>): PipelineProblem[] {
  const problems: PipelineProblem[] = [];
  const at = (node: PipelineNode, index: number, suffix: string, message: string) => problems.push({ path: `/nodes/${index}${suffix}`, message, nodeId: node.id });
  const graph = buildGraph(document);
  graphProblems(document, graph, problems);

  document.nodes.forEach((node, index) => {
    if (isSource(node)) sourceProblems(node, endpoints.get(node.endpointId), (suffix, message) => at(node, index, suffix, message));
    else if (isDestination(node)) destinationProblems(node, endpoints.get(node.endpointId), (suffix, message) => at(node, index, suffix, message));
    else for (const problem of transformProblems(node)) at(node, index, problem.path, problem.message);
  });
  fieldProblems(graph, endpoints, (node, suffix, message) => at(node, graph.index.get(node.id)!, suffix, message));
  return problems;
}

function graphProblems(document: PipelineDocument, graph: PipelineGraph, problems: PipelineProblem[]): void {
  const seen = new Set<string>();
  document.nodes.forEach((node, index) => {
    if (seen.has(node.id)) problems.push({ path: `/nodes/${index}/id`, message: `repeats the node id "${node.id}"`, nodeId: node.id });
    seen.add(node.id);
  });
  document.edges.forEach((edge, index) => {
    for (const end of ['from', 'to'] as const) {
      // The problem names the edge's other end when that one is a real node.
      const other = edge[end === 'from' ? 'to' : 'from'];
      if (!graph.nodes.has(edge[end])) problems.push({ path: `/edges/${index}/${end}`, message: `names no node ("${edge[end]}")`, ...(graph.nodes.has(other) && { nodeId: other }) });
    }
    const from = graph.nodes.get(edge.from);
    const to = graph.nodes.get(edge.to);
    if (edge.from === edge.to) problems.push({ path: `/edges/${index}`, message: 'connects a node to itself', nodeId: edge.from });
    if (to && isSource(to)) problems.push({ path: `/edges/${index}/to`, message: `leads into source "${to.id}": sources have no inputs`, nodeId: to.id });
    if (from && isDestination(from)) problems.push({ path: `/edges/${index}/from`, message: `leaves destination "${from.id}": destinations have no outputs`, nodeId: from.id });
  });
  const nodes = [...graph.nodes.values()];
  if (!nodes.some(isSource)) problems.push({ path: '/nodes', message: 'needs at least one source node' });
  if (!nodes.some(isDestination)) problems.push({ path: '/nodes', message: 'needs at least one destination node' });

  const ordered = new Set(topologicalOrder(graph));
  const fromSources = reachable(graph, nodes.filter(isSource).map((n) => n.id));
  const toDestinations = reachable(graph, nodes.filter(isDestination).map((n) => n.id), 'parents');
  for (const node of nodes) {
    const path = `/nodes/${graph.index.get(node.id)}`;
    const problem = (message: string) => problems.push({ path, message, nodeId: node.id });
    if (!ordered.has(node.id)) problem('is on a cycle (or fed by one): the graph must be acyclic');
    if (isDestination(node) && graph.parents.get(node.id)!.length === 0) problem('is a destination that no node feeds');
    else if (!fromSources.has(node.id)) problem('is not reachable from any source');
    if (!isDestination(node) && !toDestinations.has(node.id)) problem('leads to no destination');
  }
}

type Report = (suffix: string, message: string) => void;

function endpointProblems(facts: EndpointFacts | undefined, role: 'source' | 'destination', report: Report): facts is EndpointFacts {
  if (!facts) {
    report('/endpointId', 'is not a data endpoint of this workspace');
    return false;
  }
  if (facts.role !== role) report('/endpointId', `names an endpoint with role ${facts.role}; a ${role} node needs role ${role}`);
  return true;
}

function sourceProblems(node: SourceNode, facts: EndpointFacts | undefined, report: Report): void {
  if (!endpointProblems(facts, 'source', report)) return;
  const { capability } = facts;
  if (!capability.supports.recordsRead) report('/endpointId', `${capability.name} endpoints cannot be read`);
  const window = (facts.target.window ?? undefined) as HttpWindow | undefined;
  const remote = !capability.supports.orderedReads;
  if (remote) {
    if (node.cursorField !== undefined) report('/cursorField', `${capability.name} sources are incremental through their target window, not a cursor field`);
    if (node.mode === 'incremental' && !window) report('/mode', `incremental needs a window on the ${capability.name} endpoint's target`);
    if (node.mode !== 'incremental' && window && (window.mode ?? 'since_last') === 'since_last') {
      report('/mode', 'the endpoint\'s window is since_last, which needs the source in incremental mode (or give the window mode rolling)');
    }
    return;
  }
  if (node.mode === 'incremental' && node.cursorField === undefined) report('/cursorField', `is required for an incremental ${capability.name} source: records past its last committed value are read`);
  if (node.mode !== 'incremental' && node.cursorField !== undefined) report('/cursorField', 'applies to incremental mode only');
  if (node.cursorField !== undefined && facts.fields && !facts.fields.includes(node.cursorField)) report('/cursorField', `is not a field of the endpoint (${facts.fields.slice(0, 20).join(', ')})`);
}

function destinationProblems(node: DestinationNode, facts: EndpointFacts | undefined, report: Report): void {
  if (!endpointProblems(facts, 'destination', report)) return;
  if (!facts.stagedWrites) report('/endpointId', `${facts.capability.name} endpoints cannot be written by a pipeline`);
  if (node.writeMode === 'upsert' && facts.primaryKey !== null && facts.primaryKey.length === 0) {
    report('/writeMode', 'upsert needs a primary key on the destination (its target or schemaHints.primaryKey)');
  }
}

/**
 * Propagates known field names from sources with declared columns through the transforms, and
 * reports fields a node uses that cannot arrive. Unknown (null) stays unknown downstream.
 */
function fieldProblems(graph: PipelineGraph, endpoints: Map<string, EndpointFacts>, report: (node: PipelineNode, suffix: string, message: string) => void): void {
  const known = new Map<string, Set<string> | null>();
  const missing = (fields: Set<string> | null, names: string[]) => (fields ? names.filter((name) => !fields.has(name)) : []);
  for (const id of topologicalOrder(graph)) {
    const node = graph.nodes.get(id)!;
    const inputs = graph.parents.get(id)!.map((parent) => known.get(parent) ?? null);
    const incoming = inputs.length && inputs.every(Boolean) ? new Set(inputs.flatMap((set) => [...set!])) : null;
    const needs = (names: string[], suffix: (name: string, i: number) => string) => {
      missing(incoming, names).forEach((name) => report(node, suffix(name, names.indexOf(name)), `uses field "${name}", which does not reach this node (known: ${[...incoming!].slice(0, 20).join(', ')})`));
    };
    switch (node.type) {
      case 'source': {
        const fields = endpoints.get(node.endpointId)?.fields;
        known.set(id, fields ? new Set(fields) : null);
        break;
      }
      case 'select': {
        if (node.fields) needs(node.fields, (_, i) => `/fields/${i}`);
        const kept = node.fields ? new Set(node.fields) : incoming;
        if (kept) for (const name of Object.keys(node.rename ?? {})) if (!kept.has(name)) report(node, `/rename/${name}`, `renames field "${name}", which does not reach this node`);
        known.set(id, kept && new Set([...kept].map((name) => node.rename?.[name] ?? name)));
        break;
      }
      case 'filter':
        needs(node.where.map((c) => c.field), (_, i) => `/where/${i}/field`);
        known.set(id, incoming);
        break;
      case 'cast':
        needs(Object.keys(node.fields), (name) => `/fields/${name}`);
        known.set(id, incoming);
        break;
      case 'dedupe':
        needs(node.key, (_, i) => `/key/${i}`);
        known.set(id, incoming);
        break;
      case 'compute':
        known.set(id, incoming && new Set([...incoming, ...node.fields.map((f) => f.name)]));
        break;
      case 'destination': {
        const facts = endpoints.get(node.endpointId);
        if (!facts || !incoming) break;
        if (facts.fields) {
          const extra = [...incoming].filter((name) => !facts.fields!.includes(name));
          if (extra.length) report(node, '/endpointId', `receives fields the destination does not declare: ${extra.slice(0, 20).join(', ')}`);
        }
        if ((node.writeMode === 'upsert') && facts.primaryKey?.length) {
          const absent = facts.primaryKey.filter((name) => !incoming.has(name));
          if (absent.length) report(node, '/writeMode', `upsert matches on ${facts.primaryKey.join(', ')}, but ${absent.join(', ')} does not reach this node`);
        }
        break;
      }
    }
  }
}
