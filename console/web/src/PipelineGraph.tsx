import type { KeyboardEvent } from 'react';

// A pipeline document drawn as an SVG: each node a box in the column of its topological layer
// (the longest path from a source), each edge a curve from its parent's column to its child's. A
// draft may be unfinished, so nodes on a cycle and edges to unknown nodes are drawn as well: the
// first in a last column, the second left out (validation names them).

export interface GraphNode { id: string; type: string; [setting: string]: unknown }
export interface GraphEdge { from: string; to: string }
export interface GraphDocument { nodes: GraphNode[]; edges: GraphEdge[] }

const NODE_WIDTH = 150;
const NODE_HEIGHT = 46;
const COLUMN = 200;
const ROW = 70;
const MARGIN = 12;

/** Each node's layer: 0 for a node nothing feeds, else one more than its deepest parent's; nodes on a cycle after every other. */
function layersOf(document: GraphDocument): Map<string, number> {
  const ids = [...new Set(document.nodes.map((node) => node.id))];
  const parents = new Map(ids.map((id) => [id, [] as string[]]));
  for (const edge of document.edges) if (parents.has(edge.from) && parents.has(edge.to) && edge.from !== edge.to) parents.get(edge.to)!.push(edge.from);
  const layer = new Map<string, number>();
  // Kahn's order, layering each node once all its parents are placed.
  let placed = true;
  while (placed) {
    placed = false;
    for (const id of ids) {
      if (layer.has(id) || !parents.get(id)!.every((parent) => layer.has(parent))) continue;
      layer.set(id, Math.max(-1, ...parents.get(id)!.map((parent) => layer.get(parent)!)) + 1);
      placed = true;
    }
  }
  const last = Math.max(-1, ...layer.values()) + 1;
  for (const id of ids) if (!layer.has(id)) layer.set(id, last);
  return layer;
}

/** Where each node's box is drawn, and the drawing's size. */
function layout(document: GraphDocument) {
  const layers = layersOf(document);
  const rows = new Map<number, number>();
  const at = new Map<string, { x: number; y: number }>();
  for (const id of layers.keys()) {
    const column = layers.get(id)!;
    const row = rows.get(column) ?? 0;
    rows.set(column, row + 1);
    at.set(id, { x: MARGIN + column * COLUMN, y: MARGIN + row * ROW });
  }
  const columns = Math.max(1, ...[...layers.values()].map((layer) => layer + 1));
  const height = Math.max(1, ...rows.values());
  return { at, width: MARGIN * 2 + (columns - 1) * COLUMN + NODE_WIDTH, height: MARGIN * 2 + (height - 1) * ROW + NODE_HEIGHT };
}

export function PipelineGraph({ label, document, selected, faulty = new Set(), onSelect }: {
  label: string;
  document: GraphDocument;
  selected: string | undefined;
  /** Nodes that validation reported problems for. */
  faulty?: Set<string>;
  onSelect(nodeId: string): void;
}) {
  const { at, width, height } = layout(document);
  const keyed = (id: string) => (event: KeyboardEvent) => {
    if (event.key === 'Enter' || event.key === ' ') {
      event.preventDefault();
      onSelect(id);
    }
  };
  const drawn = new Set<string>();
  const arrow = `arrow-${label.replace(/[^A-Za-z0-9_-]/g, '-')}`;
  return (
    <svg role="group" aria-label={label} className="graph" width={width} height={height} viewBox={`0 0 ${width} ${height}`}>
      <defs>
        <marker id={arrow} viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
          <path d="M 0 0 L 10 5 L 0 10 z" />
        </marker>
      </defs>
      {document.edges.map((edge, index) => {
        const from = at.get(edge.from);
        const to = at.get(edge.to);
        if (!from || !to) return null;
        const x1 = from.x + NODE_WIDTH;
        const y1 = from.y + NODE_HEIGHT / 2;
        const x2 = to.x;
        const y2 = to.y + NODE_HEIGHT / 2;
        const bend = Math.max(30, Math.abs(x2 - x1) / 2);
        return (
          <path key={index} className="edge" role="img" aria-label={`${edge.from} → ${edge.to}`} markerEnd={`url(#${arrow})`}
            d={`M ${x1} ${y1} C ${x1 + bend} ${y1}, ${x2 - bend} ${y2}, ${x2} ${y2}`} />
        );
      })}
      {document.nodes.map((node) => {
        // A repeated id is drawn once (validation reports the repeat).
        if (drawn.has(node.id)) return null;
        drawn.add(node.id);
        const { x, y } = at.get(node.id)!;
        const classes = ['node', node.type, selected === node.id ? 'selected' : '', faulty.has(node.id) ? 'faulty' : ''].filter(Boolean).join(' ');
        return (
          <g key={node.id} className={classes} role="button" tabIndex={0} aria-pressed={selected === node.id}
            aria-label={`${node.id} (${String(node.type)})${faulty.has(node.id) ? ', has problems' : ''}`}
            onClick={() => onSelect(node.id)} onKeyDown={keyed(node.id)} transform={`translate(${x} ${y})`}>
            <rect width={NODE_WIDTH} height={NODE_HEIGHT} rx="6" />
            <text x="10" y="19" className="node-id">{node.id.length > 18 ? `${node.id.slice(0, 17)}…` : node.id}</text>
            <text x="10" y="36" className="node-type">{String(node.type)}</text>
          </g>
        );
      })}
    </svg>
  );
}
