import { spawnSync } from 'node:child_process';
import { copyFileSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { bin, httpExampleWithSchema, ordersServer, tempDir, writeFence } from './child-helpers.js';

const EXITS_AT_ONCE = [process.execPath, '-e', 'process.exit(7)'];

const runWith = (env: Record<string, string>, ...args: string[]) =>
  spawnSync(process.execPath, [bin, ...args], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '', ACME_AUTH: 'Bearer test', ...env },
    timeout: 20_000,
  });
const run = (...args: string[]) => runWith({}, ...args);

describe('retrysafe-mcp command line', () => {
  it('--help exits 0 and lists every command with its options', () => {
    const r = run('--help');
    expect(r.status).toBe(0);
    const listed = [
      'retrysafe-mcp --config',
      'retrysafe-mcp wrap',
      'retrysafe-mcp probe',
      '--allow-origin',
      '--count-path',
      '--url',
    ];
    expect(listed.filter((s) => !r.stdout.includes(s))).toEqual([]);
  });

  it('--version and -V print the package version and exit 0, as the retrysafe CLI does; the help names them', () => {
    const { version } = JSON.parse(readFileSync(join(dirname(bin), '../package.json'), 'utf8')) as { version: string };
    for (const flag of ['--version', '-V']) {
      const r = run(flag);
      expect([r.status, r.stdout, r.stderr], flag).toEqual([0, `${version}\n`, '']);
    }
    expect(run('--help').stdout).toContain('retrysafe-mcp --version');
  });

  it('under the engines floor (Node 22.12) it is refused at start as the retrysafe CLI is', () => {
    const as2212 = `Object.defineProperty(process.versions, 'node', { value: '22.12.0' }); await import(${JSON.stringify(bin)});`;
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', as2212, 'bin', '--config', 'x.yaml'], {
      encoding: 'utf8',
    });
    expect([r.status, r.stdout, r.stderr]).toEqual([
      2,
      '',
      'retrysafe-mcp needs Node 22.13 or later (its embedded ledger is node:sqlite, without a flag from 22.13); this is Node 22.12.0\n',
    ]);
  });

  it("wrap --help and probe --help (or -h, anywhere before --) print the help and exit 0; after -- it is the server's", () => {
    for (const argv of [
      ['wrap', '--help'],
      ['probe', '-h'],
      ['wrap', '--config', 'f.yaml', '--help'],
      ['--http', '--help'],
    ]) {
      const r = run(...argv);
      expect(r.status, argv.join(' ')).toBe(0);
      expect(r.stdout).toContain('retrysafe-mcp wrap --config fence.yaml');
    }
    const upstreams = run('wrap', '--config', 'missing.yaml', '--', process.execPath, ordersServer, '--help');
    expect(upstreams.status).toBe(2);
    expect(upstreams.stdout).toBe('');
  });

  it('an unknown command is a usage error naming it and the commands, whatever follows (--help included)', () => {
    for (const argv of [['serve'], ['serve', '--help'], ['wrp', '--config', 'f.yaml']]) {
      const r = run(...argv);
      expect(r.status, argv.join(' ')).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(new RegExp(`^retrysafe-mcp: unknown command "${argv[0]}" \\(commands: wrap, probe`));
    }
  });

  it('wrap and probe refuse an unknown option or a missing value the same way: one line, exit 2', () => {
    for (const cmd of ['wrap', 'probe']) {
      const unknown = run(cmd, '--bogus');
      expect(unknown.status).toBe(2);
      expect(unknown.stderr).toMatch(new RegExp(`^retrysafe-mcp ${cmd}: unknown option --bogus`));
      const missing = run(cmd, '--url');
      expect(missing.status).toBe(2);
      expect(missing.stderr).toContain('--url needs a value');
    }
    const typo = run('wrap', '--conifg', 'fence.yaml');
    expect(typo.status).toBe(2);
    expect(typo.stderr).toBe(
      'retrysafe-mcp wrap: unknown option --conifg (did you mean "--config"?) (see retrysafe-mcp --help)\n',
    );
    expect(run('wrp').stderr).toMatch(/\(did you mean "wrap"\?\)\n$/);
    const json = run('probe', '--tool', 't', '--args', '[1]');
    expect(json.status).toBe(2);
    expect(json.stderr).toContain('--args must be a JSON object');
  });

  it('without a config: a usage error, exit 2', () => {
    const r = run();
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/--config/);
    // wrap and probe name what is missing once, after their own prefix (not "wrap: wrap needs …")
    const wrap = run('wrap');
    expect([wrap.status, wrap.stderr.trim()]).toEqual([
      2,
      'retrysafe-mcp wrap: name the fence file: --config <fence.yaml>',
    ]);
    const probe = run('probe');
    expect(probe.status).toBe(2);
    expect(probe.stderr).toMatch(/^retrysafe-mcp probe: name the tools: --tool/);
  });

  it('a config the runner refuses at start, or a fence file naming a tool the upstream lacks: exit 2, as any bad config', () => {
    // The docs' HTTP API example with a params schema whose $ref names nothing: a RunnerConfigurationError at start.
    const example = fileURLToPath(new URL('../../config/examples/http-api/', import.meta.url));
    const file = httpExampleWithSchema('retrysafe-bin-config-', {
      $ref: '#/$defs/Missing',
      properties: { sku: {}, quantity: {} },
    });
    const dir = dirname(file);
    const refused = run('--config', file, '--http');
    expect(refused.stderr).toMatch(
      /^retrysafe-mcp: \S+retrysafe\.yaml: paramsSchema: the params schema of acme\.orders\.create/,
    );
    expect(refused.status).toBe(2);
    // A malformed params or receipt key is bad config too: named by its variable, its secret never printed.
    writeFileSync(join(dir, 'retrysafe.yaml'), readFileSync(join(example, 'retrysafe.yaml')));
    for (const name of ['RETRYSAFE_PARAMS_KEYS', 'RETRYSAFE_RECEIPT_KEYS']) {
      const badKey = runWith({ [name]: 'k1:tooShortSecret' }, '--config', join(dir, 'retrysafe.yaml'), '--http');
      expect(badKey.stderr, name).toMatch(new RegExp(`^retrysafe-mcp: ${name}: `));
      expect(badKey.stderr).not.toContain('tooShortSecret');
      expect(badKey.status, name).toBe(2);
    }
    const fence = writeFence(dir, { name: 'orders', tools: { create_ordr: { kind: 'create', intent: ['ref'] } } });
    const unknown = run('wrap', '--config', fence, '--', process.execPath, ordersServer);
    expect(unknown.stderr).toMatch(/create_ordr/);
    expect(unknown.status).toBe(2);
  });

  it('finds its config as the retrysafe CLI does, a JavaScript one too; a credential variable pasted with a line ending is bad config, named, never shown', () => {
    const dir = tempDir('retrysafe-bin-env-');
    // stripe's key variable is left unset: its refusal shows that the JavaScript config was read
    const mjs = join(dir, 'retrysafe.config.mjs');
    writeFileSync(mjs, "export default { adapters: { stripe: { apiKeyEnv: 'UNSET_STRIPE_KEY' } } };\n");
    const byEnv = runWith({ RETRYSAFE_CONFIG: mjs });
    expect(byEnv.stderr).toMatch(/environment variable UNSET_STRIPE_KEY is not set/);
    expect(byEnv.status).toBe(2);
    const example = fileURLToPath(new URL('../../config/examples/http-api/', import.meta.url));
    for (const f of readdirSync(example)) copyFileSync(join(example, f), join(dir, f));
    const secret = 'a-secret-of-the-test-0123456789';
    for (const [name, value, http] of [
      ['RETRYSAFE_MCP_TOKEN', `${secret}\n`, ['--http']],
      ['RETRYSAFE_MCP_TOKEN', 'short', ['--http']],
      ['RETRYSAFE_PARAMS_KEYS', `p1:${secret}\r\n`, []],
      ['RETRYSAFE_RECEIPT_KEYS', ` r1:${secret}`, []],
    ] as const) {
      // stdio: a server that starts ends when its (empty) stdin does
      const r = spawnSync(process.execPath, [bin, '--config', join(dir, 'retrysafe.yaml'), ...http], {
        encoding: 'utf8',
        input: '',
        env: { PATH: process.env.PATH ?? '', ACME_AUTH: 'Bearer test', [name]: value },
        timeout: 20_000,
      });
      expect(r.stderr, name).toMatch(new RegExp(`^retrysafe-mcp: .*${name}.*(whitespace or control|at least 16)`));
      expect(r.stderr, name).not.toContain(secret);
      expect(r.status, name).toBe(2);
    }
  });

  it('--port out of range, or the HTTP options without --http: a usage error naming the option, exit 2', () => {
    for (const [cmd, prefix] of [
      [[], 'retrysafe-mcp'],
      [['wrap'], 'retrysafe-mcp wrap'],
    ] as const) {
      const big = run(...cmd, '--config', 'none.yaml', '--http', '--port', '99999');
      expect([big.status, big.stderr.trim()]).toEqual([2, `${prefix}: --port must be a whole number from 0 to 65535`]);
      expect(run(...cmd, '--config', 'none.yaml', '--http', '--port', '1.5').stderr).toMatch(/--port must be a whole/);
      for (const extra of [
        ['--port', '8080'],
        ['--allow-host', 'example.test'],
      ]) {
        const stdio = run(...cmd, '--config', 'none.yaml', ...extra);
        expect([stdio.status, stdio.stderr.trim()]).toEqual([
          2,
          `${prefix}: ${extra[0]} is for --http: add --http to serve HTTP, or leave it out to serve on stdio`,
        ]);
      }
    }
  });

  it('a probe receipt that cannot be written is refused before the server is started (its calls have effects)', () => {
    const receipt = join(tempDir('retrysafe-bin-receipt-'), 'no-such-dir', 'probe.json');
    const probe = ['probe', '--tool', 't', '--count-tool', 'c', '--count-path', 'p', '--receipt', receipt, '--'];
    const r = run(...probe, ...EXITS_AT_ONCE);
    expect([r.status, r.stderr.trim()]).toEqual([
      2,
      `retrysafe-mcp probe: --receipt ${receipt}: cannot write it: no such file or directory (ENOENT)`,
    ]);
  });

  it('a fence file given to serve, or a config given to wrap: one line that says which command reads it; exit 2', () => {
    const dir = tempDir('retrysafe-bin-swapped-');
    const fence = writeFence(dir, { name: 'orders', tools: { create_order: { kind: 'create', intent: ['ref'] } } });
    const served = run('--config', fence);
    expect([served.status, served.stderr.trim()]).toEqual([
      2,
      `retrysafe-mcp: ${fence}: a fence file (it names tools, no adapters): fence a server with retrysafe-mcp wrap --config ${fence} -- <server command…>`,
    ]);
    const config = join(dir, 'retrysafe.json');
    writeFileSync(config, JSON.stringify({ ledger: 'l.db', adapters: { stripe: { apiKeyEnv: 'STRIPE_API_KEY' } } }));
    const wrapped = run('wrap', '--config', config, '--', process.execPath, ordersServer);
    expect([wrapped.status, wrapped.stderr.trim()]).toEqual([
      2,
      `retrysafe-mcp wrap: ${config}: a retrysafe config (it names adapters, no tools): serve its operations with retrysafe-mcp --config ${config}`,
    ]);
  });

  it('a fence file with a typo: one line that names the file, the key and the one meant; exit 2', () => {
    const fence = writeFence(tempDir('retrysafe-bin-typo-'), {
      name: 'orders',
      tools: { create_order: { kind: 'create', intent: ['ref'], keyy: { argument: 'k' } } },
    });
    const r = run('wrap', '--config', fence, '--', process.execPath, ordersServer);
    expect(r.stderr.trim()).toBe(
      `retrysafe-mcp wrap: ${fence}: tools.create_order.keyy: unknown key (did you mean "key"?) — known: kind, idempotentByNature, intent, optionalIntent, normalize, paramComparison, key, lookup, toolErrors, rejectWhen, resultRef, source`,
    );
    expect(r.status).toBe(2);
  });

  it('what is found wrong after the file is read (an unset variable, a tool the upstream lacks, a card) names the file', () => {
    const dir = tempDir('retrysafe-bin-later-');
    const config = join(dir, 'retrysafe.json');
    writeFileSync(config, JSON.stringify({ ledger: 'l.db', adapters: { stripe: { apiKeyEnv: 'STRIPE_API_KEY' } } }));
    expect(run('--config', config).stderr).toBe(
      `retrysafe-mcp: ${config}: adapters.stripe: environment variable STRIPE_API_KEY is not set\n`,
    );
    for (const tool of [
      { missing_tool: { kind: 'create', intent: ['ref'] } },
      { create_order: { kind: 'create', intent: ['ref'], optionalIntent: ['note'] } },
    ]) {
      const fence = writeFence(dir, { name: 'orders', tools: tool });
      const r = run('wrap', '--config', fence, '--', process.execPath, ordersServer);
      expect(r.stderr.startsWith(`retrysafe-mcp wrap: ${fence}: `), r.stderr).toBe(true);
      expect(r.stderr).not.toContain(`${fence}: ${fence}`);
      expect(r.status).toBe(2);
    }
  });

  it('a server that cannot be started exits 2, never 1 (which is probe\'s "duplicates"); one that exits says its code', () => {
    const probe = ['probe', '--tool', 't', '--count-tool', 'c', '--count-path', 'p', '--'];
    const fence = writeFence(tempDir('retrysafe-bin-upstream-'), {
      name: 'orders',
      tools: { create_order: { kind: 'create', intent: ['ref'] } },
    });
    for (const cmd of [probe, ['wrap', '--config', fence, '--']]) {
      const missing = run(...cmd, '/nonexistent/upstream-server');
      expect(missing.stderr).toContain('/nonexistent/upstream-server');
      expect(missing.status, cmd[0]).toBe(2);
      const exits = run(...cmd, ...EXITS_AT_ONCE);
      expect(exits.stderr).toMatch(/the upstream MCP server \(.+\) exited with code 7 at start-up/);
      if (cmd === probe) expect(exits.status).toBe(2);
    }
    // the probe ran, but the read tool's answer has no list where --count-path points: no count, no verdict
    const listed = ['probe', '--tool', 't', '--count-tool', 'list_orders', '--count-path', 'nowhere'];
    const unread = run(...listed, '--', process.execPath, ordersServer);
    expect(unread.stderr).toContain('gave no list at "nowhere"');
    expect(unread.status).toBe(2);
  });

  it('an unreachable --url says why; --url with a command after -- is refused, not one of them ignored', async () => {
    const closed = createServer(); // a port nothing listens on
    await new Promise<void>((ok) => closed.listen(0, '127.0.0.1', ok));
    const url = `http://127.0.0.1:${(closed.address() as AddressInfo).port}/mcp`;
    await new Promise((ok) => closed.close(ok));
    const probe = ['probe', '--tool', 't', '--count-tool', 'c', '--count-path', 'p'];
    const fence = writeFence(tempDir('retrysafe-bin-url-'), {
      name: 'orders',
      tools: { create_order: { kind: 'create', intent: ['ref'] } },
    });
    for (const cmd of [probe, ['wrap', '--config', fence]]) {
      const refused = run(...cmd, '--url', url);
      expect(refused.stderr).toMatch(/the upstream MCP server's URL cannot be reached: .*ECONNREFUSED/);
      const both = run(...cmd, '--url', url, '--', ...EXITS_AT_ONCE);
      expect(both.stderr).toContain('not both');
      expect(both.status, cmd[0]).toBe(2);
    }
  });
});
