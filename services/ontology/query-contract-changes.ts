import type { BreakingChange, QueryDefinition } from '../../db/models';

type SchemaNode = { type?: string | string[]; properties?: Record<string, SchemaNode>; required?: string[]; enum?: unknown[]; maxLength?: number; maximum?: number; minimum?: number; minLength?: number };
const types = (schema: SchemaNode | undefined) => new Set(schema?.type === undefined ? ['any'] : Array.isArray(schema.type) ? schema.type : [schema.type]);

/**
 * Breaking changes from one release's contracts to the next: an output field removed or its type
 * narrowed (consumers read it), an input newly required or its type narrowed (consumers send it).
 */
export function contractChanges(before: QueryDefinition, after: QueryDefinition): BreakingChange[] {
  const changes: BreakingChange[] = [];
  const narrowed = (a: SchemaNode | undefined, b: SchemaNode | undefined) => {
    const ta = types(a);
    const tb = types(b);
    if (tb.has('any')) return false;
    if (ta.has('any')) return true;
    if ([...ta].some((t) => !tb.has(t) && !(t === 'integer' && tb.has('number')))) return true;
    if (b?.enum && (!a?.enum || a.enum.some((v) => !b.enum!.some((w) => JSON.stringify(w) === JSON.stringify(v))))) return true;
    return false;
  };
  const outBefore = (before.outputSchema.properties ?? {}) as Record<string, SchemaNode>;
  const outAfter = (after.outputSchema.properties ?? {}) as Record<string, SchemaNode>;
  for (const [name, schema] of Object.entries(outBefore)) {
    if (!(name in outAfter)) changes.push({ kind: 'output_field_removed', path: `/outputSchema/properties/${name}`, message: `output field ${name} is removed` });
    else if (JSON.stringify([...types(schema)].sort()) !== JSON.stringify([...types(outAfter[name])].sort())) {
      changes.push({ kind: 'output_type_changed', path: `/outputSchema/properties/${name}/type`, message: `output field ${name} changes type from ${[...types(schema)].join('|')} to ${[...types(outAfter[name])].join('|')}` });
    }
  }
  const inBefore = (before.inputSchema.properties ?? {}) as Record<string, SchemaNode>;
  const inAfter = (after.inputSchema.properties ?? {}) as Record<string, SchemaNode>;
  const requiredBefore = new Set((before.inputSchema.required as string[] | undefined) ?? []);
  for (const name of (after.inputSchema.required as string[] | undefined) ?? []) {
    if (!requiredBefore.has(name)) changes.push({ kind: 'input_field_required', path: `/inputSchema/required`, message: `input field ${name} becomes required` });
  }
  for (const [name, schema] of Object.entries(inAfter)) {
    if (name in inBefore && narrowed(inBefore[name], schema)) changes.push({ kind: 'type_narrowed', path: `/inputSchema/properties/${name}`, message: `input field ${name} accepts less than before` });
  }
  return changes;
}
