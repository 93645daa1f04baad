import type { Producer } from './solution';

/**
 * Evaluates `inner` as if the masked slots were unbound, then joins its solutions with the
 * masked values: compatible when equal or bound on one side only. This is how a pattern is given
 * the bindings of the row it joins with (a bind join) when some of the row's variables are ones
 * the pattern binds only sometimes: substituting those would change what the pattern means (an
 * OPTIONAL that no longer finds its match, a FILTER that sees a value it should not).
 */
export function withMask(inner: Producer, maskedSlots: readonly number[]): Producer {
  const count = maskedSlots.length;
  return (row, sink) => {
    const saved = new Array<number>(count);
    // Which masked slots the current solution took from the row (reset before the next solution).
    const restored = new Array<boolean>(count).fill(false);
    for (let i = 0; i < count; i++) {
      saved[i] = row[maskedSlots[i]];
      row[maskedSlots[i]] = 0;
    }
    const unrestore = (solution: number[]) => {
      for (let i = 0; i < count; i++) {
        if (restored[i]) {
          solution[maskedSlots[i]] = 0;
          restored[i] = false;
        }
      }
    };
    const ok = inner(row, (solution) => {
      for (let i = 0; i < count; i++) {
        const outer = saved[i];
        if (outer === 0) continue;
        const slot = maskedSlots[i];
        const value = solution[slot];
        if (value === 0) {
          solution[slot] = outer;
          restored[i] = true;
        } else if (value !== outer) {
          unrestore(solution);
          return true;
        }
      }
      const more = sink(solution);
      unrestore(solution);
      return more;
    });
    for (let i = 0; i < count; i++) row[maskedSlots[i]] = saved[i];
    return ok;
  };
}
