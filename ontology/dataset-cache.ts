// A least-recently-used map bounded by entries and by a weight (quads, for SPARQL datasets), so
// what the endpoint keeps between requests has a ceiling in memory however large each entry is.

export class WeightedLru<T> {
  private readonly entries = new Map<string, { value: T; weight: number }>();
  private weight = 0;

  constructor(
    private readonly maxEntries: number,
    private readonly maxWeight: number,
  ) {}

  get(key: string): T | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    // Most recently used last.
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry.value;
  }

  /** Keeps `value` unless it alone outweighs the cache; evicts the least recently used to make room. */
  set(key: string, value: T, weight: number): T {
    this.delete(key);
    if (weight > this.maxWeight) return value;
    this.entries.set(key, { value, weight });
    this.weight += weight;
    while (this.entries.size > this.maxEntries || this.weight > this.maxWeight) this.delete(this.entries.keys().next().value!);
    return value;
  }

  delete(key: string): void {
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
