// The docs check: every code block in README.md and docs/ compiles (or says it is not TypeScript),
// every card source cites a public URL or a file that ships with the project, and nothing points at
// a design document that does not ship.
import { execFileSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { builtinModules, createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseConfig, parseDataText } from '@retrysafe/config';
import { parseFenceConfig } from '@retrysafe/mcp';
import { describe, expect, it } from 'vitest';
import { cardsOf, loadAdapters } from '../src/registry.js';

const cliDir = dirname(dirname(fileURLToPath(import.meta.url)));
const repo = dirname(dirname(cliDir));
const tsc = join(dirname(createRequire(import.meta.url).resolve('typescript/package.json')), 'bin', 'tsc');

function markdownFiles(dir: string): string[] {
  return readdirSync(join(repo, dir), { withFileTypes: true }).flatMap((d) =>
    d.isDirectory() ? markdownFiles(join(dir, d.name)) : d.name.endsWith('.md') ? [join(dir, d.name)] : [],
  );
}
/** Each package's and adapter's README: what a user reads on the registry. */
const READMES = ['packages', 'adapters']
  .flatMap((group) => readdirSync(join(repo, group)).map((d) => join(group, d, 'README.md')))
  .filter((f) => existsSync(join(repo, f)));
const DOCS = ['README.md', ...markdownFiles('docs'), ...READMES];

/** The folder of every workspace package, and of every package installed beside one, by name. */
function installedPackages(): Map<string, string> {
  const found = new Map<string, string>();
  const groups = ['packages', 'adapters'].flatMap((g) => readdirSync(join(repo, g)).map((d) => join(repo, g, d)));
  for (const dir of groups.filter((d) => existsSync(join(d, 'package.json')))) {
    found.set((JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name: string }).name, dir);
  }
  for (const dir of [cliDir, repo, ...groups]) {
    const modules = join(dir, 'node_modules');
    if (!existsSync(modules)) continue;
    for (const d of readdirSync(modules).filter((n) => !n.startsWith('.'))) {
      const names = d.startsWith('@') ? readdirSync(join(modules, d)).map((n) => `${d}/${n}`) : [d];
      for (const n of names) if (!found.has(n)) found.set(n, join(modules, n));
    }
  }
  return found;
}

/** The packages a block imports (`@scope/name` or `name`; node: built-ins and relative paths left out). */
function importedPackages(code: string): string[] {
  const specifiers = [...code.matchAll(/^\s*(?:import|export)\b[^;'"]*?from\s*['"]([^'"]+)['"]/gm)].map((m) => m[1]!);
  return [
    ...new Set(
      specifiers
        .filter((s) => !s.startsWith('.') && !s.startsWith('/') && !s.startsWith('node:'))
        .map((s) =>
          s
            .split('/')
            .slice(0, s.startsWith('@') ? 2 : 1)
            .join('/'),
        ),
    ),
  ];
}

/** A block's import statements that name a retrysafe package (what a `nocheck` or JavaScript block still promises). */
function retrysafeImports(code: string): string {
  return [...code.matchAll(/^\s*import\b[^;'"]*?from\s*['"](@retrysafe\/[^'"]+)['"];?/gm)]
    .map((m) => m[0].trim())
    .join('\n');
}

interface Block {
  readonly file: string;
  readonly line: number;
  readonly info: string;
  readonly code: string;
}

/** Fenced blocks of a Markdown file, with their info string (` ```ts nocheck ` → `ts nocheck`). */
export function codeBlocks(file: string, text: string): Block[] {
  const blocks: Block[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(`{3,})(.*)$/.exec(lines[i]!);
    if (!open) continue;
    const end = lines.findIndex((l, j) => j > i && l.trim() === open[2]);
    if (end < 0) throw new Error(`${file}:${i + 1}: unclosed code block`);
    blocks.push({ file, line: i + 1, info: open[3]!.trim(), code: lines.slice(i + 1, end).join('\n') });
    i = end;
  }
  return blocks;
}

const TS = new Set(['ts', 'typescript', 'tsx', 'mts']);
const JS = new Set(['js', 'javascript', 'mjs']);
const SHELL = new Set(['sh', 'bash', 'shell', 'console']);
/** An install command; what follows it names the packages. */
const INSTALL = /\b(?:npm (?:i|install)|pnpm (?:add|i)|yarn add)\s(.*)/;
const lang = (b: Block) => b.info.split(/\s+/)[0] ?? '';
const flags = (b: Block) => new Set(b.info.split(/\s+/).slice(1));

function typecheck(project: string): { ok: boolean; output: string } {
  try {
    return {
      ok: true,
      // One checker: each extra checker thread checks the same declarations again.
      output: execFileSync(process.execPath, [tsc, '-p', project, '--checkers', '1'], {
        cwd: cliDir,
        encoding: 'utf8',
      }),
    };
  } catch (e) {
    const err = e as { stdout?: string; stderr?: string };
    return { ok: false, output: `${err.stdout ?? ''}${err.stderr ?? ''}` };
  }
}

/**
 * Writes each TypeScript block (a `continued` block joins the one before it in the same file) into a
 * folder inside packages/cli, whose dependencies are every published retrysafe package, and runs tsc
 * on them; the result maps tsc's errors back to the Markdown line.
 */
function compileBlocks(blocks: readonly Block[]): { errors: string[]; files: number } {
  const dir = mkdtempSync(join(cliDir, '.docs-check-'));
  try {
    const units: { name: string; parts: Block[] }[] = [];
    for (const b of blocks) {
      const prev = units.at(-1);
      if (flags(b).has('continued') && prev && prev.parts[0]!.file === b.file) prev.parts.push(b);
      else units.push({ name: `block${units.length}.ts`, parts: [b] });
    }
    const origin = new Map<string, { block: Block; offset: number }[]>();
    for (const u of units) {
      let offset = 0;
      const ranges: { block: Block; offset: number }[] = [];
      const text = u.parts
        .map((p) => {
          ranges.push({ block: p, offset });
          offset += p.code.split('\n').length;
          return p.code;
        })
        .join('\n');
      origin.set(u.name, ranges);
      writeFileSync(join(dir, u.name), `${text}\nexport {};\n`);
    }
    // What packages/cli does not depend on itself (ai-sdk, dbos, a provider SDK) is linked in beside the blocks.
    const installed = installedPackages();
    for (const name of new Set(blocks.flatMap((b) => importedPackages(b.code)))) {
      if (existsSync(join(cliDir, 'node_modules', name)) || !installed.has(name)) continue;
      mkdirSync(dirname(join(dir, 'node_modules', name)), { recursive: true });
      symlinkSync(installed.get(name)!, join(dir, 'node_modules', name));
    }
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ type: 'module', private: true }));
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        extends: '../../../tsconfig.base.json',
        compilerOptions: {
          noEmit: true,
          composite: false,
          declaration: false,
          declarationMap: false,
          sourceMap: false,
          noUncheckedIndexedAccess: false,
          rootDir: '.',
        },
        files: units.map((u) => u.name),
      }),
    );
    const result = typecheck(join(dir, 'tsconfig.json'));
    const errors = result.output
      .split('\n')
      .filter((l) => l.includes('error TS'))
      .map((l) => {
        const m = /(block\d+\.ts)\((\d+),(\d+)\)/.exec(l);
        if (!m) return l;
        const line = Number(m[2]) - 1;
        const r = [...origin.get(m[1]!)!].reverse().find((x) => x.offset <= line)!;
        return `${r.block.file}:${r.block.line + 1 + line - r.offset}: ${l.slice(l.indexOf('error TS'))}`;
      });
    if (!result.ok && errors.length === 0) errors.push(result.output);
    return { errors, files: units.length };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const allBlocks = DOCS.flatMap((f) => codeBlocks(f, readFileSync(join(repo, f), 'utf8')));

describe('code blocks in README.md and docs/', () => {
  it('every block names its language (text, sh, console, json, yaml … for what is not TypeScript)', () => {
    const unnamed = allBlocks.filter((b) => lang(b) === '').map((b) => `${b.file}:${b.line}`);
    expect(unnamed).toEqual([]);
  });

  it('every TypeScript block compiles against the packages (except a block marked `nocheck`)', () => {
    const ts = allBlocks.filter((b) => TS.has(lang(b)) && !flags(b).has('nocheck'));
    expect(ts.length).toBeGreaterThanOrEqual(3);
    expect(ts.some((b) => READMES.includes(b.file))).toBe(true);
    const { errors } = compileBlocks(ts);
    expect(errors).toEqual([]);
  });

  it('every name a `nocheck` or JavaScript block imports from a retrysafe package is exported there', () => {
    const rest = allBlocks
      .filter((b) => !b.file.startsWith('docs/decisions/'))
      .filter((b) => (TS.has(lang(b)) && flags(b).has('nocheck')) || JS.has(lang(b)))
      .map((b) => ({ ...b, info: 'ts', code: retrysafeImports(b.code) }))
      .filter((b) => b.code !== '');
    expect(rest.length).toBeGreaterThanOrEqual(5);
    const { errors } = compileBlocks(rest);
    expect(errors).toEqual([]);
  });

  it("a `nocheck` block that is one only for the reader's own files compiles with them typed `any`", () => {
    // What it passes to a retrysafe function (an option's name, a fault's shape) is still checked.
    const own = allBlocks
      .filter((b) => TS.has(lang(b)) && flags(b).has('nocheck') && /^import .* from '\.\.?\//m.test(b.code))
      .filter((b) => importedPackages(b.code).every((name) => name.startsWith('@retrysafe/')))
      .map((b) => ({
        ...b,
        code: b.code.replace(/^import \{ ([^}]+) \} from '\.[^']*';$/gm, (_, names: string) =>
          names
            .split(',')
            .map((n) => `declare const ${n.trim()}: any;`)
            .join(' '),
        ),
      }));
    expect(own.length).toBeGreaterThanOrEqual(3);
    const { errors } = compileBlocks(own);
    expect(errors).toEqual([]);
  });

  it("a package's README installs every package its examples import (pnpm refuses what is not installed directly)", () => {
    const missing: string[] = [];
    // Each package's README stands alone on the registry; a guide that says what to install is held to it too.
    const installs = (b: Block) => SHELL.has(lang(b)) && INSTALL.test(b.code);
    const pages = DOCS.filter(
      (f) => READMES.includes(f) || (f.startsWith('docs/') && allBlocks.some((b) => b.file === f && installs(b))),
    );
    expect(pages).toContain('docs/getting-started.md');
    for (const file of pages) {
      const blocks = allBlocks.filter((b) => b.file === file);
      const installed = new Set(
        blocks
          .filter((b) => SHELL.has(lang(b)))
          .flatMap((b) => b.code.split('\n'))
          .flatMap((l) => INSTALL.exec(l)?.[1]?.split(/\s+/) ?? [])
          .filter((w) => /^@?[a-z]/.test(w))
          .map((w) => w.replace(/(?<=.)@[^/]*$/, '')),
      );
      const imported = blocks
        .filter((b) => TS.has(lang(b)) || JS.has(lang(b)))
        .flatMap((b) => importedPackages(b.code).map((name) => ({ name, line: b.line })));
      for (const { name, line } of imported)
        if (!installed.has(name) && !builtinModules.includes(name)) missing.push(`${file}:${line}: ${name}`);
    }
    expect(missing).toEqual([]);
  });

  it('every config or fence file a page shows is one its loader accepts (as written, schema and credentials rules)', () => {
    const files = allBlocks
      .filter((b) => !b.file.startsWith('docs/decisions/') && (lang(b) === 'yaml' || lang(b) === 'json'))
      .map((b) => ({ b, raw: parseDataText(b.code, { path: `${b.file}:${b.line}`, yaml: lang(b) === 'yaml' }) }))
      .filter(({ raw }) => typeof raw === 'object' && raw !== null && ('adapters' in raw || 'tools' in raw));
    expect(files.length).toBeGreaterThanOrEqual(5);
    const problems: string[] = [];
    for (const { b, raw } of files) {
      try {
        if ('tools' in (raw as object)) parseFenceConfig(raw);
        else parseConfig(raw, join(repo, 'packages/config/examples/http-api'), `${b.file}:${b.line}`);
      } catch (e) {
        problems.push(`${b.file}:${b.line}: ${(e as Error).message}`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('a page that runs `npx <command>` installs the package that has that bin', () => {
    // Without it npx does not fail: it asks to fetch whatever package the registry has under that name.
    const bins = new Map<string, string>();
    for (const [name, dir] of installedPackages()) {
      const { bin } = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { bin?: object };
      if (name.startsWith('@retrysafe/')) for (const command of Object.keys(bin ?? {})) bins.set(command, name);
    }
    expect(bins.get('retrysafe-mcp')).toBe('@retrysafe/mcp');
    const missing: string[] = [];
    for (const file of DOCS) {
      const blocks = allBlocks.filter((b) => b.file === file && SHELL.has(lang(b)));
      const installed = blocks
        .flatMap((b) => b.code.split('\n'))
        .flatMap((l) => INSTALL.exec(l)?.[1]?.split(/\s+/) ?? []);
      const text = readFileSync(join(repo, file), 'utf8');
      for (const [, command] of text.matchAll(/\bnpx ([\w@/.-]+)/g)) {
        const pkg = bins.get(command!) ?? command!;
        if (!installed.includes(pkg)) missing.push(`${file}: npx ${command} needs ${pkg}`);
      }
    }
    expect([...new Set(missing)]).toEqual([]);
  });

  it('a shell block that needs a clone of this repository (`pnpm build`, `node packages/…`, `source .ci/…`) says so just before it', () => {
    // Pasted into a user's project, these fail: the page must say where they run.
    const needsClone = /\bnode (?:packages|adapters)\/|^\s*pnpm (?!add\b|dlx\b)|\bsource \.ci\//m;
    const unsaid = DOCS.filter((f) => !f.startsWith('docs/decisions/')).flatMap((file) => {
      const text = readFileSync(join(repo, file), 'utf8');
      const lines = text.split('\n');
      return allBlocks
        .filter((b) => b.file === file && SHELL.has(lang(b)) && needsClone.test(b.code))
        .filter(
          (b) =>
            !/\b(?:clone|checkout) of this repository\b/.test(lines.slice(Math.max(0, b.line - 12), b.line).join(' ')),
        )
        .map((b) => `${file}:${b.line}`);
    });
    expect(unsaid).toEqual([]);
  });

  it('the card example of docs/writing-an-adapter.md is a card defineCard accepts when it runs', async () => {
    const block = allBlocks.find(
      (b) => b.file.endsWith('writing-an-adapter.md') && b.code.includes('export const ordersCreateCard = defineCard('),
    );
    expect(block).toBeDefined();
    const dir = mkdtempSync(join(cliDir, '.docs-check-'));
    try {
      writeFileSync(join(dir, 'card.ts'), block!.code);
      const mod = (await import(join(dir, 'card.ts'))) as {
        ordersCreateCard: { operation: string; unverified: unknown[] };
      };
      expect(mod.ordersCreateCard.operation).toBe('acme.orders.create');
      expect(Object.isFrozen(mod.ordersCreateCard)).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the check itself fails on a block that does not compile', () => {
    const bad: Block = {
      file: 'x.md',
      line: 1,
      info: 'ts',
      code: "import { createRunner } from '@retrysafe/core';\nconst n: number = createRunner;",
    };
    const { errors } = compileBlocks([bad]);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/^x\.md:3: error TS2322/);
  });
});

/** Every `source` string of a card: the facts' and the unverified entries'. */
function sourcesOf(value: unknown, path = ''): { path: string; source: string }[] {
  if (typeof value !== 'object' || value === null) return [];
  const own =
    'source' in value && typeof (value as { source: unknown }).source === 'string'
      ? [{ path, source: (value as { source: string }).source }]
      : [];
  return [...own, ...Object.entries(value).flatMap(([k, v]) => sourcesOf(v, path ? `${path}.${k}` : k))];
}

const URL_RE = /https?:\/\/[^\s;,)]+/g;
/** A path into this repository: `docs/…`, `adapters/…`, `packages/…` with an extension, optional #anchor. */
const FILE_RE = /(?<![\w/.:-])((?:docs|adapters|packages)\/[\w./-]+\.\w+)(#[\w-]+)?/g;

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens. */
function anchorsOf(markdown: string): Set<string> {
  return new Set(
    markdown
      .split('\n')
      .filter((l) => /^#{1,6} /.test(l))
      .map((l) =>
        l
          .replace(/^#+ /, '')
          .trim()
          .toLowerCase()
          .replace(/[^\p{L}\p{N} _-]/gu, '')
          .replace(/ /g, '-'),
      ),
  );
}

/** What is wrong with one source string (empty when it cites a URL or a shipped file, correctly). */
export function sourceProblems(source: string): string[] {
  const problems: string[] = [];
  const urls = source.match(URL_RE) ?? [];
  const files = [...source.matchAll(FILE_RE)];
  if (/providers\.md|shared\//.test(source.replace(URL_RE, '')))
    problems.push('cites a file outside the project (shared/…)');
  if (urls.length === 0 && files.length === 0) problems.push('cites neither a URL nor a file of the project');
  for (const [, file, anchor] of files) {
    const abs = join(repo, file!);
    if (!existsSync(abs)) {
      problems.push(`cites ${file}, which does not exist`);
      continue;
    }
    if (!file!.endsWith('.md')) continue;
    const text = readFileSync(abs, 'utf8');
    if (anchor && !anchorsOf(text).has(anchor.slice(1)))
      problems.push(`cites ${file}${anchor}, but no heading there has that anchor`);
    // `docs/evidence/x.md: "a quotation"`: the page must say it (an ellipsis joins separate parts).
    const quoted = new RegExp(`${file!.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?:#[\\w-]+)?: "([^"]+)"`).exec(
      source,
    )?.[1];
    const flat = text.replace(/\s+/g, ' ').toLowerCase();
    for (const part of quoted?.split('…') ?? []) {
      if (part.trim() && !flat.includes(part.trim().toLowerCase()))
        problems.push(`quotes "${part.trim()}", which ${file} does not say`);
    }
  }
  return problems;
}

describe('card sources', () => {
  it('every source of every card cites a public URL or an existing file of the project', async () => {
    const entries = await loadAdapters();
    const problems: string[] = [];
    let count = 0;
    for (const entry of entries) {
      for (const c of await cardsOf(entry)) {
        for (const { path, source } of sourcesOf(c.card)) {
          count++;
          for (const p of sourceProblems(source))
            problems.push(`${c.card.operation} ${path}: ${p} — "${source.slice(0, 120)}"`);
        }
      }
    }
    expect(count).toBeGreaterThan(200);
    expect(problems).toEqual([]);
  });

  it('the check refuses what it should', () => {
    expect(sourceProblems('shared/providers.md (Stripe): "Scope (account/endpoint): unknown"')).toContain(
      'cites a file outside the project (shared/…)',
    );
    expect(sourceProblems('not documented')).toEqual(['cites neither a URL nor a file of the project']);
    expect(sourceProblems('docs/evidence/nowhere.md')).toEqual([
      'cites docs/evidence/nowhere.md, which does not exist',
    ]);
    expect(sourceProblems('docs/evidence/stripe.md#no-such-heading')[0]).toMatch(/no heading there/);
    expect(sourceProblems('docs/evidence/stripe.md: "keys live forever"')[0]).toMatch(/does not say/);
    expect(sourceProblems('docs/evidence/stripe.md#retention-and-scope: "Scope (account/endpoint): unknown"')).toEqual(
      [],
    );
    expect(sourceProblems('https://docs.stripe.com/api/idempotent_requests')).toEqual([]);
  });
});

describe('references', () => {
  const shipped = execFileSync('git', ['ls-files', '*.md', '*.ts', '*.mjs'], { cwd: repo, encoding: 'utf8' })
    .split('\n')
    .filter(Boolean);

  it('nothing that ships refers to DESIGN.md or shared/providers.md (neither ships with the project)', () => {
    const self = relative(repo, fileURLToPath(import.meta.url));
    const hits = shipped
      .filter((f) => f !== self && !f.includes('.test.') && !f.startsWith('.changeset/'))
      .flatMap((f) =>
        readFileSync(join(repo, f), 'utf8')
          .split('\n')
          .map((l, i) => ({ f, i, l })),
      )
      .filter(({ l }) => /DESIGN\.md|shared\/providers\.md/.test(l))
      .map(({ f, i }) => `${f}:${i + 1}`);
    expect(hits).toEqual([]);
  });

  it('every file of the repository a page names in code (`docs/…`, `packages/…`, `adapters/…`) exists', () => {
    const missing: string[] = [];
    for (const f of DOCS.filter((d) => !d.startsWith('docs/decisions/'))) {
      const text = readFileSync(join(repo, f), 'utf8');
      for (const m of text.matchAll(/(?<![\w./-])((?:docs|packages|adapters|scripts)\/[\w./-]+\.[a-z]{1,5})\b/g)) {
        // `acme` is the adapter the guides write; a path under it is the reader's own.
        if (/\bacme\b/.test(m[1]!) || existsSync(join(repo, m[1]!)) || existsSync(join(repo, dirname(f), m[1]!)))
          continue;
        missing.push(`${f}: ${m[1]}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it('every relative Markdown link in README.md and docs/ resolves to a file, and its #anchor to a heading there', () => {
    const broken: string[] = [];
    for (const f of DOCS) {
      const text = readFileSync(join(repo, f), 'utf8');
      for (const [link, path, anchor] of text.matchAll(/\]\((?!https?:|mailto:)([^)\s#]*)(?:#([^)\s]*))?\)/g)) {
        const target = path ? join(repo, dirname(f), path) : join(repo, f);
        if (!existsSync(target)) broken.push(`${f}: ${path}`);
        else if (anchor && target.endsWith('.md') && !anchorsOf(readFileSync(target, 'utf8')).has(anchor))
          broken.push(`${f}: ${link}`);
      }
    }
    expect(broken).toEqual([]);
  });
});

describe('the root README', () => {
  it('has an install line for users that names only published packages, and keeps the two commands', () => {
    const readme = readFileSync(join(repo, 'README.md'), 'utf8');
    const install = codeBlocks('README.md', readme).find((b) => /^npm install /.test(b.code));
    expect(install).toBeDefined();
    const names = install!.code.split(/\s+/).filter((w) => w.startsWith('@retrysafe/'));
    expect(names.length).toBeGreaterThan(0);
    const published = new Map<string, boolean>();
    for (const group of ['packages', 'adapters']) {
      for (const d of readdirSync(join(repo, group))) {
        const pkg = join(repo, group, d, 'package.json');
        if (existsSync(pkg)) {
          const j = JSON.parse(readFileSync(pkg, 'utf8')) as { name: string; private?: boolean };
          published.set(j.name, !j.private);
        }
      }
    }
    for (const n of names) expect(published.get(n), n).toBe(true);
    expect(readme).toContain('## Two commands');
    expect(readme.indexOf('## Install')).toBeLessThan(readme.indexOf('## Two commands'));
  });
});
