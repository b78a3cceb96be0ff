// The walkthroughs most users follow after the README, run as pasted in a fresh folder: each command of the
// page's shell blocks, with the files the page says to save, must do what the page shows. The install line is
// honoured, not run: the packages it names (and only those) are put into the folder's node_modules as their
// tarballs hold them (see installPacked), with their bins, so `npx` finds them offline and a package the page
// forgets to install, a dependency a package forgets to declare or a file it does not ship is missing there as it
// would be for a user. (The README's first example is installed from packed tarballs by
// readme-first-example.test.ts; the CLI's dependency tree cannot be installed offline from the pnpm store.)
import { spawn } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, expect, it } from 'vitest';
import { listWorkspacePackages, repoRoot, runtimeDependencyNames } from '../scripts/workspace.mjs';
import { blockAfter } from './markdown.js';
import { shippedFiles } from './packed.js';

const temps: string[] = [];
const groups: number[] = [];
const closers: (() => void)[] = [];
const killGroup = (pid: number) => {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {} // already gone
};
afterAll(() => {
  for (const close of closers) close();
  for (const pid of groups) killGroup(pid);
  for (const d of temps) rmSync(d, { recursive: true, force: true });
});

/** The file name the page gives the block after `<!-- name -->`: "Save this as `x`" in the text just before it. */
function savedAs(markdown: string, name: string): string {
  const before = markdown.slice(0, markdown.indexOf(`<!-- ${name} -->`));
  const all = [...before.matchAll(/[Ss]ave (?:this|it) as `([\w./-]+)`/g)];
  const last = all.at(-1);
  if (!last || before.length - last.index > 800)
    throw new Error(`the page does not say what to save <!-- ${name} --> as`);
  return last[1]!;
}

/** The packages an install block names (`npm i`, `npm install` or `pnpm add`; a `# …` note is not a package). */
function installed(block: string): string[] {
  return block
    .split('\n')
    .flatMap((l) => /\b(?:npm (?:i|install)|pnpm add)\s+([^#]*)/.exec(l)?.[1]?.trim().split(/\s+/) ?? [])
    .filter((w) => /^@?[a-z]/.test(w))
    .map((w) => w.replace(/(?<=.)@[^/]*$/, '')); // the package, not the version it pins
}

/** An install block's other commands (`cp`, `npm pkg set`…): what is left once the installing is done. */
const setupOf = (install: string) =>
  install.split('\n').filter((l) => l.trim() !== '' && !/\b(?:npm (?:init|i|install)|pnpm add)\b/.test(l));

/** Where Node finds a third-party `name` from some workspace package (pnpm links each package's dependencies beside it). */
function resolvedFrom(dirs: string[], name: string): string {
  for (const dir of dirs)
    for (let d = dir; d !== dirname(d); d = dirname(d)) {
      try {
        return realpathSync(join(d, 'node_modules', name));
      } catch {}
    }
  throw new Error(`${name} is not installed where a workspace package can see it`);
}

const workspace = new Map(listWorkspacePackages().map((p) => [p.name, p.dir]));
const workspaceDir = (name: string) => workspace.get(name)!;

/**
 * Installs workspace package `name` into `dir` as npm would from its tarball: only the files `pnpm pack` ships,
 * its third-party dependencies beside it, its @retrysafe ones at the top, installed the same way. Linked from the
 * workspace instead, it would reach its devDependencies, the root's and files that do not ship.
 */
function installPacked(dir: string, name: string, done: Set<string>) {
  if (done.has(name)) return;
  done.add(name);
  const from = workspaceDir(name);
  const to = join(dir, 'node_modules', name);
  // pnpm adds the root's LICENSE to each package; the rest is the package's own. A hard link costs less than a
  // copy and, unlike a symbolic one, keeps Node resolving from here.
  for (const file of shippedFiles(from)) {
    if (file === 'LICENSE') continue;
    mkdirSync(dirname(join(to, file)), { recursive: true });
    try {
      linkSync(join(from, file), join(to, file));
    } catch {
      copyFileSync(join(from, file), join(to, file)); // another file system
    }
  }
  const manifest = JSON.parse(readFileSync(join(from, 'package.json'), 'utf8')) as {
    peerDependenciesMeta?: Record<string, { optional?: boolean }>;
  };
  for (const dep of runtimeDependencyNames(manifest).filter((d) => !manifest.peerDependenciesMeta?.[d]?.optional)) {
    if (workspaceDir(dep)) installPacked(dir, dep, done);
    else link(resolvedFrom([from], dep), join(to, 'node_modules', dep));
  }
}

function link(target: string, path: string) {
  mkdirSync(dirname(path), { recursive: true });
  symlinkSync(target, path);
}

/** A new, empty folder where `packages` are "installed": ours as packed, others linked from the workspace's store, bins included. */
function freshProject(packages: string[]): { dir: string; env: NodeJS.ProcessEnv } {
  const dir = mkdtempSync(join(tmpdir(), 'rs-walkthrough-'));
  temps.push(dir);
  // As `npm init -y` writes it (npm 10.9 and later): a `.js` or `.ts` file saved here is CommonJS.
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'walkthrough', version: '1.0.0', type: 'commonjs' }));
  mkdirSync(join(dir, 'node_modules/.bin'), { recursive: true });
  const done = new Set<string>();
  for (const name of packages) {
    if (workspaceDir(name)) installPacked(dir, name, done);
    else link(resolvedFrom([...workspace.values()], name), join(dir, 'node_modules', name));
    const from = join(dir, 'node_modules', name);
    const bin = (JSON.parse(readFileSync(join(from, 'package.json'), 'utf8')) as { bin?: Record<string, string> }).bin;
    for (const [command, file] of Object.entries(bin ?? {})) {
      const shim = join(dir, 'node_modules/.bin', command);
      writeFileSync(shim, `#!/bin/sh\nexec "${process.execPath}" "${join(from, file)}" "$@"\n`);
      chmodSync(shim, 0o755);
    }
  }
  const env = {
    PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ''}`,
    HOME: dir,
    NO_COLOR: '1',
    // npx must find the bins installed here; offline, a bin that is not installed fails instead of being fetched.
    npm_config_offline: 'true',
    npm_config_cache: join(dir, '.npm-cache'),
    npm_config_update_notifier: 'false',
  };
  return { dir, env };
}

/** A shell block's commands (continuation lines joined), each with the `# …` line the page shows after it. */
function commandsOf(block: string): { command: string; shows?: string; exit?: number }[] {
  const out: { command: string; shows?: string; exit?: number }[] = [];
  for (const line of block.replace(/\\\n\s*/g, '').split('\n')) {
    const comment = /^#\s*(.*?)\s*(?:\(exit (\d+)\))?$/.exec(line);
    if (comment && out.length > 0) {
      out.at(-1)!.shows = comment[1];
      if (comment[2] !== undefined) out.at(-1)!.exit = Number(comment[2]);
    } else if (line.trim() !== '') out.push({ command: line.trim() });
  }
  return out;
}

/** Runs one command line in its own process group: on a timeout the whole group (what it started too) is killed. */
function sh(command: string, cwd: string, env: NodeJS.ProcessEnv, timeoutMs = 30_000) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn('bash', ['-c', command], { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    groups.push(child.pid!);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += String(d)));
    child.stderr.on('data', (d) => (stderr += String(d)));
    const timer = setTimeout(() => {
      stderr += `\n(still running after ${timeoutMs} ms: killed)`;
      killGroup(child.pid!);
    }, timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

it('docs/fence-an-mcp-server.md runs as pasted in a fresh folder and prints what it shows', async () => {
  const page = readFileSync(join(repoRoot, 'docs/fence-an-mcp-server.md'), 'utf8');
  const { dir, env } = freshProject(installed(blockAfter(page, 'fence-install')));
  for (const name of ['fence-orders-server', 'fence-file'])
    writeFileSync(join(dir, savedAs(page, name)), blockAfter(page, name));

  // 1 and 4: the probe, against the bare server (duplicates) and through the fence (at most once).
  for (const name of ['fence-probe-unfenced', 'fence-probe-fenced']) {
    const [probe, ...more] = commandsOf(blockAfter(page, name));
    expect(more, name).toEqual([]);
    const r = await sh(probe!.command, dir, env);
    expect(r.stdout.split('\n')[0], `${name}: ${r.stderr}`).toBe(probe!.shows);
    expect(r.code, `${name}: ${r.stderr}`).toBe(probe!.exit);
  }

  // 3: the wrap says what it fences, serves the host on stdio, and ends when the host closes its stdin.
  const [wrap] = commandsOf(blockAfter(page, 'fence-wrap'));
  const fence = spawn('bash', ['-c', `exec ${wrap!.command}`], { cwd: dir, env, detached: true });
  groups.push(fence.pid!);
  let stderr = '';
  fence.stderr.on('data', (d) => (stderr += String(d)));
  await expect.poll(() => stderr).toContain(wrap!.shows!);
  const exited = new Promise((resolve) => fence.on('exit', resolve));
  fence.stdin.end();
  await expect(Promise.race([exited, sleep(15_000).then(() => 'still running')])).resolves.not.toBe('still running');
}, 90_000);

it('docs/declaring-an-http-api.md runs as pasted in a fresh folder: the shipped example, drilled', async () => {
  const page = readFileSync(join(repoRoot, 'docs/declaring-an-http-api.md'), 'utf8');
  const install = blockAfter(page, 'http-install');
  const { dir, env } = freshProject(installed(install));
  // What the page copies out of node_modules is there only if the package ships it (freshProject installs as packed).
  // The drill as the page shows it (only its first scenario: packages/cli/test/fixes.test.ts runs the whole
  // drill of this example and checks the page's table against it).
  const drill = blockAfter(page, 'http-drill').split('\n')[0]!.replace(/^\$ /, '');
  const r = await sh([...setupOf(install), `${drill} --scenario lost-response`].join('\n'), dir, env, 60_000);
  expect(r.code, r.stderr).toBe(0);
  for (const operation of ['orders.create', 'exports.create', 'documents.update', 'instances.run'])
    expect(r.stdout).toMatch(new RegExp(`acme--[\\w-]+ +${operation.replace('.', '\\.')} +1 +0 +0 +pass`));
}, 90_000);

it('docs/ledger-dynamodb.md: the handler, tried on loopback as the page shows (dynalite, the Stripe sandbox)', async () => {
  const page = readFileSync(join(repoRoot, 'docs/ledger-dynamodb.md'), 'utf8');
  const install = blockAfter(page, 'dynamodb-install');
  const { dir, env } = freshProject(installed(install));
  for (const name of ['dynamodb-handler', 'dynamodb-try'])
    writeFileSync(join(dir, savedAs(page, name)), blockAfter(page, name));
  const [run, ...more] = commandsOf(blockAfter(page, 'dynamodb-try-run'));
  expect(more).toEqual([]);
  const r = await sh([...setupOf(install), run!.command].join('\n'), dir, env);
  expect(r.code, r.stderr).toBe(0);
  expect(r.stdout).toBe(blockAfter(page, 'dynamodb-try-output'));
}, 60_000);

it('docs/writing-an-adapter.md: its card and adapter, put together, survive a lost answer: done, one order, its id recorded', async () => {
  const page = readFileSync(join(repoRoot, 'docs/writing-an-adapter.md'), 'utf8');
  // What the page's layout gives the package (its dependencies, the testkit aside), in the files it names.
  const { dir, env } = freshProject(['@retrysafe/contract', '@retrysafe/core', '@retrysafe/sandbox-kit']);
  mkdirSync(join(dir, 'src'));
  writeFileSync(join(dir, 'src/acme-cards.ts'), blockAfter(page, 'acme-card'));
  const adapter = blockAfter(page, 'acme-adapter');
  const stub = /^declare const ordersCreateCard\b.*$/m;
  expect(adapter).toMatch(stub);
  writeFileSync(
    join(dir, 'src/acme-adapter.ts'),
    adapter.replace(stub, "import { ordersCreateCard } from './acme-cards.ts';"),
  );
  // The page leaves the provider's sandbox to the reader (step 6): here a few lines of one, from the sandbox kit,
  // that keeps the card's promises (a repeated key gets the stored order) and drops the first answer.
  writeFileSync(
    join(dir, 'try.mjs'),
    `import { createMemoryLedger, createRunner } from '@retrysafe/core';
import { ANSWERED, startLoopbackServer } from '@retrysafe/sandbox-kit';
import { createAcmeAdapter } from './src/acme-adapter.ts';
const orders = new Map();
const server = await startLoopbackServer({
  handle: (req) => {
    const found = [...orders.values()].filter((o) => o.reference === req.query.get('reference'));
    if (req.method === 'GET') return { status: 200, body: found };
    const key = req.headers['idempotency-key'];
    if (orders.has(key)) return { status: 200, body: orders.get(key) };
    orders.set(key, { id: \`ord_\${orders.size + 1}\`, ...JSON.parse(req.rawBody) });
    req.raw.req.socket.destroy();
    return ANSWERED;
  },
});
const acme = createAcmeAdapter({ apiKey: 'test', baseUrl: server.url, timeoutMs: 5000 });
const params = { customer: 'cus_1', orderRef: 'A-17', quantity: 1 };
const r = await createRunner({ ledger: createMemoryLedger() }).run(acme, 'orders.create', { params });
console.log(r.status, r.status === 'done' ? r.providerRef : r.packet.explanation, 'orders:', orders.size);
await server.close();
`,
  );
  const r = await sh('npm pkg set type=module && node --experimental-strip-types try.mjs', dir, env);
  expect(r.stdout.trim(), r.stderr).toBe('done ord_1 orders: 1');
}, 30_000);

it('docs/retention.md: its SQLite commands, as pasted, on a ledger with a 40-day-old operation', async () => {
  const page = readFileSync(join(repoRoot, 'docs/retention.md'), 'utf8');
  const { dir, env } = freshProject([
    '@retrysafe/core',
    '@retrysafe/ledger-sqlite',
    '@retrysafe/sandbox',
    '@retrysafe/cli',
  ]);
  // The ledger is the test's: one operation done 40 days ago (the runner on a clock set back).
  writeFileSync(
    join(dir, 'old.mjs'),
    `import { createRunner, createVirtualClock } from '@retrysafe/core';
import { createSqliteLedger } from '@retrysafe/ledger-sqlite';
import { createSandboxAdapter, createSandboxProvider, REPLAYING_BEHAVIOUR } from '@retrysafe/sandbox';
const ledger = createSqliteLedger({ path: 'retrysafe.db' });
const runner = createRunner({ ledger, clock: createVirtualClock(Date.now() - 40 * 86_400_000) });
const sandbox = createSandboxAdapter({ provider: createSandboxProvider(REPLAYING_BEHAVIOUR) });
await runner.run(sandbox, 'records.create', { params: { ref: 'order-17' } });
await ledger.close();
`,
  );
  const commands = commandsOf(blockAfter(page, 'retention-commands')).filter((c) => !c.command.includes('postgres://'));
  const r = await sh(
    ['set -e', 'export PATH="$PWD/node_modules/.bin:$PATH"', 'node old.mjs', ...commands.map((c) => c.command)].join(
      '\n',
    ),
    dir,
    env,
  );
  expect(r.code, r.stderr).toBe(0);
  expect(r.stdout, r.stdout).toMatch(/^would prune 1 operation [\s\S]*^pruned 1 operation [\s\S]*^1 chain intact$/m);
}, 30_000);

it('docs/engines.md: the DBOS example, saved and run as the page says (a database of its own), prints the record and ends', async () => {
  const page = readFileSync(join(repoRoot, 'docs/engines.md'), 'utf8');
  const how = /Save the block below as\s+`([\w.-]+)`[\s\S]*?run\s+`(node [^`]+)`[\s\S]*?prints[^`]*`([^`]+)`/.exec(
    page,
  );
  expect(how, 'the page says what to save the DBOS block as, how to run it and what it prints').not.toBeNull();
  const [, file, command, printed] = how!;
  const block = blockAfter(page, 'engines-dbos');
  // It ends once it is done: the ledger's pool closed too (an open one holds Node for pg's idle timeout).
  expect(block).toMatch(/^await rs\.close\(\);$/m);
  const project = freshProject(installed(blockAfter(page, 'engines-dbos-install')));
  writeFileSync(join(project.dir, file!), block);
  const r = await sh(command!, project.dir, await ownDatabase(page, project.env), 60_000);
  expect(r.code, r.stderr).toBe(0);
  expect(r.stdout.trim().split('\n').at(-1)).toBe(printed);
}, 90_000);

// A package README's first example, where it needs no account and no network: installed, saved and run as
// the README says, it prints what the README shows (the others call a live provider: docs.test.ts compiles them).
for (const readme of [
  'packages/core/README.md',
  'packages/contract/README.md',
  'packages/config/README.md',
  'packages/ledger-sqlite/README.md',
  'packages/sandbox-kit/README.md',
  'packages/testkit/README.md',
  'adapters/sandbox/README.md',
  'adapters/http/README.md',
])
  it(`${readme}: the first example runs as pasted in a fresh folder and prints what it shows`, async () => {
    const page = readFileSync(join(repoRoot, readme), 'utf8');
    const { dir, env } = freshProject(installed(blockAfter(page, 'readme-install')));
    const file = savedAs(page, 'readme-example');
    writeFileSync(join(dir, file), blockAfter(page, 'readme-example'));
    if (page.includes('<!-- readme-example-config -->'))
      writeFileSync(join(dir, savedAs(page, 'readme-example-config')), blockAfter(page, 'readme-example-config'));
    // The variables a config names, as placeholders: the adapters are built, nothing is sent.
    const vars = [...page.matchAll(/\b\w+Env: (\w+)/g)].map((m) => `${m[1]}=placeholder`);
    const r = await sh(`${vars.join(' ')} node ${file}`, dir, env, 15_000);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe(blockAfter(page, 'readme-example-output'));
  }, 30_000);

// An adapter README's sandbox examples, saved and run as the README says: each must end on its own (a
// server it starts is closed) with exit 0 — a newcomer's first thing to try, with no account.
for (const readme of [
  'adapters/slack/README.md',
  'adapters/github/README.md',
  'adapters/hubspot/README.md',
  'adapters/msgraph/README.md',
  'adapters/stripe/README.md',
  'packages/testkit/README.md',
])
  it(`${readme}: the sandbox examples run as pasted in a fresh folder and return`, async () => {
    const page = readFileSync(join(repoRoot, readme), 'utf8');
    const extra = page.includes('<!-- sandbox-install -->') ? blockAfter(page, 'sandbox-install') : '';
    const { dir, env } = freshProject(installed(blockAfter(page, 'readme-install') + extra));
    const examples = [...page.matchAll(/<!-- (sandbox-example[\w-]*?)(-output)? -->/g)]
      .filter((m) => !m[2])
      .map((m) => m[1]!);
    expect(examples.length).toBeGreaterThan(0);
    for (const name of examples) {
      const file = savedAs(page, name);
      writeFileSync(join(dir, file), blockAfter(page, name));
      const r = await sh(`node ${file}`, dir, env, 15_000);
      expect(r.code, `${name}: ${r.stderr}`).toBe(0);
      if (page.includes(`<!-- ${name}-output -->`)) expect(r.stdout).toBe(blockAfter(page, `${name}-output`));
    }
  }, 60_000);

it('packages/testkit/README.md: its drill examples say why a run failed and exit non-zero (here an adapter module exporting another name)', async () => {
  const page = readFileSync(join(repoRoot, 'packages/testkit/README.md'), 'utf8');
  const { dir, env } = freshProject(
    installed(blockAfter(page, 'readme-install') + blockAfter(page, 'sandbox-install')),
  );
  const adapter = blockAfter(page, 'sandbox-example-adapter').replace(
    'export const createAdapter',
    'export const create',
  );
  writeFileSync(join(dir, savedAs(page, 'sandbox-example-adapter')), adapter);
  const file = savedAs(page, 'sandbox-example-crash');
  writeFileSync(join(dir, file), blockAfter(page, 'sandbox-example-crash'));
  const r = await sh(`node ${file}`, dir, env, 15_000);
  expect(r.code).not.toBe(0);
  expect(r.stderr).toContain('does not export createAdapter');
}, 30_000);

// Each adapter's sandbox as its README's first example needs it (the channel and repository it names), and the
// credential the page's variable is set to (the sandbox checks it where it takes one).
const FIRST_EXAMPLE_SANDBOXES: Record<string, { start: string; token: string; options: object; seed?: string }> = {
  slack: {
    start: 'startSlackSandbox',
    token: 'xoxb-readme',
    options: { token: 'xoxb-readme', channels: ['C0123456789'] },
  },
  github: {
    start: 'startGitHubSandbox',
    token: 'ghp_readme',
    options: { token: 'ghp_readme', seed: [{ owner: 'acme', repo: 'widgets', title: 'Existing issue' }] },
  },
  resend: { start: 'startResendSandbox', token: 're_readme', options: {} },
  // The contact the README's `contacts.update` names (the sandbox numbers its records from 1001).
  hubspot: {
    start: 'startHubSpotSandbox',
    token: 'pat-readme',
    options: { accessToken: 'pat-readme' },
    seed: 'contacts',
  },
  msgraph: { start: 'startMsGraphSandbox', token: 'graph-readme', options: { accessToken: 'graph-readme' } },
  stripe: { start: 'startStripeSandbox', token: 'sk_test_readme', options: {} },
};

/**
 * Runs `node <file>` in `dir` as pasted: each adapter factory the file imports gets the baseUrl of that adapter's
 * loopback sandbox (sandboxed-adapters.mjs, preloaded), and the variable the file reads its credential from
 * (`createXAdapter({ … process.env.NAME`) the credential that sandbox takes.
 */
async function runSandboxed(file: string, project: { dir: string; env: NodeJS.ProcessEnv }) {
  const code = readFileSync(join(project.dir, file), 'utf8');
  const env: NodeJS.ProcessEnv = { ...project.env };
  const sandboxed: Record<string, { factory: string; baseUrl: string }> = {};
  const sandboxes: { close(): Promise<void> }[] = [];
  try {
    for (const [, factory, pkg] of code.matchAll(
      /import \{[^}]*\b(create\w+Adapter)\b[^}]*\} from '(@retrysafe\/[\w-]+)'/g,
    )) {
      const adapter = pkg!.slice('@retrysafe/'.length);
      if (!FIRST_EXAMPLE_SANDBOXES[adapter]) continue;
      const kit = (await import(join(workspaceDir(pkg!), 'dist/sandbox/index.js'))) as Record<
        string,
        (o: object) => Promise<{ url: string; close(): Promise<void>; seed(type: string, p: object): void }>
      >;
      const { start, token, options, seed } = FIRST_EXAMPLE_SANDBOXES[adapter]!;
      const sandbox = await kit[start]!(options);
      sandboxes.push(sandbox);
      if (seed) sandbox.seed(seed, {});
      sandboxed[pkg!] = { factory: factory!, baseUrl: sandbox.url };
      const variable = new RegExp(`${factory}\\(\\{[^\\n]*?process\\.env\\.(\\w+)`).exec(code)?.[1];
      expect(variable, `${file}: the variable ${factory} reads its credential from`).toBeDefined();
      env[variable!] = token;
    }
    const preload = join(repoRoot, 'packages/release/test/sandboxed-adapters.mjs');
    return await sh(`node --import ${preload} ${file}`, project.dir, {
      ...env,
      RS_SANDBOXED: JSON.stringify(sandboxed),
    });
  } finally {
    await Promise.all(sandboxes.map((s) => s.close()));
  }
}

/** The operations in the SQLite ledger of `dir` (./retrysafe.db, or the `--db …`/`--config …` target given), by state. */
async function ledgerStates(project: { dir: string; env: NodeJS.ProcessEnv }, target = '') {
  const ls = await sh(
    `node ${join(repoRoot, 'packages/cli/dist/bin.js')} ledger ls --json ${target}`,
    project.dir,
    project.env,
  );
  expect(ls.code, ls.stderr).toBe(0);
  return (JSON.parse(ls.stdout) as { operation: string; state: string }[]).map(
    (row) => `${row.operation} ${row.state}`,
  );
}

it('README.md: the real-provider examples, saved as the `.mjs` the page names, run against the sandboxes', async () => {
  // They are written for live accounts: run as pasted, each adapter against its loopback sandbox.
  const page = readFileSync(join(repoRoot, 'README.md'), 'utf8');
  const more = blockAfter(page, 'real-provider-more');
  const imported = [...more.matchAll(/from '(@retrysafe\/[\w-]+)/g)].map((m) => m[1]!);
  const project = freshProject([
    ...new Set([...installed(blockAfter(page, 'first-example-install')), '@retrysafe/stripe', ...imported]),
  ]);
  // `charge.mjs`, then "more of charge.mjs": the second block after the first, in one run (one process to start).
  const file = savedAs(page, 'real-provider');
  writeFileSync(join(project.dir, file), blockAfter(page, 'real-provider') + more);
  const r = await runSandboxed(file, project);
  expect(r.code, r.stderr).toBe(0);
  expect(r.stdout).toMatch(/^pi_\w+ \n$/);
  expect((await ledgerStates(project)).sort()).toEqual(
    [
      'hubspot.contacts.update',
      'hubspot.tickets.create',
      'msgraph.mail.send',
      'acme.orders.create',
      'sandbox.records.create',
      'stripe.paymentIntents.create',
    ]
      .map((o) => `${o} succeeded`)
      .sort(),
  );
}, 60_000);

/** A database of its own for a page whose example reads `DATABASE_URL` (the local PostgreSQL of .ci/test-env.sh). */
async function ownDatabase(page: string, env: NodeJS.ProcessEnv): Promise<NodeJS.ProcessEnv> {
  if (!page.includes('`DATABASE_URL`')) return env;
  const url = new URL(process.env.DATABASE_URL!);
  url.pathname = `/walkthrough_${Date.now()}`;
  const psql = '"$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)/psql"';
  const made = await sh(
    `${psql} "$DATABASE_URL" -qc 'CREATE DATABASE ${url.pathname.slice(1)}'`,
    tmpdir(),
    process.env,
  );
  expect(made.code, made.stderr).toBe(0);
  return { ...env, DATABASE_URL: url.href };
}

/**
 * A DynamoDB of its own for a page whose example reads `AWS_REGION`: dynalite on loopback, with the variables the
 * page says to set pointing at it; returns the `--config` the CLI lists its table with.
 */
async function ownDynamo(page: string, project: { dir: string; env: NodeJS.ProcessEnv }): Promise<string> {
  if (!page.includes('`AWS_REGION`')) return '';
  const dynalite = createRequire(join(workspaceDir('@retrysafe/ledger-dynamodb'), 'package.json'))('dynalite');
  const server = dynalite({ createTableMs: 0 });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(() => server.close());
  Object.assign(project.env, {
    AWS_ENDPOINT_URL_DYNAMODB: `http://127.0.0.1:${server.address().port}`,
    AWS_REGION: 'local',
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
  });
  const table = /table: '([\w-]+)'/.exec(page)![1];
  // The CLI's config names an adapter too; the listing never calls it.
  const config = { ledger: { dynamodb: { table } }, adapters: { sandbox: { baseUrl: 'http://127.0.0.1:9/' } } };
  writeFileSync(join(project.dir, 'retrysafe.yaml'), JSON.stringify(config));
  return '--config retrysafe.yaml';
}

// The adapters' READMEs, and the READMEs whose first example calls an adapter (DBOS steps, the ledgers).
const FIRST_EXAMPLES = [
  ...Object.keys(FIRST_EXAMPLE_SANDBOXES).map((a) => `adapters/${a}/README.md`),
  'packages/dbos/README.md',
  'packages/ledger-dynamodb/README.md',
  'packages/ledger-postgres/README.md',
  'packages/ai-sdk/README.md',
];
/** The tool call a scripted model makes in a first example that asks a model (the AI SDK's tools). */
const SCRIPTED_TOOL_CALLS: Record<string, object> = {
  'packages/ai-sdk/README.md': {
    tool: 'stripe_paymentIntents_create',
    input: { customer: 'cus_123', amount: 1500, currency: 'eur', orderRef: 'A-17' },
  },
};
it.each(FIRST_EXAMPLES)(
  '%s: the first example, saved and run as the page says, does its operation (against the sandbox) and ends',
  async (readme) => {
    // It is written for a live account: run as pasted against the adapter's loopback sandbox.
    const page = readFileSync(join(repoRoot, readme), 'utf8');
    const example = blockAfter(page, 'readme-first');
    const file = savedAs(page, 'readme-first');
    expect(file).toMatch(/\.m?ts$/);
    expect(page).toContain(`\`node ${file}\``);
    // The engines allow Node 22.13, which runs a TypeScript file only with this flag.
    expect(page, 'the flag Node 22.13 to 22.17 need').toContain('--experimental-strip-types');
    const variable = new RegExp(`\`node ${file.replace('.', '\\.')}\` with \`(\\w+)\` set`).exec(page)?.[1];
    expect(variable, 'the page names the variable to set').toBeDefined();
    const project = freshProject(installed(blockAfter(page, 'readme-install')));
    project.env = await ownDatabase(page, project.env);
    const dynamo = await ownDynamo(page, project);
    if (SCRIPTED_TOOL_CALLS[readme]) project.env.RS_SCRIPTED_TOOL_CALL = JSON.stringify(SCRIPTED_TOOL_CALLS[readme]);
    writeFileSync(join(project.dir, file), example);
    expect(example).toMatch(new RegExp(`process\\.env\\.${variable}\\b`));
    const r = await runSandboxed(file, project);
    expect(r.code, r.stderr).toBe(0);
    // The ledger where the page says to look (`--db … --schema …`), or the DynamoDB table, else ./retrysafe.db.
    const target = /retrysafe ledger \w+ (--db "\$DATABASE_URL" --schema \w+)/.exec(page)?.[1] ?? dynamo;
    const states = await ledgerStates(project, target);
    expect(states.length).toBeGreaterThan(0);
    expect(states.filter((s) => !s.endsWith(' succeeded'))).toEqual([]);
  },
  60_000,
);

it("the adapters' and the PostgreSQL ledger's first examples type-check as saved, for a TypeScript user (node16 and bundler resolution, skipLibCheck off)", async () => {
  const readmes = [
    ...Object.keys(FIRST_EXAMPLE_SANDBOXES).map((a) => `adapters/${a}/README.md`),
    'packages/ledger-postgres/README.md',
  ];
  const pages = readmes.map((f) => readFileSync(join(repoRoot, f), 'utf8'));
  const packages = pages.flatMap((page) => installed(blockAfter(page, 'readme-install')));
  const { dir, env } = freshProject([...new Set(packages), 'typescript', '@types/node']);
  const files = pages.map((page) => {
    writeFileSync(join(dir, savedAs(page, 'readme-first')), blockAfter(page, 'readme-first'));
    return savedAs(page, 'readme-first');
  });
  // Both resolutions at once: a user's project has one of them. One checker each: each extra checker thread
  // checks the vendors' large declarations again.
  const check = (module: string, resolution: string) =>
    sh(
      `node_modules/.bin/tsc --noEmit --strict --target es2022 --module ${module} --moduleResolution ${resolution} --types node --checkers 1 ${files.join(' ')}`,
      dir,
      env,
      90_000,
    );
  const [node16, bundler] = await Promise.all([check('node16', 'node16'), check('preserve', 'bundler')]);
  expect(`${node16.stdout}${node16.stderr}`, 'node16').toBe('');
  expect(`${bundler.stdout}${bundler.stderr}`, 'bundler').toBe('');
}, 120_000);

it('packages/mcp/README.md: the stdio server starts as pasted and lists the configured operation as its tool; the --http one answers', async () => {
  const page = readFileSync(join(repoRoot, 'packages/mcp/README.md'), 'utf8');
  const install = blockAfter(page, 'mcp-install');
  const { dir, env } = freshProject(installed(install));
  writeFileSync(join(dir, savedAs(page, 'mcp-config')), blockAfter(page, 'mcp-config'));
  const [stdio] = setupOf(install);
  const server = spawn('bash', ['-c', stdio!], { cwd: dir, env, detached: true });
  groups.push(server.pid!);
  let stdout = '';
  server.stdout.on('data', (d) => (stdout += String(d)));
  const exited = new Promise((resolve) => server.on('exit', resolve));
  // A host's first three messages, then its stdin closes: the server answers them and ends.
  const host = [
    {
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'h', version: '1' } },
    },
    { method: 'notifications/initialized' },
    { method: 'tools/list' },
  ].map((m, i) =>
    JSON.stringify({ jsonrpc: '2.0', ...(m.method.startsWith('notifications/') ? {} : { id: i }), ...m }),
  );
  server.stdin.end(`${host.join('\n')}\n`);
  await expect(Promise.race([exited, sleep(15_000).then(() => 'still running')])).resolves.not.toBe('still running');
  expect(stdout).toContain('"name":"stripe_paymentIntents_create"');

  // The --http line: it prints where it listens and the bearer token, and answers a host that sends it.
  const [, http] = setupOf(install);
  const served = spawn('bash', ['-c', http!], { cwd: dir, env, detached: true });
  groups.push(served.pid!);
  let stderr = '';
  served.stderr.on('data', (d) => (stderr += String(d)));
  await expect.poll(() => stderr).toMatch(/bearer token .*: \S+\n/);
  const url = /on (http:\/\/127\.0\.0\.1:\d+\/mcp)\n/.exec(stderr)?.[1];
  const token = /bearer token .*: (\S+)\n/.exec(stderr)![1];
  const answer = await fetch(url!, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: host[0],
  });
  expect(answer.status, stderr).toBe(200);
  killGroup(served.pid!);
}, 60_000);

it('packages/cli/README.md: installed as it says (`npm i -g`), `retrysafe cards` reads every adapter from the packed files', async () => {
  // The CLI imports each adapter's ./sandbox by a name it computes, which no check of its imports reads: what it
  // needs must be in what its install brings.
  const page = readFileSync(join(repoRoot, 'packages/cli/README.md'), 'utf8');
  const install = /```sh\n(npm i -g [^\n]*)\n```/.exec(page)?.[1];
  expect(install, 'the first block installs the CLI globally').toBeDefined();
  const { dir, env } = freshProject(installed(install!));
  // A global install puts its bins on PATH.
  const r = await sh('retrysafe cards --format json', dir, {
    ...env,
    PATH: `${join(dir, 'node_modules/.bin')}:${env.PATH}`,
  });
  expect(r.code, r.stderr).toBe(0);
  const providers = (JSON.parse(r.stdout) as { provider: string }[]).map((c) => c.provider);
  expect(new Set(providers).size).toBeGreaterThan(6);
});

it('the pages run one intent with one set of params: examples pasted into one folder (one ./retrysafe.db) never conflict', () => {
  // A newcomer runs the README's charge.mjs, then an adapter's charge.mts beside it: the same customer and
  // orderRef with another amount would be the same business operation with other params (a ConflictError).
  const pages = [
    'README.md',
    ...readdirSync(join(repoRoot, 'docs')).map((f) => `docs/${f}`),
    ...[...workspace.values()].map((dir) => `${dir.slice(repoRoot.length + 1)}/README.md`),
  ].filter((page) => page.endsWith('.md') && existsSync(join(repoRoot, page)));
  const seen = new Map<string, { page: string; params: string }>();
  for (const page of pages)
    for (const [, operation, literal] of readFileSync(join(repoRoot, page), 'utf8').matchAll(
      /'([\w.]+)', \{\s*params: (\{[^{}]*\})/g,
    )) {
      const fields = literal!
        .slice(1, -1)
        .split(',')
        .map((f) => f.trim())
        .sort();
      const intent = fields.filter((f) => /^(customer|orderRef):/.test(f));
      if (intent.length < 2) continue;
      const params = fields.join(', ');
      const first = seen.get(`${operation} ${intent}`) ?? { page, params };
      seen.set(`${operation} ${intent}`, first);
      expect(params, `${operation} in ${page}, and in ${first.page}`).toBe(first.params);
    }
  expect(seen.size).toBeGreaterThan(1);
});

// The blocks a README shows without a file to save them in (a client you bring, telemetry, a config module): what a
// user pastes into the file of the first example, so run as pasted in a `.mts` beside the packages the page installs.
// A `nocheck` block is a sketch in someone else's framework; a `declare` stands for a value the page does not build.
const PASTED_SNIPPETS = [...workspace.values()]
  .map((dir) => `${dir.slice(repoRoot.length + 1)}/README.md`)
  .filter((readme) => existsSync(join(repoRoot, readme)))
  .flatMap((readme) => {
    const page = readFileSync(join(repoRoot, readme), 'utf8');
    return [...page.matchAll(/(<!-- [\w-]+ -->\s*)?^ *```(ts|js)\b(.*)\n([\s\S]*?)^ *```/gm)]
      .filter(([, marker, , flags, code]) => !marker && !flags!.includes('nocheck') && !/^declare /m.test(code!))
      .map(([, , , , code], i) => [`${readme} #${i + 1}`, readme, code!.replace(/^ {2}/gm, '')] as const);
  });
it.each(PASTED_SNIPPETS)('%s: a block shown without a file, pasted into a .mts, runs', async (_name, readme, code) => {
  const page = readFileSync(join(repoRoot, readme), 'utf8');
  const installs = [...page.matchAll(/```sh\n([\s\S]*?)```/g)].flatMap((m) => installed(m[1]!));
  const { dir, env } = freshProject([...new Set(installs)]);
  writeFileSync(join(dir, 'snippet.mts'), code);
  const vars = [...code.matchAll(/process\.env\.(\w+)/g)].map((m) => `${m[1]}=placeholder`);
  const r = await sh(`${vars.join(' ')} node --experimental-strip-types snippet.mts`, dir, env, 15_000);
  expect(r.code, r.stderr).toBe(0);
});
