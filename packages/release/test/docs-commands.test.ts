// Every `retrysafe …` command the docs show must exist as written: the (sub)command, and each option
// it uses, as the built CLI's own --help lists them. Catches `retrysafe resolve` for
// `retrysafe ledger resolve`, an option renamed in the CLI but not on the page, and the like.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { listWorkspacePackages, repoRoot } from '../scripts/workspace.mjs';

/** The built CLI's entry, the one its bin runs: called here, not once a process per --help. */
const cli = (await import(join(repoRoot, 'packages/cli/dist/cli.js'))) as {
  main(argv: string[], io: { out(t: string): void; err(t: string): void; color: boolean }): Promise<number>;
};

interface Help {
  commands: string[];
  options: string[];
}
const helps = new Map<string, Help>();

/** Subcommands and options of `retrysafe <path…>`, read from its --help. */
async function help(path: string[]): Promise<Help> {
  const key = path.join(' ');
  const known = helps.get(key);
  if (known) return known;
  let text = '';
  const code = await cli.main([...path, '--help'], { out: (t) => (text += t), err: (t) => (text += t), color: false });
  if (code !== 0) throw new Error(`retrysafe ${key} --help exited ${code}:\n${text}`);
  const section = (title: string) => {
    const m = new RegExp(`^${title}:\\n((?:  .*\\n?|\\s*\\n)*)`, 'm').exec(text);
    return (m?.[1] ?? '').split('\n').filter((l) => /^ {2}\S/.test(l));
  };
  const commands = section('Commands')
    .map((l) => l.trim().split(/\s+/)[0]!)
    .filter((c) => c !== 'help');
  const options = section('Options').flatMap((l) =>
    [...l.matchAll(/(?:^|[\s,])(--?[a-zA-Z][\w-]*)/g)].map((m) => m[1]!),
  );
  const parsed = { commands, options };
  helps.set(key, parsed);
  return parsed;
}

/** `retrysafe …` (or, with `bin` = 'retrysafe-mcp', `retrysafe-mcp …`) commands in a page: lines of its shell blocks, and its inline code spans. */
function commandsIn(markdown: string, bin = 'retrysafe'): string[] {
  const found: string[] = [];
  let fence: string | undefined;
  for (const line of markdown.split('\n')) {
    const open = /^\s*```(\w*)/.exec(line);
    if (open) {
      fence = fence === undefined ? open[1] : undefined;
      continue;
    }
    if (fence === undefined) found.push(...[...line.matchAll(/`([^`]+)`/g)].map((m) => m[1]!));
    // In a console block only `$ ` lines are commands; the rest is what they print.
    else if (fence === 'console') found.push(...(line.startsWith('$ ') ? [line.slice(2)] : []));
    else if (['sh', 'bash', 'shell', ''].includes(fence)) found.push(line);
  }
  return (
    found
      .map((l) => l.replace(/\s+#.*$/, '').trim())
      // In a checkout the docs run the CLI as its built bin.
      .map((l) => l.replace(/\bnode packages\/cli\/dist\/bin\.js(?=\s)/g, 'retrysafe'))
      // A command, maybe after `&&`, variables set for it, npx or pnpm; a pipe into another program ends it.
      .flatMap((l) => l.split(/\s*(?:&&|\|\||;|\|(?=\s+[a-z]))\s*/))
      .map((l) => new RegExp(`^(?:[A-Z_]+=\\S*\\s+)*(?:npx |pnpm )?(${bin}(?:\\s.*)?)$`).exec(l)?.[1])
      .filter((c) => bin !== 'retrysafe' || (c !== undefined && /^retrysafe\s/.test(c)))
      .filter((c): c is string => c !== undefined)
  );
}

/** What is wrong with one command, or undefined. `a|b` in a command's place names two commands. */
async function problemOf(command: string): Promise<string | undefined> {
  const words = command.split(/\s+/).slice(1);
  const path: string[] = [];
  for (const word of words) {
    if (!/^[a-z]/.test(word)) break;
    const { commands } = await help(path);
    if (commands.length === 0) break;
    const [first, ...others] = word.split(/[|/]/);
    for (const alt of others) {
      const problem = await problemOf(
        `retrysafe ${[...path, alt].join(' ')} ${words.slice(path.length + 1).join(' ')}`,
      );
      if (problem) return problem;
    }
    if (!commands.includes(first!))
      return `"${[...path, first].join(' ')}" is not a command (retrysafe ${path.join(' ')} has ${commands.join(', ')})`;
    path.push(first!);
  }
  const { options } = await help(path);
  for (const word of words) {
    const name = /^\[?(--?[a-zA-Z][\w-]*)/.exec(word)?.[1];
    if (name && !options.includes(name)) return `retrysafe ${path.join(' ')} has no option ${name}`;
  }
  return undefined;
}

const markdownUnder = (dir: string) =>
  readdirSync(join(repoRoot, dir), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.md') && !f.includes('node_modules') && !f.startsWith('decisions'))
    .map((f) => `${dir}/${f}`);
const readmes = ['packages', 'adapters'].flatMap((group) =>
  readdirSync(join(repoRoot, group)).map((d) => `${group}/${d}/README.md`),
);
const pages = ['README.md', ...markdownUnder('docs'), ...readmes].filter((p) => existsSync(join(repoRoot, p)));

/** The MCP server's own option tables and parser (what `retrysafe-mcp` runs). */
const mcpOptions = (await import(join(repoRoot, 'packages/mcp/dist/cli-options.js'))) as {
  parseOptions(argv: readonly string[], command: { options: object }): unknown;
  SERVE_COMMAND: { options: object };
  WRAP_COMMAND: { options: object };
  PROBE_COMMAND: { options: object };
};

/** What the real parser refuses in one `retrysafe-mcp …` command, or undefined. A value shown as a placeholder (`<…>`, `{…}`) is not parsed. */
function mcpProblemOf(command: string): string | undefined {
  const words = [...command.matchAll(/'([^']*)'|(\S+)/g)].map((m) => m[1] ?? m[2]!).slice(1);
  if (words[0] === '--help') return words.length === 1 ? undefined : `${command}: --help takes nothing else`;
  const which = words[0] === 'wrap' || words[0] === 'probe' ? words.shift() : 'serve';
  const table = { serve: mcpOptions.SERVE_COMMAND, wrap: mcpOptions.WRAP_COMMAND, probe: mcpOptions.PROBE_COMMAND }[
    which as 'serve'
  ];
  const end = words.indexOf('--');
  const options = table.options as Record<string, { value?: string }>;
  // A placeholder stands for a value of the type the option before it takes.
  const typed = { json: '{}', number: '0' } as Record<string, string>;
  const argv = (end >= 0 ? words.slice(0, end) : words).map((w, i, all) => {
    if (!/[<…]/.test(w)) return w;
    const option = all[i - 1]?.replace(/^--/, '').replace(/-([a-z])/g, (_, c: string) => c.toUpperCase()) ?? '';
    return typed[options[option]?.value ?? ''] ?? 'x';
  });
  try {
    mcpOptions.parseOptions(argv, table);
    return undefined;
  } catch (e) {
    return `${command}: ${(e as Error).message}`;
  }
}

describe('the retrysafe-mcp commands the docs show parse as written', () => {
  it('catches an option the MCP server does not have, and one that needs a value', () => {
    expect(mcpProblemOf('retrysafe-mcp wrap --config f.yaml --ledger x.db -- node s.mjs')).toMatch(
      /unknown option --ledger/,
    );
    expect(mcpProblemOf('retrysafe-mcp probe --tool')).toMatch(/--tool needs a value/);
    expect(
      mcpProblemOf(
        'retrysafe-mcp probe --tool t --args \'{"a":1}\' --count-tool l --count-path p --url http://127.0.0.1:1/mcp',
      ),
    ).toBeUndefined();
  });
  for (const page of pages) {
    const commands = commandsIn(readFileSync(join(repoRoot, page), 'utf8'), 'retrysafe-mcp');
    if (commands.length === 0) continue;
    it(page, () => {
      expect(commands.map(mcpProblemOf).filter((p) => p !== undefined)).toEqual([]);
    });
  }
});

/** pnpm's own commands; any other name is a script (or a bin of node_modules/.bin, which pnpm runs as well). */
const PNPM_COMMANDS = new Set([
  'add',
  'i',
  'install',
  'exec',
  'dlx',
  'run',
  'publish',
  'pack',
  'remove',
  'update',
  'list',
  'why',
]);
const scriptsOf = (dir: string) =>
  Object.keys((JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { scripts?: object }).scripts ?? {});

/** What is wrong with one `pnpm …` command, or undefined: a script it names that the root (or the --filter package) lacks. */
function pnpmProblemOf(command: string): string | undefined {
  const words = command.split(/\s+/).slice(1);
  const filter = words[0] === '--filter' ? words[1] : undefined;
  const name = words[filter ? 2 : 0];
  if (!name || !/^[a-z]/.test(name) || PNPM_COMMANDS.has(name)) return undefined;
  if (filter) {
    const pkg = listWorkspacePackages().find((p) => p.name === filter);
    if (!pkg) return `${command}: no workspace package ${filter}`;
    return scriptsOf(pkg.dir).includes(name) ? undefined : `${command}: ${filter} has no script ${name}`;
  }
  if (scriptsOf(repoRoot).includes(name) || existsSync(join(repoRoot, 'node_modules/.bin', name))) return undefined;
  return `${command}: the root package.json has no script ${name}`;
}

describe('the pnpm scripts the docs run exist', () => {
  it('catches a script that does not exist', () => {
    expect(pnpmProblemOf('pnpm cards')).toMatch(/no script cards/);
    expect(pnpmProblemOf('pnpm --filter @retrysafe/bench bench:nope')).toMatch(/has no script bench:nope/);
    expect(pnpmProblemOf('pnpm --filter @retrysafe/bench bench:dynamodb-cold-start')).toBeUndefined();
    expect(pnpmProblemOf('pnpm exec vitest run --project core')).toBeUndefined();
  });
  for (const page of pages) {
    const commands = commandsIn(readFileSync(join(repoRoot, page), 'utf8'), 'pnpm');
    if (commands.length === 0) continue;
    it(page, () => {
      expect(commands.map(pnpmProblemOf).filter((p) => p !== undefined)).toEqual([]);
    });
  }
});

describe('the retrysafe commands the docs show exist as written', () => {
  it('reads commands from the pages named in the issue', () => {
    for (const page of ['README.md', 'docs/getting-started.md', 'docs/runbook.md']) {
      expect(commandsIn(readFileSync(join(repoRoot, page), 'utf8')).length, page).toBeGreaterThan(0);
    }
  });
  it('reads the built bin of a checkout as the retrysafe command', () => {
    expect(commandsIn('```sh\nnode packages/cli/dist/bin.js drill --module m.js   # note\n```\n')).toEqual([
      'retrysafe drill --module m.js',
    ]);
  });
  it('catches a command that does not exist and an option that does not', async () => {
    expect(await problemOf('retrysafe resolve x --resume')).toMatch(/"resolve" is not a command/);
    expect(await problemOf('retrysafe ledger ls --ledger x.db')).toMatch(/has no option --ledger/);
    expect(await problemOf('retrysafe ledger resolve <id> --resend-with fixed.json --config c.json')).toBeUndefined();
  });
  for (const page of pages) {
    it(page, async () => {
      const problems: string[][] = [];
      for (const c of commandsIn(readFileSync(join(repoRoot, page), 'utf8'))) {
        const problem = await problemOf(c);
        if (problem !== undefined) problems.push([c, problem]);
      }
      expect(problems).toEqual([]);
    });
  }
});

describe('a shell block can be pasted into a shell', () => {
  // `$ cmd` pasted runs a command named `$`, and the output lines beside it run too: a block that shows
  // prompts and what they print is a `console` block (whose `$ ` lines the checks above read as commands).
  for (const page of pages)
    it(page, () => {
      const prompts: string[] = [];
      let fence: string | undefined;
      for (const [i, line] of readFileSync(join(repoRoot, page), 'utf8').split('\n').entries()) {
        const open = /^\s*```(\w*)/.exec(line);
        if (open) fence = fence === undefined ? open[1] : undefined;
        else if (['sh', 'bash', 'shell'].includes(fence ?? '') && /^\s*\$ /.test(line))
          prompts.push(`${page}:${i + 1}`);
      }
      expect(prompts).toEqual([]);
    });
});
