import { describe, expect, it } from 'vitest';
import { canonicalJson, fingerprint, sha256Hex } from './canonical.js';

describe('canonicalJson', () => {
  it('writes every string and every key as JSON.stringify of itself', () => {
    // Every code unit 0..0x7f alone and inside text, plus quotes, backslashes, controls, U+2028/9, lone
    // surrogates and combining marks.
    const samples = [
      '',
      'order-1',
      'a b',
      'say "hi"',
      'back\\slash',
      'tab\tnew\nline',
      '\u007f',
      '\u2028\u2029',
      '\ud800',
      'e\u0301',
      '\u00e9',
      '~!#$%&()*+,-./:;<=>?@[]^_`{|}',
    ];
    for (let c = 0; c < 0x80; c++) samples.push(String.fromCharCode(c), `x${String.fromCharCode(c)}y`);
    for (const t of samples) {
      expect(canonicalJson(t)).toBe(JSON.stringify(t));
      expect(canonicalJson({ [t]: 1 })).toBe(`{${JSON.stringify(t)}:1}`);
    }
  });
  it('sorts keys, drops whitespace and undefined members, folds -0', () => {
    expect(canonicalJson({ b: 1, a: [true, null, -0], c: undefined, d: { z: 'x', y: 1.5 } })).toBe(
      '{"a":[true,null,0],"b":1,"d":{"y":1.5,"z":"x"}}',
    );
  });
  it('keeps a string composed and decomposed apart: only a card declares a folding', () => {
    expect(canonicalJson('e\u0301')).not.toBe(canonicalJson('\u00e9'));
  });
  it('writes dates as ISO strings', () => {
    expect(canonicalJson({ at: new Date(Date.UTC(2026, 7, 5)) })).toBe('{"at":"2026-08-05T00:00:00.000Z"}');
  });
  it('fingerprints equal values equally', () => {
    expect(fingerprint({ a: 1, b: 2 })).toBe(fingerprint({ b: 2, a: 1 }));
    expect(fingerprint({ a: 1 })).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(() => canonicalJson([1, undefined])).toThrow(/undefined array item/);
    expect(() => canonicalJson({ n: 10n })).toThrow(/bigint/);
  });
});

// A reference writer, written apart, for byte equality.
function reference(value: unknown, path = '', seen = new Set<object>()): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      if (!Number.isFinite(value)) throw new Error(`${path}: number`);
      return Object.is(value, -0) ? '0' : JSON.stringify(value);
    case 'object':
      break;
    default:
      throw new Error(`${path}: ${typeof value}`);
  }
  const obj = value as object;
  if (obj instanceof Date) return JSON.stringify(obj.toISOString());
  if (seen.has(obj)) throw new Error(`${path}: cycle`);
  seen.add(obj);
  try {
    if (Array.isArray(obj)) return '[' + obj.map((item, i) => reference(item, `${path}[${i}]`, seen)).join(',') + ']';
    const keys = Object.keys(obj)
      .filter((k) => (obj as Record<string, unknown>)[k] !== undefined)
      .sort();
    return (
      '{' +
      keys
        .map((k) => JSON.stringify(k) + ':' + reference((obj as Record<string, unknown>)[k], `${path}.${k}`, seen))
        .join(',') +
      '}'
    );
  } finally {
    seen.delete(obj);
  }
}

describe('canonicalJson against the reference writer', () => {
  // A small deterministic generator (no dependency): values of every kind the writer accepts.
  let state = 12345;
  const rnd = (n: number) => ((state = (state * 1103515245 + 12345) % 2147483648), state % n);
  const strings = [
    '',
    'a',
    'b',
    'B',
    '_',
    'aa',
    'a-b',
    '10',
    '2',
    '9',
    '__proto__',
    'é',
    'e\u0301',
    '\u00e9',
    'say "x"',
    'x\\y',
    'tab\t',
    '\u2028',
    '\ud800',
    '😀',
    'Z',
    'zz',
    'orders.create',
    'sha256:' + 'f'.repeat(64),
  ];
  const numbers = [
    0,
    -0,
    1,
    -1,
    1.5,
    1e21,
    1e-7,
    123456789012345680000,
    Number.MAX_SAFE_INTEGER,
    Number.MIN_VALUE,
    -1e-300,
    0.1 + 0.2,
  ];
  const gen = (depth: number): unknown => {
    const k = rnd(depth > 3 ? 5 : 9);
    if (k === 0) return null;
    if (k === 1) return rnd(2) === 0;
    if (k === 2) return numbers[rnd(numbers.length)];
    if (k === 3 || k === 4) return strings[rnd(strings.length)];
    if (k === 5) return new Date(rnd(2) === 0 ? 0 : 1_780_000_000_123);
    if (k === 6) return Array.from({ length: rnd(4) }, () => gen(depth + 1));
    const o: Record<string, unknown> = rnd(5) === 0 ? Object.create(null) : {};
    const n = k === 8 && rnd(3) === 0 ? 30 + rnd(10) : rnd(7);
    for (let i = 0; i < n; i++) {
      const key = n > 20 ? `k${rnd(100)}` : strings[rnd(strings.length)]!;
      const v = rnd(6) === 0 ? undefined : gen(depth + 1);
      if (key === '__proto__')
        Object.defineProperty(o, key, { value: v, enumerable: true, writable: true, configurable: true });
      else o[key] = v;
    }
    return o;
  };

  it('writes the same bytes as the reference for plain data of every kind', () => {
    for (let i = 0; i < 3000; i++) {
      const v = gen(0);
      expect(canonicalJson(v)).toBe(reference(v));
    }
  });

  it('remembers key orders by first key without mixing up objects that share one (other keys, other order, undefined members)', () => {
    const base = { m: 1, a: 2, z: 3, b: 4, y: 5, c: 6, x: 7 };
    const variants: Record<string, unknown>[] = [
      base,
      { m: 1, a: 2, z: 3, b: 4, y: 5, c: 6, w: 7 },
      { m: 1, z: 3, a: 2, b: 4, y: 5, c: 6, x: 7 },
      { m: 1, a: 2, z: 3, b: 4, y: 5, c: 6, x: 7, d: 8 },
      { m: 1, a: 2, z: undefined, b: 4, y: 5, c: 6, x: 7 },
      { m: { m: 1, a: 2, z: 3, b: 4, y: 5, c: 6 }, a: 2, z: 3, b: 4, y: 5, c: 6, x: 7 },
    ];
    for (let round = 0; round < 3; round++) for (const v of variants) expect(canonicalJson(v)).toBe(reference(v));
  });

  it('holes, cycles, deep values and every refusal: the same bytes, errors naming the path', () => {
    // A hole is not JSON: refused with its path, never written as `[1,,3]`.
    // eslint-disable-next-line no-sparse-arrays
    expect(() => canonicalJson({ list: [1, , 3] })).toThrow(/list\[1\]: undefined array item/);
    const cyclic: Record<string, unknown> = { a: { b: {} } };
    (cyclic.a as { b: Record<string, unknown> }).b.c = cyclic;
    expect(() => canonicalJson(cyclic)).toThrow(/a\.b\.c: cycle/);
    let deep: unknown = 'leaf';
    for (let i = 0; i < 500; i++) deep = { d: [deep] };
    expect(canonicalJson(deep)).toBe(reference(deep));
    const shared = { s: 1 };
    expect(canonicalJson({ x: shared, y: [shared] })).toBe('{"x":{"s":1},"y":[{"s":1}]}');
    expect(() => canonicalJson({ a: [{ b: Number.NaN }] })).toThrow(/a\[0\]\.b: number NaN/);
    expect(() => canonicalJson({ a: { f: () => 1 } })).toThrow(/a\.f: a function/);
    expect(() => canonicalJson({ m: new Map() })).toThrow(/m: Map objects/);
    expect(() => canonicalJson({ d: new Date(Number.NaN) })).toThrow(/d: invalid Date/);
    expect(() => canonicalJson({ list: [1, undefined] })).toThrow(/list\[1\]: undefined array item/);
  });

  it('sees own keys only, also when Object.prototype has gained an enumerable key', () => {
    const v = { b: { c: 1 }, a: [{ d: 'x' }] };
    (Object.prototype as Record<string, unknown>).polluted = 'yes';
    try {
      expect(canonicalJson(v)).toBe('{"a":[{"d":"x"}],"b":{"c":1}}');
    } finally {
      delete (Object.prototype as Record<string, unknown>).polluted;
    }
  });
});

describe('sha256Hex', () => {
  it('is the SHA-256 of the UTF-8 text, lowercase hex (lone surrogates as U+FFFD, as Hash#update writes them)', async () => {
    const { createHash } = await import('node:crypto');
    const { sha256Hex } = await import('./canonical.js');
    for (const t of ['', 'abc', 'é', '😀', '\ud800', 'x\udc00y', 'a'.repeat(100_000)])
      expect(sha256Hex(t)).toBe(createHash('sha256').update(t, 'utf8').digest('hex'));
    expect(sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });
});

describe('fingerprint', () => {
  it('is sha256: and the hex digest of the canonical JSON', () => {
    expect(fingerprint({ b: [1, 'x'], a: 1 })).toBe('sha256:' + sha256Hex('{"a":1,"b":[1,"x"]}'));
  });
});
