import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createSqliteLedger } from '@retrysafe/ledger-sqlite';
import { beforeAll, describe, expect, it } from 'vitest';
import { cli, ledgerWithOneClaim, tempDir } from './helpers.js';

const KEY = 'k1:0123456789abcdef0123';
const fixture = (name: string) => new URL(`./fixtures/${name}`, import.meta.url).href;

/** A config in `dir` naming the sandbox adapter and the SQLite ledger `ledger.db` beside it, which holds one claimed operation `id`. */
async function configWithLedger(dir: string, id: string, name = 'retrysafe.yaml'): Promise<string> {
  await ledgerWithOneClaim(join(dir, 'ledger.db'), id);
  const file = join(dir, name);
  writeFileSync(file, 'ledger: ./ledger.db\nadapters:\n  sandbox: { baseUrl: http://127.0.0.1:9 }\n');
  return file;
}

describe('the ledger commands find their config as retrysafe-mcp does: --config, else RETRYSAFE_CONFIG', () => {
  it('RETRYSAFE_CONFIG names the ledger when no --config is given; --config wins over it', async () => {
    const served = await configWithLedger(tempDir('env-config'), 'served-op');
    const other = await configWithLedger(tempDir('flag-config'), 'other-op');
    const elsewhere = tempDir('env-cwd');
    const env = { RETRYSAFE_CONFIG: served };
    const byEnv = await cli(['ledger', 'ls'], { cwd: elsewhere, env });
    expect([byEnv.code, byEnv.stderr]).toEqual([0, '']);
    expect(byEnv.stdout).toContain('served-op');
    const byFlag = await cli(['ledger', 'ls', '--config', other], { cwd: elsewhere, env });
    expect(byFlag.stdout).toContain('other-op');
    expect(byFlag.stdout).not.toContain('served-op');
    expect((await cli(['ledger', 'ls', '--help'])).stdout).toContain('RETRYSAFE_CONFIG');
  });

  it('resolve-all --resume --dry-run refuses, as the real run does, without a config; RETRYSAFE_CONFIG is one', async () => {
    const config = await configWithLedger(tempDir('dry-resume'), 'op-1');
    const db = join(config, '..', 'ledger.db');
    for (const dry of [[], ['--dry-run']]) {
      const r = await cli(['ledger', 'resolve-all', '--resume', '--db', db, ...dry]);
      expect(r.stderr, dry.join(' ')).toMatch(/--resume re-sends through the adapters: pass --config/);
      expect(r.code, dry.join(' ')).toBe(2);
    }
    const r = await cli(['ledger', 'resolve-all', '--resume', '--dry-run'], { env: { RETRYSAFE_CONFIG: config } });
    expect([r.code, r.stdout]).toEqual([0, 'No handed-off operation matches: nothing to resolve.\n']);
    // Nor does it promise a resume through an adapter the real run could not build (its key variable unset).
    const module = new URL('./fixtures/month-keys-adapter.mjs', import.meta.url).pathname;
    const adapters = { month: { module, secretsFromEnv: { apiKey: 'UNSET_MONTH_API_KEY' } } };
    writeFileSync(config, JSON.stringify({ ledger: './ledger.db', adapters }));
    const unset = await cli(['ledger', 'resolve-all', '--resume', '--dry-run', '--config', config]);
    expect(unset.stderr).toMatch(/environment variable UNSET_MONTH_API_KEY is not set/);
    expect(unset.code).toBe(2);
  });
});

describe('--db names the ledger: RETRYSAFE_CONFIG is then not read (only --config is)', () => {
  const dir = tempDir('db-over-env');
  const db = join(dir, 'named.db');
  const env = { RETRYSAFE_CONFIG: join(dir, 'broken.yaml') };
  writeFileSync(env.RETRYSAFE_CONFIG, 'ledger: [not, a, ledger\n');
  beforeAll(() => ledgerWithOneClaim(db, 'named-op'));
  it.each([
    ['ls'],
    ['show', 'named-op'],
    ['handoffs'],
    ['export'],
    ['verify', '--all'],
    ['prune', '--older-than', '400d', '--dry-run'],
    ['resolve-all', '--abandon', '--dry-run'],
    ['resolve', 'named-op', '--abandon'],
  ])("ledger %s --db: the variable's broken config is not read", async (...args) => {
    const r = await cli(['ledger', ...args, '--db', db], { env });
    expect(r.stderr).not.toMatch(/broken\.yaml/);
    expect(r.stderr).not.toMatch(/--help/);
    expect(r.code).toBeLessThan(2);
  });

  it('a send through adapters asks for --config, saying the variable is not read with --db; --help says the rule', async () => {
    for (const send of [['resolve-all'], ['resolve', 'named-op']]) {
      const r = await cli(['ledger', ...send, '--resume', '--db', db], { env });
      expect(r.stderr).toMatch(/pass --config .*; RETRYSAFE_CONFIG is not read when --db names the ledger/);
      expect(r.code).toBe(2);
    }
    const help = (await cli(['ledger', 'show', '--help'])).stdout.replace(/\s+/g, ' ');
    expect(help).toMatch(/not taken from the variable when --db names the ledger \(env: RETRYSAFE_CONFIG\)/);
  });
});

describe('files a config names are imported by file URL, whatever their folder is called', () => {
  it('a module adapter and a JavaScript config in a folder whose name holds # and %20', async () => {
    const dir = join(tempDir('url-chars'), 'a#b%20c');
    mkdirSync(dir);
    writeFileSync(join(dir, 'adapter.mjs'), `export { default } from '${fixture('month-keys-adapter.mjs')}';\n`);
    createSqliteLedger({ path: join(dir, 'retrysafe.db') }).close();
    const adapters = { month: { module: './adapter.mjs', secretsFromEnv: { apiKey: 'MONTH_API_KEY' } } };
    // One run for both imports: the config module's own, then the adapter module it names.
    const config = join(dir, 'retrysafe.config.mjs');
    writeFileSync(config, `export default ${JSON.stringify({ adapters })};\n`);
    const r = await cli(['ledger', 'prune', '--older-than', '40d', '--dry-run', '--config', config]);
    expect(r.stderr).toBe('');
    expect(r.stdout).toMatch(/key retention floor: .*month\.records\.create/);
    expect(r.code).toBe(0);
  });
});

describe('a key variable pasted with a line ending is refused, named, never shown', () => {
  it.each([
    ['RETRYSAFE_RECEIPT_KEYS', ['ledger', 'verify', '--all'], `${KEY}\n`],
    ['RETRYSAFE_PARAMS_KEYS', ['ledger', 'resolve-all', '--abandon', '--dry-run'], `${KEY}\r\n`],
    // each resolve of the real run reads it: the dry run refuses it too
    ['RETRYSAFE_RECEIPT_KEYS', ['ledger', 'resolve-all', '--abandon', '--dry-run'], ` ${KEY}`],
  ])('%s (%j)', async (name, args, value) => {
    const db = join(tempDir('env-key'), 'ledger.db');
    createSqliteLedger({ path: db }).close();
    const r = await cli([...args, '--db', db], { env: { [name]: value } });
    expect(r.stderr).toMatch(
      new RegExp(`^retrysafe: environment variable ${name} has whitespace or control characters`),
    );
    expect(r.stderr).not.toContain(KEY.slice(3));
    expect(r.stderr).not.toContain('--help');
    expect(r.code).toBe(2);
  });
});
