import { isDestination, isSource, PipelineDocument } from './document';
import { buildGraph, reachable, topologicalOrder } from './graph';
import { compileTransform, CompiledTransform, Row, TransformNode } from './transforms';

/** How one source's records travel: the nodes downstream of it, in order, with compiled transforms. */
export interface FlowPlan {
  sourceId: string;
  /** Downstream nodes in topological order (the source excluded). */
  order: string[];
  parents: Map<string, string[]>;
  transforms: Map<string, CompiledTransform>;
  destinationIds: Set<string>;
}

export function planFlow(document: PipelineDocument, sourceId: string): FlowPlan {
  const graph = buildGraph(document);
  const downstream = reachable(graph, [sourceId]);
  const order = topologicalOrder(graph, downstream).filter((id) => id !== sourceId);
  const transforms = new Map<string, CompiledTransform>();
  const destinationIds = new Set<string>();
  for (const id of order) {
    const node = graph.nodes.get(id)!;
    if (isDestination(node)) destinationIds.add(id);
    else if (!isSource(node)) transforms.set(id, compileTransform(node as TransformNode));
  }
  const parents = new Map(order.map((id) => [id, graph.parents.get(id)!.filter((p) => p === sourceId || downstream.has(p))]));
  return { sourceId, order, parents, transforms, destinationIds };
}

/** Where a flow keeps state: dedupe keys already passed this run, and records that reach a destination. */
export interface FlowSink {
  /** Ordinals (within `records`' page) of the records whose key no earlier record of the run passed. */
  passDedupe(nodeId: string, records: Array<{ key: string; ordinal: number }>): Promise<Set<number>>;
  deliver(destinationId: string, records: Row[]): Promise<void>;
}

export type FlowCounts = Record<string, { in: number; out: number }>;

/**
 * Runs one page of a source's records through the downstream nodes: transforms map them, dedupe
 * asks the sink which keys pass, destinations receive what arrives. Counts add up in `counts`;
 * `observe` sees every node's output (previews show it).
 */
export async function flowPage(plan: FlowPlan, records: Row[], sink: FlowSink, counts: FlowCounts, observe?: (nodeId: string, output: Row[]) => void): Promise<void> {
  const outputs = new Map<string, Row[]>([[plan.sourceId, records]]);
  for (const id of plan.order) {
    const input = plan.parents.get(id)!.flatMap((parent) => outputs.get(parent) ?? []);
    let output = input;
    const transform = plan.transforms.get(id);
    if (transform?.kind === 'map') {
      output = await transform.apply(input);
    } else if (transform?.kind === 'dedupe') {
      const firstInPage = new Map<string, number>();
      input.forEach((record, ordinal) => {
        const key = transform.keyOf(record);
        if (!firstInPage.has(key)) firstInPage.set(key, ordinal);
      });
      const passed = await sink.passDedupe(id, [...firstInPage].map(([key, ordinal]) => ({ key, ordinal })));
      output = input.filter((_, ordinal) => passed.has(ordinal));
    } else if (plan.destinationIds.has(id)) {
      await sink.deliver(id, input);
    }
    outputs.set(id, output);
    observe?.(id, output);
    const count = (counts[id] ??= { in: 0, out: 0 });
    count.in += input.length;
    count.out += output.length;
  }
}
