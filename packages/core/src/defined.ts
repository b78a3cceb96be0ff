/** `o` without its undefined members: a record, packet or receipt never carries `key: undefined`. */
export function defined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}
