/** Logs every JSON.stringify/parse that retrysafe's own code makes (by its caller's frame), not the driver's or the
 * test runner's; returns the function that puts JSON back. */
export function logJsonCalls(log: string[]): () => void {
  const { stringify, parse } = JSON;
  const ours = () => /\/packages\/[^/]+\/(src|dist)\//.test(new Error().stack?.split('\n')[3] ?? '');
  const counted = (name: string, f: (...a: never[]) => unknown) =>
    function (this: unknown, ...a: unknown[]) {
      if (ours()) log.push(name);
      return Reflect.apply(f, this, a);
    };
  Object.assign(JSON, { stringify: counted('JSON.stringify', stringify), parse: counted('JSON.parse', parse) });
  return () => Object.assign(JSON, { stringify, parse });
}
