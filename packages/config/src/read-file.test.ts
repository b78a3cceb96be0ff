// Issue 40 item 6: a file retrysafe reads has limits, and going over one is a typed error naming it.
import { spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FILE_LIMITS, FileLimitError, loadConfig, parseDataText, readDataFile } from './index.js';

const dir = mkdtempSync(join(tmpdir(), 'retrysafe-config-limits-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A YAML config of `mb` megabytes: a valid start, then comment lines (written in chunks, never held whole). */
function bigYaml(mb: number): string {
  const file = join(dir, `big-${mb}mb.yaml`);
  const fd = openSync(file, 'w');
  writeSync(fd, 'ledger: ./retrysafe.db\nadapters:\n  sandbox: { baseUrl: "http://127.0.0.1:9" }\n');
  const line = `# ${'x'.repeat(1021)}\n`;
  const chunk = line.repeat(1024);
  for (let i = 0; i < mb; i++) writeSync(fd, chunk);
  closeSync(fd);
  return file;
}

function limitOf(fn: () => unknown): FileLimitError {
  try {
    fn();
  } catch (e) {
    if (FileLimitError.isInstance(e)) return e;
    throw e;
  }
  throw new Error('no FileLimitError');
}

describe('file limits', () => {
  it('a 50 MB YAML config is refused by its size, with the limit named', () => {
    const e = limitOf(() => loadConfig(bigYaml(50)));
    expect(e).toMatchObject({ code: 'RETRYSAFE_FILE_LIMIT', limit: 'maxBytes', max: FILE_LIMITS.maxBytes });
    expect(e.message).toMatch(/over the limit maxBytes = 1048576/);
  });

  it('…in a process whose heap could not hold the file: the error comes, not an out-of-memory crash', () => {
    const file = bigYaml(50);
    const script = `import { loadConfig } from ${JSON.stringify(new URL('../dist/index.js', import.meta.url).href)};
try { loadConfig(${JSON.stringify(file)}); console.log('loaded'); } catch (e) { console.log(e.code + ' ' + e.limit); }`;
    const r = spawnSync(process.execPath, ['--max-old-space-size=32', '--input-type=module', '-e', script], {
      encoding: 'utf8',
    });
    expect(r.stderr).not.toMatch(/heap out of memory/);
    expect(r.stdout.trim()).toBe('RETRYSAFE_FILE_LIMIT maxBytes');
    expect(r.status).toBe(0);
  });

  it('a file just under the size limit is read', () => {
    const file = join(dir, 'ok.json');
    writeFileSync(file, JSON.stringify({ pad: 'x'.repeat(FILE_LIMITS.maxBytes - 100) }));
    expect(readDataFile(file)).toMatchObject({ pad: expect.any(String) });
  });

  it('YAML aliases that expand too far (a "billion laughs" file) are refused as maxAliasCount', () => {
    const levels = ['a: &a [x, x, x, x, x, x, x, x, x, x]'];
    for (let i = 1; i < 9; i++)
      levels.push(
        `${String.fromCharCode(97 + i)}: &${String.fromCharCode(97 + i)} [${Array(10)
          .fill(`*${String.fromCharCode(96 + i)}`)
          .join(', ')}]`,
      );
    const e = limitOf(() => parseDataText(levels.join('\n'), { path: 'laughs.yaml', yaml: true }));
    expect(e).toMatchObject({ limit: 'maxAliasCount', max: FILE_LIMITS.maxAliasCount, path: 'laughs.yaml' });
  });

  it.each([
    ['YAML', true, (n: number) => `${'['.repeat(n)}1${']'.repeat(n)}`],
    ['JSON', false, (n: number) => `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`],
  ] as const)('%s nested deeper than maxDepth is refused; at maxDepth it is read', (_kind, yaml, nest) => {
    expect(() => parseDataText(nest(FILE_LIMITS.maxDepth), { path: 'f', yaml })).not.toThrow();
    expect(limitOf(() => parseDataText(nest(FILE_LIMITS.maxDepth + 1), { path: 'f', yaml }))).toMatchObject({
      limit: 'maxDepth',
    });
    // deep enough to exhaust a recursive parser's stack: still the typed error
    expect(limitOf(() => parseDataText(nest(200_000), { path: 'f', yaml }))).toMatchObject({ limit: 'maxDepth' });
  });

  it('brackets inside quoted YAML scalars and comments are text, not nesting', () => {
    const deep = '['.repeat(FILE_LIMITS.maxDepth + 10);
    expect(
      parseDataText(`a: "${deep}"\nb: '${deep}'\n# ${deep}\nc: [1, [2]]\n`, { path: 'f.yaml', yaml: true }),
    ).toEqual({ a: deep, b: deep, c: [1, [2]] });
  });

  it('a config whose card file is over a limit names that file', () => {
    const card = join(dir, 'deep-card.json');
    writeFileSync(card, `${'['.repeat(100)}${']'.repeat(100)}`);
    const config = join(dir, 'with-card.json');
    const op = {
      description: 'd',
      method: 'POST',
      path: '/x',
      key: { travels: 'none' },
      card: 'deep-card.json',
      lookup: { method: 'none' },
      errors: { rules: [] },
    };
    writeFileSync(
      config,
      JSON.stringify({
        adapters: {
          acme: { type: 'http', baseUrl: 'http://127.0.0.1:9', timeoutMs: 1000, operations: { 'x.create': op } },
        },
      }),
    );
    return import('./index.js').then(({ httpDeclarationOf }) => {
      const c = loadConfig(config);
      const e = limitOf(() => httpDeclarationOf('acme', c.adapters.acme as never, c.baseDir, {}));
      expect(e).toMatchObject({ limit: 'maxDepth', path: card });
    });
  });
});

describe('a file that does not parse', () => {
  it("is named with the parser's first line only: a YAML code frame would quote lines of the file", () => {
    const file = join(dir, 'dup.yaml');
    writeFileSync(file, 'token: one\nother: x\ntoken: two\n');
    let message = '';
    try {
      readDataFile(file);
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toMatch(/dup\.yaml: not valid YAML: .*unique/);
    expect(message).not.toContain('\n');
  });

  it("JSON too: the parser's quote of the text around the error (V8's '\"…\" is not valid JSON') is left out, so no value of the file is printed", () => {
    for (const text of [
      '{"password": hunter2hunter2}',
      'password=hunter2hunter2',
      '{"ok": 1} {"token": "hunter2hunter2"}',
    ]) {
      let message = '';
      try {
        parseDataText(text, { path: 'bad.json', yaml: false });
      } catch (e) {
        message = (e as Error).message;
      }
      expect(message).toMatch(/^bad\.json: not valid JSON: /);
      expect(message).not.toMatch(/hunter|assword|"ok"/);
    }
  });

  it('a JSON file with one key twice in an object is refused as YAML refuses it, never read as its last value', () => {
    const twice = '{ "ledger": "./a.db", "adapters": { "sandbox": {} }, "ledger": "./b.db" }';
    expect(() => parseDataText(twice, { path: 'retrysafe.json', yaml: false })).toThrow(
      /retrysafe\.json: the key "ledger" appears twice in one object/,
    );
    const nested = '{ "adapters": { "sandbox": { "baseUrl": "x", "b\\u0061seUrl": "y" } }, "t": "\\"baseUrl\\": 1" }';
    expect(() => parseDataText(nested, { path: 'n.json', yaml: false })).toThrow(/"baseUrl" appears twice/);
    // The same key in two objects, or as a value, is no repeat.
    const fine = '[{ "a": 1 }, { "a": 2, "b": { "a": "a" } }, "a"]';
    expect(parseDataText(fine, { path: 'f.json', yaml: false })).toEqual(JSON.parse(fine));
  });
});
