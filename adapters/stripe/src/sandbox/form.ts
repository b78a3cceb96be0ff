/**
 * Parses the form encoding stripe-node sends for v1 (`a=1&metadata[k]=v&list[0]=x`) into nested
 * objects; keys made only of digits become arrays. Values stay strings, as on the wire.
 */
export function parseForm(body: string): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  if (!body) return root;
  for (const pair of body.split('&')) {
    if (!pair) continue;
    const eq = pair.indexOf('=');
    const rawKey = decode(eq < 0 ? pair : pair.slice(0, eq));
    const value = decode(eq < 0 ? '' : pair.slice(eq + 1));
    const path = splitKey(rawKey);
    let cur: Record<string, unknown> = root;
    path.forEach((part, i) => {
      if (i === path.length - 1) cur[part] = value;
      else {
        const next = cur[part];
        if (typeof next !== 'object' || next === null) cur[part] = {};
        cur = cur[part] as Record<string, unknown>;
      }
    });
  }
  return arrays(root) as Record<string, unknown>;
}

function decode(s: string): string {
  return decodeURIComponent(s.replace(/\+/g, ' '));
}

function splitKey(key: string): string[] {
  const first = key.indexOf('[');
  if (first < 0) return [key];
  const parts = [key.slice(0, first)];
  for (const m of key.slice(first).matchAll(/\[([^\]]*)\]/g)) parts.push(m[1] ?? '');
  return parts;
}

function arrays(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  const obj = value as Record<string, unknown>;
  const keys = Object.keys(obj);
  for (const k of keys) obj[k] = arrays(obj[k]);
  if (keys.length > 0 && keys.every((k) => /^\d+$/.test(k))) {
    return keys.sort((a, b) => Number(a) - Number(b)).map((k) => obj[k]);
  }
  return obj;
}

/** The decoded pairs, sorted: what the sandbox compares to tell "same params" from "other params". */
export function paramsFingerprint(body: string): string {
  return body
    .split('&')
    .filter(Boolean)
    .map((p) => decode(p))
    .sort()
    .join('&');
}
