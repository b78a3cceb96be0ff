import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { createRequire } from 'node:module';
import { errorClass, jsonErrorReason } from '@retrysafe/contract/provider';
import type * as Yaml from 'yaml';
import { safeMessage } from './credentials.js';

/** A config or data file is missing, malformed, names an unknown adapter, or carries a credential inline. */
export const ConfigError = errorClass('ConfigError', 'RETRYSAFE_CONFIG', (path: string, message: string) => ({
  path,
  message: `${path ? path + ': ' : ''}${message}`,
}));
export type ConfigError = InstanceType<typeof ConfigError>;

/** Far above a real file's needs, low enough to refuse a hostile one cheaply. maxAliasCount counts YAML aliases by
 * the nodes they stand for (the `yaml` package's measure); maxDepth, objects and arrays nested inside each other. */
export const FILE_LIMITS = { maxBytes: 1024 * 1024, maxAliasCount: 100, maxDepth: 64 } as const;
const { maxBytes, maxAliasCount, maxDepth } = FILE_LIMITS;

/** A file is over one of the limits: nothing of it is used. */
export const FileLimitError = errorClass(
  'FileLimitError',
  'RETRYSAFE_FILE_LIMIT',
  (path: string, limit: keyof typeof FILE_LIMITS, max: number, what: string) => ({
    path,
    limit,
    max,
    message: `${path}: ${what}, over the limit ${limit} = ${max}`,
  }),
);
export type FileLimitError = InstanceType<typeof FileLimitError>;

/** A pipe or device is read only up to the limit. */
function readTextFile(path: string): string {
  const fd = openSync(path, 'r');
  try {
    const size = fstatSync(fd).size;
    if (size > maxBytes) throw new FileLimitError(path, 'maxBytes', maxBytes, `the file has ${size} bytes`);
    // One byte more than the limit, so a longer stream shows itself without being read to its end.
    const buf = Buffer.allocUnsafe(maxBytes + 1);
    let total = 0;
    for (let n = 1; n > 0 && total <= maxBytes; total += n) n = readSync(fd, buf, total, maxBytes + 1 - total, null);
    if (total > maxBytes)
      throw new FileLimitError(path, 'maxBytes', maxBytes, `the file has more than ${maxBytes} bytes`);
    return buf.toString('utf8', 0, total);
  } finally {
    closeSync(fd);
  }
}

/** Shared nodes (as YAML aliases make) are measured once; the walk never recurses deeper than `max`. */
function tooDeep(value: unknown, max: number): boolean {
  const heights = new Map<object, number>();
  const height = (v: unknown, level: number): number => {
    if (v === null || typeof v !== 'object') return 0;
    if (level >= max) return Infinity;
    const known = heights.get(v);
    if (known !== undefined) return known;
    let h = 1;
    for (const child of Object.values(v)) {
      h = Math.max(h, 1 + height(child, level + 1));
      if (h === Infinity) return h;
    }
    heights.set(v, h);
    return h;
  };
  return height(value, 0) > max;
}

/** The deepest nesting of YAML flow collections outside quotes and comments, checked before parsing: the parser
 * spends seconds on a deep file before its stack gives out. Errs only towards refusing. */
function flowDepth(text: string): number {
  let depth = 0;
  let deepest = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    const after = i === 0 || /[\s[{,:]/.test(text[i - 1]!);
    if (c === '#' && (i === 0 || /\s/.test(text[i - 1]!))) {
      const end = text.indexOf('\n', i);
      i = end === -1 ? text.length : end;
    } else if ((c === '"' || c === "'") && after) i = closingQuote(text, i);
    else if (c === '[' || c === '{') deepest = Math.max(deepest, ++depth);
    else if ((c === ']' || c === '}') && depth > 0) depth--;
  }
  return deepest;
}

/** Where the quoted scalar opened at `start` ends (`\"` escapes in double quotes, `''` in single). */
function closingQuote(text: string, start: number): number {
  const q = text[start]!;
  for (let i = start + 1; i < text.length; i++) {
    if (q === '"' && text[i] === '\\') i++;
    else if (text[i] === q) {
      if (q === "'" && text[i + 1] === "'") i++;
      else return i;
    }
  }
  return text.length;
}

/** The first key of `text` (valid JSON) that one object holds twice, compared as decoded; null when none. */
function repeatedKey(text: string): string | null {
  const objects: Array<Set<string> | null> = []; // null: an array
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '{') objects.push(new Set());
    else if (c === '[') objects.push(null);
    else if (c === '}' || c === ']') objects.pop();
    else if (c === '"') {
      let end = i + 1;
      while (text[end] !== '"') end += text[end] === '\\' ? 2 : 1;
      let after = end + 1;
      while (after < text.length && ' \t\n\r'.includes(text[after]!)) after++;
      const keys = objects.at(-1);
      if (keys && text[after] === ':') {
        const key = JSON.parse(text.slice(i, end + 1)) as string;
        if (keys.has(key)) return key;
        keys.add(key);
      }
      i = end;
    }
  }
  return null;
}

/** Parses JSON or YAML (unique keys) within the limits: FileLimitError over one, ConfigError if it won't parse. */
export function parseDataText(
  text: string,
  { path, yaml }: { readonly path: string; readonly yaml: boolean },
): unknown {
  // The parser's first line only, and without the JSON parser's quote of the text around the error: either would
  // print the file's own text, a secret cut off from its key among it.
  const invalid = (message: string) =>
    new ConfigError(
      path,
      `not valid ${yaml ? 'YAML' : 'JSON'}: ${safeMessage(yaml ? message.split('\n')[0]! : jsonErrorReason(message))}`,
    );
  const overDepth = (what = `it nests objects and arrays more than ${maxDepth} levels deep`) =>
    new FileLimitError(path, 'maxDepth', maxDepth, what);
  let value: unknown;
  try {
    if (yaml) {
      if (flowDepth(text) > maxDepth) throw overDepth();
      // Required on the first YAML file read (the package is CommonJS): a program that reads none starts without it.
      const { parseDocument } = createRequire(import.meta.url)('yaml') as typeof Yaml;
      const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
      const error = doc.errors[0];
      if (error && /call stack/i.test(error.message)) throw overDepth('it nests too deep to parse');
      if (error) throw invalid(error.message);
      value = doc.toJS({ maxAliasCount });
    } else {
      value = JSON.parse(text);
      const twice = repeatedKey(text);
      // JSON.parse keeps the last of two; YAML refuses them: which one the operator meant is not ours to guess.
      if (twice !== null) throw new ConfigError(path, `the key ${JSON.stringify(twice)} appears twice in one object`);
    }
  } catch (e) {
    if (ConfigError.isInstance(e) || FileLimitError.isInstance(e)) throw e;
    if (e instanceof ReferenceError && /alias count/i.test(e.message))
      throw new FileLimitError(path, 'maxAliasCount', maxAliasCount, 'its aliases expand too far');
    // A stack exhausted by nesting is over any depth limit.
    if (e instanceof RangeError) throw overDepth('it nests too deep to parse');
    throw invalid((e as Error).message);
  }
  if (tooDeep(value, maxDepth)) throw overDepth();
  return value;
}

/** By default `.yaml`/`.yml` are YAML, everything else JSON. A file that cannot be read or parsed is a ConfigError
 * naming `path`. */
export function readDataFile(path: string, yaml = /\.ya?ml$/i.test(path)): unknown {
  let text: string;
  try {
    text = readTextFile(path);
  } catch (e) {
    if (FileLimitError.isInstance(e)) throw e;
    const code = (e as NodeJS.ErrnoException).code;
    throw new ConfigError(
      path,
      `cannot read: ${code === 'ENOENT' ? 'no such file' : safeMessage((e as Error).message)}`,
    );
  }
  return parseDataText(text, { path, yaml });
}
