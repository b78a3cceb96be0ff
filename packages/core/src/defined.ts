/** `o` without its undefined members: a record, packet or receipt never carries `key: undefined`. */
export function defined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

/** `cache`'s value for `key`, made once by `make` (cards, specs and schemas do not change). */
export function memo<K, V>(cache: { get(k: K): V | undefined; set(k: K, v: V): unknown }, key: K, make: (k: K) => V) {
  let v = cache.get(key);
  if (v === undefined) {
    v = make(key);
    cache.set(key, v);
  }
  return v;
}
