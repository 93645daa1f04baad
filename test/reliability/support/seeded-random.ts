/** A small seeded generator (mulberry32), so a failing fault schedule can be replayed with WEFT_RELIABILITY_SEED. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The seed of this run: WEFT_RELIABILITY_SEED when set, else one from the clock (printed by the tests that use it). */
export function reliabilitySeed(): number {
  return Number(process.env.WEFT_RELIABILITY_SEED ?? Date.now() % 1_000_000);
}
