import type { PipelineDocument, PipelineNode } from './document';

/** The document's nodes and edges as adjacency lists, built once per use. */
export interface PipelineGraph {
  nodes: Map<string, PipelineNode>;
  /** Node index in the document, for problem paths. */
  index: Map<string, number>;
  children: Map<string, string[]>;
  parents: Map<string, string[]>;
}

export function buildGraph(document: PipelineDocument): PipelineGraph {
  const nodes = new Map<string, PipelineNode>();
  const index = new Map<string, number>();
  document.nodes.forEach((node, i) => {
    if (!nodes.has(node.id)) {
      nodes.set(node.id, node);
      index.set(node.id, i);
    }
  });
  const children = new Map<string, string[]>([...nodes.keys()].map((id) => [id, []]));
  const parents = new Map<string, string[]>([...nodes.keys()].map((id) => [id, []]));
  for (const { from, to } of document.edges) {
    if (!nodes.has(from) || !nodes.has(to)) continue;
    if (!children.get(from)!.includes(to)) children.get(from)!.push(to);
    if (!parents.get(to)!.includes(from)) parents.get(to)!.push(from);
  }
  return { nodes, index, children, parents };
}

/** Nodes reachable from `start` (itself included), following edges forward or backward. */
export function reachable(graph: PipelineGraph, start: string[], direction: 'children' | 'parents' = 'children'): Set<string> {
  const seen = new Set<string>();
  const stack = [...start];
  while (stack.length) {
    const id = stack.pop()!;
    if (seen.has(id)) continue;
    seen.add(id);
    stack.push(...(graph[direction].get(id) ?? []));
  }
  return seen;
}

/**
 * Kahn's topological order of `subset` (default all nodes), stable in document order. Nodes left
 * out of the returned order sit on or behind a cycle.
 */
export function topologicalOrder(graph: PipelineGraph, subset: Set<string> = new Set(graph.nodes.keys())): string[] {
  const pending = new Map<string, number>();
  for (const id of subset) pending.set(id, graph.parents.get(id)!.filter((p) => subset.has(p)).length);
  const ready = [...subset].filter((id) => pending.get(id) === 0).sort((a, b) => graph.index.get(a)! - graph.index.get(b)!);
  const order: string[] = [];
  while (ready.length) {
    const id = ready.shift()!;
    order.push(id);
    for (const child of graph.children.get(id)!) {
      if (!subset.has(child)) continue;
      const left = pending.get(child)! - 1;
      pending.set(child, left);
      if (left === 0) ready.push(child);
    }
  }
  return order;
}
