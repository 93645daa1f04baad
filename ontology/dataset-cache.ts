// A least-recently-used map bounded by entries and by a weight (quads, for SPARQL datasets), so
// what the endpoint keeps between requests has a ceiling in memory however large each entry is.

export class WeightedLru<T, K = string> {
  private readonly entries = new Map<K, { value: T; weight: number; placedAt: number }>();
  private weight = 0;
  /** Entries placed last in the order so far (inserted or moved there). */
  private placed = 0;

  constructor(
    private readonly maxEntries: number,
    private readonly maxWeight: number,
  ) {}

  get(key: K): T | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    // Most recently used last. An entry placed there within the last maxEntries / 2 placements is
    // left where it is: fewer than half the bound stand behind it, so no eviction by count reaches
    // it before it would be moved, and a hot entry costs one lookup instead of a delete and a set.
    if (this.placed - entry.placedAt > this.maxEntries / 2) {
      this.entries.delete(key);
      entry.placedAt = this.placed++;
      this.entries.set(key, entry);
    }
    return entry.value;
  }

  /** Whether `key` is kept, without counting as a use. */
  has(key: K): boolean {
    return this.entries.has(key);
  }

  /** Keeps `value` unless it alone outweighs the cache; evicts the least recently used to make room. */
  set(key: K, value: T, weight: number): T {
    this.delete(key);
    if (weight > this.maxWeight) return value;
    this.entries.set(key, { value, weight, placedAt: this.placed++ });
    this.weight += weight;
    while (this.entries.size > this.maxEntries || this.weight > this.maxWeight) this.delete(this.entries.keys().next().value!);
    return value;
  }

  delete(key: K): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    this.weight -= entry.weight;
  }

  clear(): void {
    this.entries.clear();
    this.weight = 0;
  }

  get size(): number {
    return this.entries.size;
  }
}
